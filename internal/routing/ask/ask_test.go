package ask

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
