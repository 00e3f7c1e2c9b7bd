package svcgateway

// Version is this library's version (CHANGELOG.md); the User-Agent is svc-gateway-go/<Version>.
const Version = "0.1.0"
