package svcgateway

import (
	"encoding/json"
	"fmt"
	"strings"
)

// WebhookEvent is the envelope of spec §6.2, as VerifyWebhook returns it. Data depends on Event:
// PaymentData for payment.*, RefundData for refund.*, EndpointDisabledData for
// webhook_endpoint.disabled.
type WebhookEvent struct {
	// ID is stable across retries, redeliveries and replays: dedupe on it.
	ID    string           `json:"id"`
	Event WebhookEventType `json:"event"`
	// Data is the event's object as it came; decode it with the method for its kind.
	Data json.RawMessage `json:"data"`
	// Timestamp is when the event happened (ISO 8601), not when it was sent.
	Timestamp string `json:"timestamp"`
	Livemode  bool   `json:"livemode"`
}

// PaymentEventData is the data of payment.* events: the session's state when the event happened. Amounts are decimal text.
type PaymentEventData struct {
	ID             string            `json:"id"`
	Amount         string            `json:"amount"`
	Currency       Currency          `json:"currency"`
	Chain          Chain             `json:"chain"`
	Status         SessionStatus     `json:"status"`
	TxHash         *string           `json:"txHash"`
	ConfirmedAt    *string           `json:"confirmedAt"`
	AmountDue      string            `json:"amountDue"`
	AmountReceived string            `json:"amountReceived"`
	AmountPending  string            `json:"amountPending"`
	Fee            string            `json:"fee"`
	PaymentAddress string            `json:"paymentAddress"`
	Confirmations  int64             `json:"confirmations"`
	ExpiresAt      string            `json:"expiresAt"`
	Metadata       map[string]string `json:"metadata"`
	Livemode       bool              `json:"livemode"`
	// AmountRemaining is set while confirmed plus pending money is short of AmountDue.
	AmountRemaining *string `json:"amountRemaining,omitempty"`
	// AmountExcess is set while confirmed money exceeds AmountDue (refundable).
	AmountExcess *string `json:"amountExcess,omitempty"`
	// FailureReason is set on payment.failed.
	FailureReason *string `json:"failureReason,omitempty"`
}

// EndpointDisabledData is the data of webhook_endpoint.disabled, sent to the merchant's other endpoints.
type EndpointDisabledData struct {
	ID         string `json:"id"`
	URL        string `json:"url"`
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	DisabledAt string `json:"disabledAt"`
}

func decodeData[T any](event *WebhookEvent, prefix string) (*T, error) {
	if !strings.HasPrefix(string(event.Event), prefix) {
		return nil, fmt.Errorf("svcgateway: a %s event has no %s data", event.Event, strings.TrimSuffix(prefix, "."))
	}
	out := new(T)
	if err := json.Unmarshal(event.Data, out); err != nil {
		return nil, fmt.Errorf("svcgateway: the data of %s: %w", event.Event, err)
	}
	return out, nil
}

// PaymentData decodes the data of a payment.* event.
func (e *WebhookEvent) PaymentData() (*PaymentEventData, error) {
	return decodeData[PaymentEventData](e, "payment.")
}

// RefundData decodes the data of a refund.* event (the refund).
func (e *WebhookEvent) RefundData() (*Refund, error) { return decodeData[Refund](e, "refund.") }

// EndpointDisabledData decodes the data of a webhook_endpoint.disabled event.
func (e *WebhookEvent) EndpointDisabledData() (*EndpointDisabledData, error) {
	return decodeData[EndpointDisabledData](e, "webhook_endpoint.disabled")
}
