package ask

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/routing"
	"switchboard/internal/webhook"
)

// TestAskKeepsTheURLOutOfTheReason: a failed question's reason (logged,
// stored on the call) does not quote the endpoint's URL, whose query may
// hold the organization's token.
func TestAskKeepsTheURLOutOfTheReason(t *testing.T) {
	c := &Client{HTTP: &http.Client{Transport: webhook.Guard{AllowPrivate: true}.Transport()}}
	ep := routing.Endpoint{URL: "http://127.0.0.1:1/route?token=s3cret-token", Secret: webhook.NewSecret(), Timeout: time.Second}
	_, err := c.Ask(context.Background(), ep, routing.Request{CallID: "call_x"})
	if err == nil || strings.Contains(err.Error(), "s3cret-token") || !strings.HasPrefix(err.Error(), "no answer: ") {
		t.Errorf("Ask to a closed port = %v, want a reason without the URL", err)
	}
}

// TestNewEndpoint: a new endpoint gets a secret and the default wait; bad
// fields are named under the prefix, and a private address says how to
// allow one without pointing at `webhooks listen`, which answers no
// question.
func TestNewEndpoint(t *testing.T) {
	var errs apperr.Fields
	e := NewEndpoint(context.Background(), webhook.Guard{AllowPrivate: true}, "org_1", "http://127.0.0.1:9/route", -1, time.Unix(0, 0), "assistantRequest.", &errs)
	if len(errs) != 0 || e.Timeout != routing.DefaultTimeout || !strings.HasPrefix(e.Secret, "whsec_") || e.OrgID != "org_1" {
		t.Errorf("NewEndpoint = %+v, %v", e, errs)
	}
	errs = nil
	NewEndpoint(context.Background(), webhook.Guard{}, "org_1", "http://127.0.0.1:9/route", 0, time.Unix(0, 0), "assistantRequest.", &errs)
	var url, wait string
	for _, f := range errs {
		switch f.Field {
		case "assistantRequest.url":
			url = f.Message
		case "assistantRequest.timeoutMs":
			wait = f.Message
		}
	}
	if !strings.Contains(url, "--webhook-allow-private") || strings.Contains(url, "webhooks listen") || !strings.Contains(wait, "from 200 to 5000") {
		t.Errorf("NewEndpoint(private, 0 ms) errors = %+v", errs)
	}
}
