package svcgateway

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

const secret = "whsec_unit"

var (
	body = []byte(`{"id":"evt_1","event":"payment.confirmed","data":{"id":"ses_1","amount":"25","currency":"USDC","chain":"base","status":"confirmed","txHash":null,"metadata":{}},"timestamp":"2026-01-01T00:00:00.000Z","livemode":false}`)
	now  = time.Unix(1767225600, 0)
)

func signed(nonce string, signatures ...string) http.Header {
	if len(signatures) == 0 {
		signatures = []string{ComputeSignature(secret, strconv.FormatInt(now.Unix(), 10), nonce, body)}
	}
	header := http.Header{}
	header.Set(SignatureHeader, signatures[0])
	for _, s := range signatures[1:] {
		header.Set(SignatureHeader, header.Get(SignatureHeader)+", "+s)
	}
	header.Set(TimestampHeader, strconv.FormatInt(now.Unix(), 10))
	header.Set(NonceHeader, nonce)
	return header
}

func reason(err error) string {
	var refused *WebhookVerificationError
	if errors.As(err, &refused) {
		return refused.Reason
	}
	return ""
}

func TestVerifyReturnsTheTypedEvent(t *testing.T) {
	event, err := VerifyWebhook(body, signed("nonce-1"), secret, &VerifyOptions{Now: now, Livemode: Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if event.ID != "evt_1" || event.Event != EventPaymentConfirmed || event.Livemode {
		t.Errorf("%+v", event)
	}
	data, err := event.PaymentData()
	if err != nil || data.Status != SessionStatusConfirmed || data.Chain != ChainBase || data.TxHash != nil {
		t.Errorf("%+v %v", data, err)
	}
	if _, err := event.RefundData(); err == nil {
		t.Error("a payment event has no refund data")
	}
}

func TestVerifyRotationModeAndTolerance(t *testing.T) {
	old := ComputeSignature("whsec_old", strconv.FormatInt(now.Unix(), 10), "nonce-2", body)
	both := signed("nonce-2", ComputeSignature(secret, strconv.FormatInt(now.Unix(), 10), "nonce-2", body), old)
	for _, s := range []string{secret, "whsec_old"} {
		if _, err := VerifyWebhook(body, both, s, &VerifyOptions{Now: now}); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := VerifyWebhook(body, both, "whsec_other", &VerifyOptions{Now: now}); reason(err) != ReasonSignatureMismatch {
		t.Errorf("other secret: %v", err)
	}
	if _, err := VerifyWebhook(body, signed("nonce-3"), secret, &VerifyOptions{Now: now, Livemode: Bool(true)}); reason(err) != ReasonLivemodeMismatch {
		t.Errorf("live receiver: %v", err)
	}
	if _, err := VerifyWebhook(body, signed("nonce-4"), secret, &VerifyOptions{Now: now.Add(61 * time.Second), Tolerance: time.Minute}); reason(err) != ReasonTimestampOutOfTolerance {
		t.Errorf("tolerance: %v", err)
	}
	if _, err := VerifyWebhook(body, signed("nonce-4"), secret, &VerifyOptions{Now: now.Add(300*time.Second + 999*time.Millisecond)}); err != nil {
		t.Errorf("exactly the tolerance (now rounded down) is accepted: %v", err)
	}
	if _, err := VerifyWebhook(body, signed("nonce-4"), secret, nil); reason(err) != ReasonTimestampOutOfTolerance {
		t.Errorf("the real clock is months past the delivery: %v", err)
	}
}

func TestNonceCache(t *testing.T) {
	cache := NewMemoryNonceCache(0)
	options := &VerifyOptions{Now: now, NonceCache: cache}
	header := signed("nonce-5")
	if _, err := VerifyWebhook(body, header, "whsec_wrong", options); reason(err) != ReasonSignatureMismatch {
		t.Errorf("forged: %v", err)
	}
	if _, err := VerifyWebhook(body, header, secret, options); err != nil {
		t.Errorf("a forged delivery does not take up the nonce: %v", err)
	}
	if _, err := VerifyWebhook(body, header, secret, options); reason(err) != ReasonNonceReused {
		t.Errorf("replay: %v", err)
	}
	if !cache.CheckAndRemember("nonce-5", now.Add(2*DefaultTolerance)) {
		t.Error("a nonce is forgotten after its ttl")
	}
}

func TestHeaderNamesAnyCase(t *testing.T) {
	header := http.Header{}
	for name, values := range signed("nonce-6") {
		header["x-"+name[2:]] = values // a map literal's keys are not canonicalised
	}
	if _, err := VerifyWebhook(body, header, secret, &VerifyOptions{Now: now}); err != nil {
		t.Error(err)
	}
}
