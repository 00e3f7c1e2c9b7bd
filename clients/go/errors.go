package svcgateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// GatewayError is what every error of a call carries: the HTTP status (0 when no answer came),
// the gateway's message (the body's "error", else the text, else "HTTP <status>"), the request id
// (X-Request-Id or Request-Id, when the gateway sends one), the headers and the body.
//
// A call returns the error of its status's type (*BadRequestError, *NotFoundError, …, or
// *GatewayError itself for other statuses); each unwraps to its *GatewayError, so
//
//	var notFound *svcgateway.NotFoundError
//	if errors.As(err, &notFound) { … }
//	var gatewayErr *svcgateway.GatewayError
//	if errors.As(err, &gatewayErr) { log.Print(gatewayErr.Status, gatewayErr.RequestID) }
type GatewayError struct {
	Status    int
	Message   string
	RequestID string
	Header    http.Header
	// Body is the answer's body as it came (usually {"error": "..."}).
	Body []byte
}

func (e *GatewayError) Error() string {
	if e.Status == 0 {
		return "svcgateway: " + e.Message
	}
	return fmt.Sprintf("svcgateway: %d %s", e.Status, e.Message)
}

// BadRequestError is a 400: the request is malformed or a field is invalid; the message says which.
type BadRequestError struct{ *GatewayError }

// AuthenticationError is a 401: the API key is missing, unknown or revoked.
type AuthenticationError struct{ *GatewayError }

// PermissionDeniedError is a 403: the key may not do this (a test key on a live-only route, …).
type PermissionDeniedError struct{ *GatewayError }

// NotFoundError is a 404: no such object for this key's account and mode.
type NotFoundError struct{ *GatewayError }

// ConflictError is a 409: the request conflicts with the object's state (or an idempotent request
// still running after every retry).
type ConflictError struct{ *GatewayError }

// UnprocessableEntityError is a 422: well-formed but refused, e.g. an Idempotency-Key reused with a different request.
type UnprocessableEntityError struct{ *GatewayError }

// RateLimitError is a 429: rate limited; RetryAfter is the gateway's Retry-After.
type RateLimitError struct{ *GatewayError }

// ServerError is a 5xx: the gateway failed or is unavailable (503 while its database is unreachable).
type ServerError struct{ *GatewayError }

// APIConnectionError means no answer came: the connection failed, was reset or timed out (Err says why).
type APIConnectionError struct {
	*GatewayError
	Err error
}

func (e *BadRequestError) Unwrap() error          { return e.GatewayError }
func (e *AuthenticationError) Unwrap() error      { return e.GatewayError }
func (e *PermissionDeniedError) Unwrap() error    { return e.GatewayError }
func (e *NotFoundError) Unwrap() error            { return e.GatewayError }
func (e *ConflictError) Unwrap() error            { return e.GatewayError }
func (e *UnprocessableEntityError) Unwrap() error { return e.GatewayError }
func (e *RateLimitError) Unwrap() error           { return e.GatewayError }
func (e *ServerError) Unwrap() error              { return e.GatewayError }

// Unwrap gives the *GatewayError (Go 1.19 unwraps to one error; Err holds the cause).
func (e *APIConnectionError) Unwrap() error { return e.GatewayError }

// RetryAfter is the 429's Retry-After; false when it sent none.
func (e *RateLimitError) RetryAfter() (time.Duration, bool) {
	return ParseRetryAfter(e.Header.Get("Retry-After"), time.Now())
}

// errorFromResponse is the error of a non-2xx answer: the type of its status, the gateway's "error" as message.
func errorFromResponse(status int, header http.Header, body []byte) error {
	message := fmt.Sprintf("HTTP %d", status)
	var parsed any
	if json.Unmarshal(body, &parsed) == nil {
		if object, ok := parsed.(map[string]any); ok {
			if text, ok := object["error"].(string); ok {
				message = text
			}
		}
	} else if len(body) > 0 {
		message = string(body)
		if len(message) > 500 {
			message = message[:500]
		}
	}
	requestID := header.Get("X-Request-Id")
	if requestID == "" {
		requestID = header.Get("Request-Id")
	}
	base := &GatewayError{Status: status, Message: message, RequestID: requestID, Header: header, Body: body}
	switch {
	case status == http.StatusBadRequest:
		return &BadRequestError{base}
	case status == http.StatusUnauthorized:
		return &AuthenticationError{base}
	case status == http.StatusForbidden:
		return &PermissionDeniedError{base}
	case status == http.StatusNotFound:
		return &NotFoundError{base}
	case status == http.StatusConflict:
		return &ConflictError{base}
	case status == http.StatusUnprocessableEntity:
		return &UnprocessableEntityError{base}
	case status == http.StatusTooManyRequests:
		return &RateLimitError{base}
	case status >= 500:
		return &ServerError{base}
	default:
		return base
	}
}
