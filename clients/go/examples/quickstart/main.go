// Command quickstart is the quick start of README.md: create a sandbox session, find it in the
// list, pay it on the sandbox's simulated chain, and receive and verify its webhooks.
//
//	SVC_API_KEY=svc_test_... SVC_WEBHOOK_SECRET=whsec_... go run ./examples/quickstart   # against `npm start` on 127.0.0.1:8080
//
// Both values are the ones the gateway's first `npm start` printed (test API key, webhook secret).
//
// The gateway's test/clients/e2e.go.test.ts runs it against a real daemon.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	svcgateway "github.com/svc-gateway/svc-gateway-go"
)

func main() {
	if err := run(); err != nil {
		fmt.Println("✗", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	options := []svcgateway.ClientOption{}
	if baseURL := os.Getenv("SVC_BASE_URL"); baseURL != "" {
		options = append(options, svcgateway.WithBaseURL(baseURL))
	}
	gateway := svcgateway.NewClient(os.Getenv("SVC_API_KEY"), options...)

	// The sandbox webhook secret the first `npm start` printed. Not rotated here: every receiver
	// already holding it would stop verifying. Lost it? `svc webhooks rotate-secret --merchant mer_... --mode test`.
	secret := os.Getenv("SVC_WEBHOOK_SECRET")
	if secret == "" {
		return errors.New("set SVC_WEBHOOK_SECRET to the webhook secret the first `npm start` printed (whsec_...)")
	}

	confirmed := make(chan *svcgateway.WebhookEvent, 1)
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rawBody, err := io.ReadAll(r.Body) // the raw bytes, never re-serialised
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		event, err := svcgateway.VerifyWebhook(rawBody, r.Header, secret, &svcgateway.VerifyOptions{Livemode: svcgateway.Bool(false)})
		var refused *svcgateway.WebhookVerificationError
		if errors.As(err, &refused) {
			fmt.Printf("✗ refused: %s\n", refused.Reason)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		data, err := event.PaymentData()
		if err != nil {
			w.WriteHeader(http.StatusOK) // not a payment event: nothing to do here
			return
		}
		fmt.Printf("✓ %s %s %s status=%s signature verified\n", event.Event, event.ID, data.ID, data.Status)
		w.WriteHeader(http.StatusOK)
		if event.Event == svcgateway.EventPaymentConfirmed {
			confirmed <- event
		}
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	server := &http.Server{Handler: receiver, ReadHeaderTimeout: 5 * time.Second}
	go server.Serve(listener) //nolint:errcheck // ends with Close below
	defer server.Close()
	webhookURL := fmt.Sprintf("http://%s/webhooks", listener.Addr())

	session, err := gateway.Sessions.Create(ctx, &svcgateway.SessionCreateParams{
		Amount:     svcgateway.String("25.00"),
		Currency:   svcgateway.Ptr(svcgateway.CurrencyUSDC),
		Chain:      svcgateway.Ptr(svcgateway.ChainBase),
		WebhookURL: &webhookURL,
	})
	if err != nil {
		return err
	}
	fmt.Printf("created %s: pay %v %v on %v to %v\n", session.ID, deref(session.AmountDue), deref(session.Currency), deref(session.Chain), deref(session.PaymentAddress))

	payments := gateway.Payments.ListAll(ctx, &svcgateway.PaymentListParams{Limit: svcgateway.Int(10)})
	for payments.Next() {
		if payment := payments.Current(); payment.ID == session.ID {
			fmt.Printf("listed %s status=%s\n", payment.ID, payment.Status)
		}
	}
	if err := payments.Err(); err != nil {
		return err
	}

	paid, err := gateway.Sandbox.Pay(ctx, session.ID, &svcgateway.SandboxPayParams{Outcome: svcgateway.Ptr(svcgateway.SandboxOutcomeExact)})
	if err != nil {
		return err
	}
	txHash := ""
	if paid.TxHash != nil {
		txHash = *paid.TxHash
	}
	fmt.Printf("paid %s in the sandbox, tx %s\n", paid.Amount, txHash)

	select {
	case <-confirmed:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("no payment.confirmed webhook within 30 s")
	}
}

// deref prints a field that is null until the customer chooses a payment option.
func deref[T any](v *T) any {
	if v == nil {
		return "(not chosen yet)"
	}
	return *v
}
