package svcgateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// InFlightMessage starts the message of the 409 the gateway gives while a request with the same
// Idempotency-Key is still running: the one 409 worth retrying (other 409s are conflicts with an
// object's state). The gateway sends no code for it yet, so its message is the signal; a
// Retry-After on any 409 is honoured too.
const InFlightMessage = "a request with this Idempotency-Key is still being processed"

// RequestOption changes one call (the trailing arguments of every method).
type RequestOption func(*callOptions)

type callOptions struct {
	idempotencyKey string
	maxRetries     *int
	timeout        time.Duration
}

// IdempotencyKey sets this POST's Idempotency-Key (default a new random UUID per call), kept
// across its retries. Give your own (an order id) to stay safe across restarts of your process.
func IdempotencyKey(key string) RequestOption {
	return func(o *callOptions) { o.idempotencyKey = key }
}

// MaxRetries overrides the client's retry maximum for this call (0: one attempt only).
func MaxRetries(retries int) RequestOption {
	return func(o *callOptions) { o.maxRetries = &retries }
}

// Timeout overrides the client's per-attempt timeout for this call.
func Timeout(timeout time.Duration) RequestOption {
	return func(o *callOptions) { o.timeout = timeout }
}

// RetryEvent is what a WithOnRetry hook learns about a retry about to happen.
type RetryEvent struct {
	Method string
	Path   string
	// Attempt is the number of the retry (1 for the first retry).
	Attempt int
	// Delay is the wait before it.
	Delay time.Duration
	// Err is the error of the attempt that failed (a *ServerError, *APIConnectionError, …).
	Err error
	// IdempotencyKey is the key every attempt of this call sends ("" for GET, PATCH and DELETE).
	IdempotencyKey string
}

type transport struct {
	apiKey         string
	baseURL        string
	authHeader     AuthHeader
	maxRetries     int
	timeout        time.Duration
	backoffInitial time.Duration
	backoffMax     time.Duration
	maxRetryAfter  time.Duration
	onRetry        func(RetryEvent)
	http           *http.Client
}

// request is one logical call: method, path under the base URL, query and JSON body (nil: none).
type request struct {
	method string
	path   string
	query  url.Values
	body   any
}

// Request sends one call to any path under the base URL (for routes newer than this library) and
// decodes a 2xx JSON answer into out (a pointer, or nil to drop it), with the same
// authentication, idempotency, retries and errors as every generated method.
func (c *Client) Request(ctx context.Context, method, path string, query url.Values, body any, out any, opts ...RequestOption) error {
	answer, err := c.t.do(ctx, request{method: method, path: path, query: query, body: body}, opts)
	if err != nil || out == nil {
		return err
	}
	return decode(answer, out)
}

func call[T any](ctx context.Context, t *transport, r request, opts []RequestOption) (*T, error) {
	answer, err := t.do(ctx, r, opts)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := decode(answer, out); err != nil {
		return nil, err
	}
	return out, nil
}

func decode(answer []byte, out any) error {
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("svcgateway: the gateway's answer does not decode as %T: %w", out, err)
	}
	return nil
}

// bodyOf is a method's JSON body: its params, or {} when none are given.
func bodyOf[P any](params *P) any {
	if params == nil {
		return struct{}{}
	}
	return params
}

// queryOf turns a params struct into query values under the JSON names; unset (nil) fields are left out.
func queryOf[P any](params *P) url.Values {
	values := url.Values{}
	if params == nil {
		return values
	}
	encoded, err := json.Marshal(params)
	if err != nil {
		return values
	}
	decoder := json.NewDecoder(bytes.NewReader(encoded))
	decoder.UseNumber()
	var fields map[string]any
	if decoder.Decode(&fields) != nil {
		return values
	}
	for name, value := range fields {
		switch v := value.(type) {
		case nil:
		case string:
			values.Set(name, v)
		case bool:
			values.Set(name, strconv.FormatBool(v))
		case json.Number:
			values.Set(name, v.String())
		default:
			values.Set(name, fmt.Sprint(v))
		}
	}
	return values
}

// do runs one logical call: its attempts, with one Idempotency-Key (POST) across them, and
// returns the body of the 2xx answer or the error of the last attempt.
func (t *transport) do(ctx context.Context, r request, opts []RequestOption) ([]byte, error) {
	options := callOptions{timeout: t.timeout}
	for _, opt := range opts {
		opt(&options)
	}
	maxRetries := t.maxRetries
	if options.maxRetries != nil {
		maxRetries = *options.maxRetries
	}
	idempotencyKey := ""
	if r.method == http.MethodPost {
		idempotencyKey = options.idempotencyKey
		if idempotencyKey == "" {
			idempotencyKey = newUUID()
		}
	}
	var payload []byte
	if r.body != nil && !(reflect.ValueOf(r.body).Kind() == reflect.Pointer && reflect.ValueOf(r.body).IsNil()) {
		encoded, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("svcgateway: encoding the request body: %w", err)
		}
		payload = encoded
	}
	target := t.baseURL + r.path
	if encoded := r.query.Encode(); encoded != "" {
		target += "?" + encoded
	}

	for retry := 0; ; retry++ {
		answer, err := t.attempt(ctx, r.method, target, payload, idempotencyKey, options.timeout)
		if err == nil {
			return answer, nil
		}
		if ctx.Err() != nil || retry >= maxRetries || !isRetryable(err) {
			return nil, err
		}
		retryAfter, hasRetryAfter := retryAfterOf(err)
		if hasRetryAfter && retryAfter > t.maxRetryAfter {
			return nil, err
		}
		delay := retryAfter
		if !hasRetryAfter {
			// Equal jitter: half the exponential step fixed, half random, so clients spread out.
			step := t.backoffInitial << retry
			if step > t.backoffMax || step <= 0 {
				step = t.backoffMax
			}
			delay = step/2 + time.Duration(mathrand.Int63n(int64(step/2)+1))
		}
		if t.onRetry != nil {
			t.onRetry(RetryEvent{Method: r.method, Path: r.path, Attempt: retry + 1, Delay: delay, Err: err, IdempotencyKey: idempotencyKey})
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, err
		case <-timer.C:
		}
	}
}

func (t *transport) attempt(ctx context.Context, method, target string, payload []byte, idempotencyKey string, timeout time.Duration) ([]byte, error) {
	attemptCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(attemptCtx, method, target, body)
	if err != nil {
		return nil, fmt.Errorf("svcgateway: %w", err)
	}
	if t.authHeader == AuthXAPIKey {
		req.Header.Set("X-API-Key", t.apiKey)
	} else {
		req.Header.Set("Authorization", "Bearer "+t.apiKey)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "svc-gateway-go/"+Version)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idempotencyKey != "" {
		req.Header.Set("Idempotency-Key", idempotencyKey)
	}
	// The API never redirects: a 3xx is an answer to report, not to follow.
	client := *t.http
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		return nil, &APIConnectionError{GatewayError: &GatewayError{Message: fmt.Sprintf("%s %s: %v", method, target, err), Header: http.Header{}}, Err: err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &APIConnectionError{GatewayError: &GatewayError{Message: fmt.Sprintf("%s %s: reading the answer: %v", method, target, err), Header: http.Header{}}, Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return answer, nil
	}
	return nil, errorFromResponse(resp.StatusCode, resp.Header, answer)
}

// isRetryable says whether an error is worth another attempt with the same request and Idempotency-Key.
func isRetryable(err error) bool {
	var connection *APIConnectionError
	if errors.As(err, &connection) {
		return true
	}
	var gateway *GatewayError
	if !errors.As(err, &gateway) {
		return false
	}
	if gateway.Status == http.StatusConflict {
		return gateway.Header.Get("Retry-After") != "" || strings.HasPrefix(gateway.Message, InFlightMessage)
	}
	return gateway.Status == http.StatusTooManyRequests || gateway.Status >= 500
}

func retryAfterOf(err error) (time.Duration, bool) {
	var gateway *GatewayError
	if !errors.As(err, &gateway) {
		return 0, false
	}
	return ParseRetryAfter(gateway.Header.Get("Retry-After"), time.Now())
}

// ParseRetryAfter reads a Retry-After value (delay-seconds or an HTTP date) as a wait from now;
// false when it is absent or unreadable.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0, false
	}
	if seconds, err := strconv.ParseUint(value, 10, 32); err == nil {
		return time.Duration(seconds) * time.Second, true
	}
	when, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	if wait := when.Sub(now); wait > 0 {
		return wait, true
	}
	return 0, true
}

// newUUID is a random (version 4) UUID, the default Idempotency-Key.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("svcgateway: no randomness for an Idempotency-Key: %v", err))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
