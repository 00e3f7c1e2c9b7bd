package svcgateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// seen is one request as the scripted server saw it.
type seen struct {
	Method string
	URL    string
	Header http.Header
	Body   string
}

// answer is what the scripted server does: a status, headers and a JSON body; or reset (drop the
// connection) or hang (never answer).
type answer struct {
	status int
	header map[string]string
	json   any
	reset  bool
	hang   bool
}

type scripted struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seen
}

// serve starts a real loopback HTTP server answering each request as script says (by index), for
// the answers a healthy gateway does not give on demand: 503s, 429s, dropped connections.
func serve(t *testing.T, script func(r seen, index int) answer) *scripted {
	s := &scripted{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		request := seen{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(body)}
		s.mu.Lock()
		s.seen = append(s.seen, request)
		index := len(s.seen) - 1
		s.mu.Unlock()
		a := script(request, index)
		switch {
		case a.reset:
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case a.hang:
			<-r.Context().Done()
		default:
			for name, value := range a.header {
				w.Header().Set(name, value)
			}
			if a.json != nil {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
			}
			w.WriteHeader(a.status)
			if a.json != nil {
				_ = json.NewEncoder(w).Encode(a.json)
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *scripted) requests() []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seen(nil), s.seen...)
}

func (s *scripted) baseURL() string { return s.URL + "/api/v1" }

// client waits 1 ms between retries, so retry tests take no time unless a Retry-After says so.
func client(baseURL string, options ...ClientOption) *Client {
	return NewClient("svc_test_key", append([]ClientOption{WithBaseURL(baseURL), WithRetryBackoff(time.Millisecond, time.Millisecond)}, options...)...)
}

var payment = map[string]any{"id": "ses_1", "status": "pending"}
var ctx = context.Background()

func TestAuthHeadersUserAgentAndDefaultBaseURL(t *testing.T) {
	if DefaultBaseURL != "http://127.0.0.1:8080/api/v1" {
		t.Fatalf("DefaultBaseURL = %q", DefaultBaseURL)
	}
	server := serve(t, func(seen, int) answer { return answer{status: 200, json: payment} })
	if _, err := client(server.baseURL()).Payments.Retrieve(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := client(server.baseURL(), WithAuthHeader(AuthXAPIKey)).Payments.Retrieve(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	got := server.requests()
	if got[0].URL != "/api/v1/payments/ses_1" || got[0].Header.Get("Authorization") != "Bearer svc_test_key" || got[0].Header.Get("X-API-Key") != "" {
		t.Errorf("bearer request: %+v", got[0])
	}
	if got[1].Header.Get("Authorization") != "" || got[1].Header.Get("X-API-Key") != "svc_test_key" {
		t.Errorf("x-api-key request: %+v", got[1])
	}
	if ua := got[0].Header.Get("User-Agent"); ua != "svc-gateway-go/"+Version {
		t.Errorf("User-Agent = %q", ua)
	}
	changelog, _ := os.ReadFile("CHANGELOG.md")
	if !strings.Contains(string(changelog), "## "+Version) {
		t.Errorf("CHANGELOG.md has no section for %s", Version)
	}
}

func TestPathEscapingQueryAndBody(t *testing.T) {
	server := serve(t, func(seen, int) answer {
		return answer{status: 200, json: map[string]any{"data": []any{}, "hasMore": false, "nextCursor": nil}}
	})
	c := client(server.baseURL())
	if _, err := c.PaymentLinks.List(ctx, &PaymentLinkListParams{Active: Bool(false), Limit: Int(5)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refunds.Complete(ctx, "rf/1 x", &RefundCompleteParams{TxHash: "0xabc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sessions.Create(ctx, &SessionCreateParams{Amount: String("25"), Currency: Ptr(CurrencyUSDC), Chain: Ptr(ChainBase), Metadata: map[string]string{"order": "42"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WebhookEndpoints.Update(ctx, "we_1", &WebhookEndpointUpdateParams{Description: Null[string]()}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sandbox.Pay(ctx, "ses_1", nil); err != nil {
		t.Fatal(err)
	}
	got := server.requests()
	want := []struct{ method, url, body string }{
		{"GET", "/api/v1/payment-links?active=false&limit=5", ""},
		{"POST", "/api/v1/refunds/rf%2F1%20x/complete", `{"txHash":"0xabc"}`},
		{"POST", "/api/v1/sessions", `{"amount":"25","currency":"USDC","chain":"base","metadata":{"order":"42"}}`},
		{"PATCH", "/api/v1/webhooks/we_1", `{"description":null}`},
		{"POST", "/api/v1/sandbox/sessions/ses_1/pay", `{}`},
	}
	for i, w := range want {
		if got[i].Method != w.method || got[i].URL != w.url || got[i].Body != w.body {
			t.Errorf("request %d = %s %s %s, want %s %s %s", i, got[i].Method, got[i].URL, got[i].Body, w.method, w.url, w.body)
		}
	}
	if got[1].Header.Get("Content-Type") != "application/json" {
		t.Errorf("Content-Type = %q", got[1].Header.Get("Content-Type"))
	}
}

// Every operation of the OpenAPI snapshot has a method (paged lists have two: List and ListAll).
func TestEveryOperationHasAMethod(t *testing.T) {
	raw, err := os.ReadFile("../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &document); err != nil {
		t.Fatal(err)
	}
	operations := 0
	for path, methods := range document.Paths {
		if strings.HasPrefix(path, "/api/v1/") {
			operations += len(methods)
		}
	}
	methods := 0
	resources := reflect.ValueOf(client("http://127.0.0.1:1/api/v1").Resources)
	for i := 0; i < resources.NumField(); i++ {
		service := resources.Field(i).Type()
		for m := 0; m < service.NumMethod(); m++ {
			if !strings.HasSuffix(service.Method(m).Name, "All") {
				methods++
			}
		}
	}
	if operations == 0 || methods != operations {
		t.Errorf("%d methods for %d operations", methods, operations)
	}
}

func TestIdempotencyKeyKeptAcrossRetriesAndNewPerCall(t *testing.T) {
	server := serve(t, func(_ seen, index int) answer {
		if index < 2 {
			return answer{status: 503, json: map[string]string{"error": "unavailable"}}
		}
		return answer{status: 201, json: payment}
	})
	c := client(server.baseURL())
	params := &PaymentCreateParams{Amount: String("25"), Currency: Ptr(CurrencyUSDC), Chain: Ptr(ChainBase)}
	created, err := c.Payments.Create(ctx, params)
	if err != nil || created.ID != "ses_1" {
		t.Fatal(created, err)
	}
	if _, err := c.Payments.Create(ctx, params); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Create(ctx, params, IdempotencyKey("order-42")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Retrieve(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	got := server.requests()
	keys := make([]string, len(got))
	for i, r := range got {
		keys[i] = r.Header.Get("Idempotency-Key")
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(keys[0]) {
		t.Errorf("key %q is not a v4 UUID", keys[0])
	}
	if keys[1] != keys[0] || keys[2] != keys[0] || keys[3] == keys[0] || keys[4] != "order-42" || keys[5] != "" {
		t.Errorf("keys = %q", keys)
	}
	for _, r := range got[:5] {
		if r.Body != `{"amount":"25","currency":"USDC","chain":"base"}` {
			t.Errorf("body = %s", r.Body)
		}
	}
}

func TestWhatIsRetried(t *testing.T) {
	answers := []answer{{reset: true}, {hang: true}, {status: 409, json: map[string]string{"error": InFlightMessage + "; retry shortly"}}, {status: 502, json: map[string]string{"error": "bad gateway"}}, {status: 200, json: payment}}
	server := serve(t, func(_ seen, index int) answer { return answers[index] })
	var retries []RetryEvent
	c := client(server.baseURL(), WithMaxRetries(4), WithTimeout(200*time.Millisecond), WithOnRetry(func(e RetryEvent) { retries = append(retries, e) }))
	if _, err := c.Refunds.Create(ctx, &RefundCreateParams{PaymentID: "ses_1"}); err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, r := range retries {
		kinds = append(kinds, reflect.TypeOf(r.Err).String())
	}
	if want := []string{"*svcgateway.APIConnectionError", "*svcgateway.APIConnectionError", "*svcgateway.ConflictError", "*svcgateway.ServerError"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("retried %v, want %v", kinds, want)
	}
	for i, r := range retries {
		if r.Attempt != i+1 || r.IdempotencyKey == "" || r.IdempotencyKey != retries[0].IdempotencyKey {
			t.Errorf("retry %d: %+v", i, r)
		}
	}

	refused := serve(t, func(_ seen, index int) answer {
		if index == 0 {
			return answer{status: 400, json: map[string]string{"error": "amount must be positive"}}
		}
		return answer{status: 409, json: map[string]string{"error": "the refund exceeds the confirmed amount"}}
	})
	_, err := client(refused.baseURL()).Refunds.Create(ctx, &RefundCreateParams{PaymentID: "ses_1"})
	var badRequest *BadRequestError
	if !errors.As(err, &badRequest) {
		t.Errorf("400: %v", err)
	}
	_, err = client(refused.baseURL()).Refunds.Create(ctx, &RefundCreateParams{PaymentID: "ses_1"})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Errorf("409: %v", err)
	}
	if n := len(refused.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (no retries)", n)
	}
}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	server := serve(t, func(seen, int) answer {
		return answer{status: 503, json: map[string]string{"error": "the service is temporarily unavailable"}}
	})
	_, err := client(server.baseURL(), WithMaxRetries(2)).Status.Retrieve(ctx)
	var serverError *ServerError
	if !errors.As(err, &serverError) || serverError.Status != 503 || serverError.Message != "the service is temporarily unavailable" {
		t.Errorf("error = %#v", err)
	}
	if n := len(server.requests()); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
	if _, err := client(server.baseURL()).Status.Retrieve(ctx, MaxRetries(0)); !errors.As(err, &serverError) {
		t.Errorf("error = %v", err)
	}
	if n := len(server.requests()); n != 4 {
		t.Errorf("%d attempts, want 4", n)
	}
	_, err = client("http://127.0.0.1:1/api/v1", WithMaxRetries(1)).Status.Retrieve(ctx)
	var connection *APIConnectionError
	var gateway *GatewayError
	if !errors.As(err, &connection) || !errors.As(err, &gateway) || gateway.Status != 0 || connection.Err == nil {
		t.Errorf("error = %#v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	server := serve(t, func(_ seen, index int) answer {
		if index == 0 {
			return answer{status: 429, header: map[string]string{"Retry-After": "1"}, json: map[string]string{"error": "rate limited"}}
		}
		return answer{status: 200, json: payment}
	})
	var delays []time.Duration
	started := time.Now()
	if _, err := client(server.baseURL(), WithOnRetry(func(e RetryEvent) { delays = append(delays, e.Delay) })).Payments.Retrieve(ctx, "ses_1"); err != nil {
		t.Fatal(err)
	}
	if time.Since(started) < 950*time.Millisecond || !reflect.DeepEqual(delays, []time.Duration{time.Second}) {
		t.Errorf("waited %v, delays %v", time.Since(started), delays)
	}

	slow := serve(t, func(seen, int) answer {
		return answer{status: 429, header: map[string]string{"Retry-After": "120"}, json: map[string]string{"error": "rate limited"}}
	})
	_, err := client(slow.baseURL()).Payments.Retrieve(ctx, "ses_1")
	var rateLimit *RateLimitError
	if !errors.As(err, &rateLimit) {
		t.Fatalf("error = %v", err)
	}
	if wait, ok := rateLimit.RetryAfter(); !ok || wait != 120*time.Second {
		t.Errorf("RetryAfter = %v %v", wait, ok)
	}
	if n := len(slow.requests()); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if wait, ok := ParseRetryAfter("Thu, 01 Jan 2026 00:00:30 GMT", now); !ok || wait != 30*time.Second {
		t.Errorf("HTTP date: %v %v", wait, ok)
	}
}

func TestErrorTypesByStatus(t *testing.T) {
	cases := []struct {
		status int
		kind   string
	}{{400, "*svcgateway.BadRequestError"}, {401, "*svcgateway.AuthenticationError"}, {403, "*svcgateway.PermissionDeniedError"}, {404, "*svcgateway.NotFoundError"}, {409, "*svcgateway.ConflictError"}, {422, "*svcgateway.UnprocessableEntityError"}, {429, "*svcgateway.RateLimitError"}, {500, "*svcgateway.ServerError"}, {418, "*svcgateway.GatewayError"}}
	for _, c := range cases {
		message := "refused with " + http.StatusText(c.status)
		server := serve(t, func(seen, int) answer {
			return answer{status: c.status, header: map[string]string{"X-Request-Id": "req_7", "Retry-After": "300"}, json: map[string]string{"error": message}}
		})
		_, err := client(server.baseURL(), WithMaxRetries(0)).Events.Retrieve(ctx, "evt_1")
		var gateway *GatewayError
		if reflect.TypeOf(err).String() != c.kind || !errors.As(err, &gateway) {
			t.Errorf("%d: %T, want %s", c.status, err, c.kind)
			continue
		}
		if gateway.Status != c.status || gateway.Message != message || gateway.RequestID != "req_7" || !strings.Contains(string(gateway.Body), message) {
			t.Errorf("%d: %+v", c.status, gateway)
		}
	}
	server := serve(t, func(seen, int) answer { return answer{status: 502} })
	_, err := client(server.baseURL(), WithMaxRetries(0)).Events.Retrieve(ctx, "evt_1")
	var serverError *ServerError
	if !errors.As(err, &serverError) || serverError.Message != "HTTP 502" || serverError.RequestID != "" {
		t.Errorf("error = %#v", err)
	}
}

func TestIterWalksEveryPage(t *testing.T) {
	pages := []any{
		map[string]any{"data": []any{map[string]any{"id": "ses_3"}, map[string]any{"id": "ses_2"}}, "hasMore": true, "nextCursor": "ses_2"},
		map[string]any{"data": []any{map[string]any{"id": "ses_1"}}, "hasMore": false, "nextCursor": nil},
	}
	server := serve(t, func(r seen, _ int) answer {
		if strings.Contains(r.URL, "startingAfter=ses_2") {
			return answer{status: 200, json: pages[1]}
		}
		return answer{status: 200, json: pages[0]}
	})
	c := client(server.baseURL())
	params := &PaymentListParams{Status: Ptr(PaymentStatusSettled), Limit: Int(2)}
	first, err := c.Payments.List(ctx, params)
	if err != nil || len(first.Data) != 2 || !first.HasMore || *first.NextCursor != "ses_2" {
		t.Fatal(first, err)
	}
	it := c.Payments.ListAll(ctx, params)
	if len(server.requests()) != 1 {
		t.Error("ListAll fetched before Next")
	}
	ids := []string{}
	for it.Next() {
		ids = append(ids, it.Current().ID)
	}
	if it.Err() != nil || !reflect.DeepEqual(ids, []string{"ses_3", "ses_2", "ses_1"}) {
		t.Errorf("ids %v, err %v", ids, it.Err())
	}
	urls := []string{}
	for _, r := range server.requests() {
		urls = append(urls, r.URL)
	}
	want := []string{"/api/v1/payments?limit=2&status=settled", "/api/v1/payments?limit=2&status=settled", "/api/v1/payments?limit=2&startingAfter=ses_2&status=settled"}
	if !reflect.DeepEqual(urls, want) {
		t.Errorf("urls %v", urls)
	}

	failing := serve(t, func(seen, int) answer { return answer{status: 404, json: map[string]string{"error": "no"}} })
	it = client(failing.baseURL()).Payments.ListAll(ctx, nil)
	var notFound *NotFoundError
	if it.Next() || !errors.As(it.Err(), &notFound) {
		t.Errorf("err = %v", it.Err())
	}
}

func TestEnumsKeepValuesTheyDoNotKnow(t *testing.T) {
	var p Payment
	if err := json.Unmarshal([]byte(`{"id":"ses_1","chain":"tron","status":"pending","txHash":null,"tokens":[{"symbol":"USDT","address":"T1"}]}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Chain == nil || *p.Chain != "tron" || p.TxHash != nil || p.Tokens[0].Symbol != "USDT" {
		t.Errorf("%+v", p)
	}
}
