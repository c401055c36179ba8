package webhook

import (
	"errors"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

// TestCheckEndpointPrivateHint: a URL refused for its address (loopback,
// a loopback name, a private network) names the two ways to get
// deliveries there — `switchboard webhooks listen` and
// SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE — with the user's URL; a URL refused
// for its form gets no such hint, since neither would help.
func TestCheckEndpointPrivateHint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url  string
		hint bool
	}{
		{"http://127.0.0.1:9000/hooks", true},
		{"http://localhost:9000/hooks", true},
		{"http://10.0.0.5/hooks", true},
		{"http://[::1]:9000/", true},
		{"ftp://hooks.example.com/", false},
		{"http://user:pw@203.0.113.7/", false},
	} {
		var errs apperr.Fields
		Guard{}.CheckEndpoint(t.Context(), tc.url, []string{"call.ended"}, []string{"call.ended"}, &errs)
		err := errs.Err()
		var e *apperr.Error
		if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "url" {
			t.Errorf("CheckEndpoint(%q) = %v; want one error on url", tc.url, err)
			continue
		}
		msg := e.Fields[0].Message
		wantListen := "switchboard webhooks listen --forward-to " + tc.url
		got := strings.Contains(msg, wantListen) && strings.Contains(msg, "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE") && strings.Contains(msg, "--webhook-allow-private")
		if got != tc.hint {
			t.Errorf("CheckEndpoint(%q): url message %q; hint naming %q and SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE: %v, want %v", tc.url, msg, wantListen, got, tc.hint)
		}
	}
}
