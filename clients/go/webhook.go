package svcgateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The receiver side of spec §6.3: verify a delivery and get its typed event. It follows the
// gateway's own verifier rule for rule (clients/README.md, "The verifier contract"), and the
// shared vectors in clients/webhook-vectors.json check that it does.

// Header names of a delivery (HTTP header names are case-insensitive).
const (
	SignatureHeader = "X-Service-Signature"
	TimestampHeader = "X-Service-Timestamp"
	NonceHeader     = "X-Service-Nonce"
	EventIDHeader   = "X-Service-Event-Id"
)

// DefaultTolerance is spec §8's limit: a delivery whose timestamp is further than this from now is refused.
const DefaultTolerance = 300 * time.Second

// MaxSignatures is the most signatures one X-Service-Signature may carry (one, two while a rotated secret still signs).
const MaxSignatures = 8

// Why a delivery was refused: WebhookVerificationError.Reason, stable (answer 400 and log it).
const (
	ReasonMissingHeader           = "missing_header"
	ReasonMalformedHeader         = "malformed_header"
	ReasonTimestampOutOfTolerance = "timestamp_out_of_tolerance"
	ReasonSignatureMismatch       = "signature_mismatch"
	ReasonMalformedBody           = "malformed_body"
	ReasonLivemodeMismatch        = "livemode_mismatch"
	ReasonNonceReused             = "nonce_reused"
)

// WebhookVerificationError says why a delivery was refused: Reason is one of the Reason constants, Message is for people.
type WebhookVerificationError struct {
	Reason  string
	Message string
}

func (e *WebhookVerificationError) Error() string { return "svcgateway: webhook refused: " + e.Message }

func refuse(reason, format string, args ...any) error {
	return &WebhookVerificationError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// NonceCache remembers accepted nonces for at least the tolerance; CheckAndRemember returns false
// for a nonce seen before. Several processes need shared storage (Redis SET NX EX).
type NonceCache interface {
	CheckAndRemember(nonce string, now time.Time) bool
}

// MemoryNonceCache is an in-process NonceCache; safe for concurrent use.
type MemoryNonceCache struct {
	ttl   time.Duration
	mu    sync.Mutex
	seen  map[string]time.Time
	order []string
}

// NewMemoryNonceCache keeps each nonce for ttl (0: twice DefaultTolerance).
func NewMemoryNonceCache(ttl time.Duration) *MemoryNonceCache {
	if ttl <= 0 {
		ttl = 2 * DefaultTolerance
	}
	return &MemoryNonceCache{ttl: ttl, seen: map[string]time.Time{}}
}

// CheckAndRemember implements NonceCache.
func (c *MemoryNonceCache) CheckAndRemember(nonce string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Insertion order is expiry order: drop the expired ones from the front.
	for len(c.order) > 0 && !c.seen[c.order[0]].After(now) {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
	if _, ok := c.seen[nonce]; ok {
		return false
	}
	c.seen[nonce] = now.Add(c.ttl)
	c.order = append(c.order, nonce)
	return true
}

// VerifyOptions are VerifyWebhook's options; the zero value (or nil) verifies with the defaults.
type VerifyOptions struct {
	// Tolerance is the largest distance between the delivery's timestamp and now (0: DefaultTolerance).
	Tolerance time.Duration
	// Now is the receiver's clock (zero: time.Now()).
	Now time.Time
	// Livemode, when set, is the mode the receiver takes: a live receiver sets true and refuses
	// sandbox events, however they were signed.
	Livemode *bool
	// NonceCache, when set, refuses a delivery whose nonce it has seen.
	NonceCache NonceCache
}

// ComputeSignature is "sha256=" + hex HMAC-SHA256 of "timestamp.nonce.rawBody" under secret.
func ComputeSignature(secret, timestamp, nonce string, rawBody []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "." + nonce + "."))
	mac.Write(rawBody)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// headerValue is the first value of the header named name, whatever the case of the map's keys.
func headerValue(header http.Header, name string) string {
	if values := header.Values(name); len(values) > 0 {
		return values[0]
	}
	for key, values := range header {
		if strings.EqualFold(key, name) && len(values) > 0 {
			return values[0]
		}
	}
	return ""
}

func isDigits(text string, min, max int) bool {
	if len(text) < min || len(text) > max {
		return false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return false
		}
	}
	return true
}

func isSignature(part string) bool {
	if len(part) != len("sha256=")+64 || !strings.HasPrefix(part, "sha256=") {
		return false
	}
	for _, c := range part[len("sha256="):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// VerifyWebhook verifies one delivery and returns its event. The checks, in this order: the
// three headers are present and not empty; the timestamp is 1 to 12 digits and the signature
// header is one to eight comma-separated "sha256=<64 lower-case hex>"; the timestamp is within
// the tolerance of now; one of the signatures is the HMAC of the raw body under secret (every
// one compared, each in constant time with hmac.Equal); the body is a JSON object; its livemode
// is the required mode; its nonce is new to the nonce cache.
//
// Pass the body exactly as received (io.ReadAll(r.Body)), never a re-serialised object, and the
// request's header (names case-insensitive). The error is a *WebhookVerificationError naming the
// rule that failed.
func VerifyWebhook(rawBody []byte, header http.Header, secret string, options *VerifyOptions) (*WebhookEvent, error) {
	if options == nil {
		options = &VerifyOptions{}
	}
	signature := headerValue(header, SignatureHeader)
	timestamp := headerValue(header, TimestampHeader)
	nonce := headerValue(header, NonceHeader)
	for _, h := range []struct{ name, value string }{{SignatureHeader, signature}, {TimestampHeader, timestamp}, {NonceHeader, nonce}} {
		if h.value == "" {
			return nil, refuse(ReasonMissingHeader, "missing %s header", h.name)
		}
	}
	if !isDigits(timestamp, 1, 12) {
		return nil, refuse(ReasonMalformedHeader, "X-Service-Timestamp is not unix seconds")
	}
	parts := strings.Split(signature, ",")
	malformed := len(parts) > MaxSignatures
	for i, part := range parts {
		// Optional whitespace around each signature is HTTP's: spaces and tabs only.
		parts[i] = strings.Trim(part, " \t")
		malformed = malformed || !isSignature(parts[i])
	}
	if malformed {
		return nil, refuse(ReasonMalformedHeader, "X-Service-Signature is not sha256=<64 hex digits> (at most %d, comma-separated)", MaxSignatures)
	}

	tolerance := options.Tolerance
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	now := options.Now
	if now.IsZero() {
		now = time.Now()
	}
	nowSeconds := now.Unix()
	sent, _ := strconv.ParseInt(timestamp, 10, 64)
	distance := nowSeconds - sent
	if distance < 0 {
		distance = -distance
	}
	if distance > int64(tolerance/time.Second) {
		return nil, refuse(ReasonTimestampOutOfTolerance, "timestamp is more than %d seconds from now", int64(tolerance/time.Second))
	}

	expected := []byte(ComputeSignature(secret, timestamp, nonce, rawBody))
	matched := false
	for _, given := range parts {
		// No early exit: the time taken does not tell which signature matched.
		if hmac.Equal(expected, []byte(given)) {
			matched = true
		}
	}
	if !matched {
		return nil, refuse(ReasonSignatureMismatch, "signature does not match")
	}

	// encoding/json reads invalid UTF-8 inside strings as U+FFFD, as the contract asks.
	var object map[string]json.RawMessage
	if err := json.Unmarshal(rawBody, &object); err != nil || object == nil {
		var anything any
		if json.Unmarshal(rawBody, &anything) != nil {
			return nil, refuse(ReasonMalformedBody, "body is not JSON")
		}
		return nil, refuse(ReasonMalformedBody, "body is not a JSON object")
	}
	event := &WebhookEvent{}
	// A field of an unexpected type is left at its zero value, as the gateway's own verifier does not type-check.
	var typeError *json.UnmarshalTypeError
	if err := json.Unmarshal(rawBody, event); err != nil && !errors.As(err, &typeError) {
		return nil, refuse(ReasonMalformedBody, "body is not a JSON object")
	}
	if options.Livemode != nil {
		var live any
		_ = json.Unmarshal(object["livemode"], &live)
		if given, ok := live.(bool); !ok || given != *options.Livemode {
			return nil, refuse(ReasonLivemodeMismatch, "a %s event, but this receiver takes %s events only", modeName(live), modeName(*options.Livemode))
		}
	}
	// Only a delivery that passed every other check may occupy a nonce: forged requests cannot burn real ones.
	if options.NonceCache != nil && !options.NonceCache.CheckAndRemember(nonce, time.Unix(nowSeconds, 0)) {
		return nil, refuse(ReasonNonceReused, "nonce was already used")
	}
	return event, nil
}

func modeName(live any) string {
	switch live {
	case true:
		return "live"
	case false:
		return "sandbox"
	default:
		return "unknown-mode"
	}
}
