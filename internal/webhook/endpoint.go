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
// (fields "events[i]"), each one of known and none twice.
func (g Guard) CheckEndpoint(ctx context.Context, url string, events, known []string, errs *apperr.Fields) {
	if url != "" {
		if err := g.CheckURL(ctx, url); err != nil {
			if errors.Is(err, ErrUnsafeURL) {
				errs.Add("url", "%s", err.Error())
			} else {
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
