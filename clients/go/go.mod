module github.com/svc-gateway/svc-gateway-go

go 1.19
