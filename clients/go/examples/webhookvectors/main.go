// Command webhookvectors prints this library's answer to every shared webhook vector as JSON,
// for the gateway's test/clients/vectors.test.ts (every verifier must give the same answers):
//
//	go run ./examples/webhookvectors ../webhook-vectors.json
//
// It is also a quick way to check your own receiver's setup against the gateway's deliveries.
package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"time"

	svcgateway "github.com/svc-gateway/svc-gateway-go"
)

type vector struct {
	Name     string            `json:"name"`
	Secret   string            `json:"secret"`
	Now      int64             `json:"now"`
	Headers  map[string]string `json:"headers"`
	Body     string            `json:"body"`
	Livemode *bool             `json:"livemode"`
}

type answer struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	EventID string `json:"eventId,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	var file struct {
		Vectors []vector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		panic(err)
	}
	answers := []answer{}
	for _, v := range file.Vectors {
		header := http.Header{}
		for name, value := range v.Headers {
			header[name] = []string{value} // as given: the verifier reads names in any case
		}
		event, err := svcgateway.VerifyWebhook([]byte(v.Body), header, v.Secret, &svcgateway.VerifyOptions{Now: time.Unix(v.Now, 0), Livemode: v.Livemode})
		var refused *svcgateway.WebhookVerificationError
		switch {
		case err == nil:
			answers = append(answers, answer{Name: v.Name, OK: true, EventID: event.ID})
		case errors.As(err, &refused):
			answers = append(answers, answer{Name: v.Name, Reason: refused.Reason})
		default:
			panic(err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(answers); err != nil {
		panic(err)
	}
}
