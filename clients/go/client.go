// Package svcgateway is the Go client of svc gateway: typed calls for every route of the merchant
// API (generated from the gateway's OpenAPI document), an Idempotency-Key per POST kept across
// automatic retries, typed errors, auto-pagination and the webhook verifier of spec §6.3.
//
// Standard library only; Go 1.19 or newer.
//
//	client := svcgateway.NewClient(os.Getenv("SVC_API_KEY"))
//	payment, err := client.Payments.Create(ctx, &svcgateway.PaymentCreateParams{Amount: svcgateway.String("25.00"), Currency: svcgateway.Ptr(svcgateway.CurrencyUSDC), Chain: svcgateway.Ptr(svcgateway.ChainBase)})
package svcgateway

import (
	"net/http"
	"strings"
	"time"
)

// Client calls the gateway: client.Payments.List, client.Refunds.Create, … (one field per resource,
// one method per operation), and Request for anything else. Safe for concurrent use.
type Client struct {
	Resources
	t *transport
}

// AuthHeader says which header carries the API key; the gateway takes either on every route.
type AuthHeader int

const (
	// AuthBearer sends "Authorization: Bearer <key>" (Interface A's scheme; the default).
	AuthBearer AuthHeader = iota
	// AuthXAPIKey sends "X-API-Key: <key>" (Interface B's scheme).
	AuthXAPIKey
)

// ClientOption configures a Client (NewClient's optional arguments).
type ClientOption func(*transport)

// WithBaseURL sets the API's base URL, ending in /api/v1 (default DefaultBaseURL).
func WithBaseURL(baseURL string) ClientOption {
	return func(t *transport) { t.baseURL = strings.TrimRight(baseURL, "/") }
}

// WithAuthHeader picks the header that carries the key (default AuthBearer).
func WithAuthHeader(header AuthHeader) ClientOption {
	return func(t *transport) { t.authHeader = header }
}

// WithMaxRetries sets how many times a call is retried after its first attempt (default 2).
func WithMaxRetries(retries int) ClientOption {
	return func(t *transport) { t.maxRetries = retries }
}

// WithTimeout sets how long one attempt may take before it counts as a network error (default 30 s).
func WithTimeout(timeout time.Duration) ClientOption {
	return func(t *transport) { t.timeout = timeout }
}

// WithRetryBackoff sets the exponential backoff: the first step and the largest (default 0.5 s and 8 s).
func WithRetryBackoff(initial, max time.Duration) ClientOption {
	return func(t *transport) { t.backoffInitial, t.backoffMax = initial, max }
}

// WithMaxRetryAfter sets the longest Retry-After the client waits for; a longer one returns the error at once (default 60 s).
func WithMaxRetryAfter(max time.Duration) ClientOption {
	return func(t *transport) { t.maxRetryAfter = max }
}

// WithOnRetry registers a hook that sees each retry before its wait (for logs and metrics).
func WithOnRetry(hook func(RetryEvent)) ClientOption {
	return func(t *transport) { t.onRetry = hook }
}

// WithHTTPClient sets the http.Client the requests go through (its Timeout is left alone; the
// per-attempt timeout is WithTimeout's). Redirects are never followed, whatever it says.
func WithHTTPClient(client *http.Client) ClientOption {
	return func(t *transport) { t.http = client }
}

// NewClient returns a client that authenticates with apiKey (svc_live_…, svc_test_…, svc_sk_…).
func NewClient(apiKey string, options ...ClientOption) *Client {
	t := &transport{
		apiKey:         apiKey,
		baseURL:        DefaultBaseURL,
		maxRetries:     2,
		timeout:        30 * time.Second,
		backoffInitial: 500 * time.Millisecond,
		backoffMax:     8 * time.Second,
		maxRetryAfter:  60 * time.Second,
		http:           http.DefaultClient,
	}
	for _, option := range options {
		option(t)
	}
	return &Client{Resources: newResources(t), t: t}
}
