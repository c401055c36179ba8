package webhook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"switchboard/internal/apperr"
)

// CheckEndpoint checks a new endpoint, whoever registers it (the REST API,
// the dashboard): its URL against the guard (field "url"), and its events
// (fields "events[i]"), each one of known and none twice. A URL refused
// for its address says how a receiver on the developer's own machine or
// network gets deliveries anyway (PrivateHint).
func (g Guard) CheckEndpoint(ctx context.Context, url string, events, known []string, errs *apperr.Fields) {
	if url != "" {
		if err := g.CheckURL(ctx, url); err != nil {
			switch {
			case IsPrivateRefusal(err):
				errs.Add("url", "%s; %s", err.Error(), PrivateHint(url))
			case errors.Is(err, ErrUnsafeURL):
				errs.Add("url", "%s", err.Error())
			default:
				errs.Add("url", "could not be checked: %s", err.Error())
			}
		}
	}
	seen := map[string]bool{}
	for i, e := range events {
		if !slices.Contains(known, e) {
			errs.Add(fmt.Sprintf("events[%d]", i), "unknown event %q; known: %s", e, strings.Join(known, ", "))
		}
		if seen[e] {
			errs.Add(fmt.Sprintf("events[%d]", i), "repeats %q", e)
		}
		seen[e] = true
	}
}

// PrivateHint says what to do about a webhook URL refused for its
// address: on a developer's machine, `switchboard webhooks listen`, which
// gets the deliveries over a connection it makes to the server and
// forwards them to url itself; on a server whose receivers are on its own
// trusted network, --webhook-allow-private. The guard's default stays:
// listening needs no change to the server.
func PrivateHint(url string) string {
	if len(url) > 200 {
		url = "URL"
	}
	return fmt.Sprintf("this server does not send webhooks to loopback or private addresses. "+
		"For a receiver on your machine run `switchboard webhooks listen --forward-to %s` (it connects to the server and forwards each delivery, signed, to that URL); "+
		"a server whose receivers are on its own trusted network can be started with --webhook-allow-private (SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE=true)", url)
}
