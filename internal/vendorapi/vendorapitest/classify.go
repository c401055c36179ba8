package vendorapitest

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"switchboard/internal/vendorapi"
)

// Refusal is a status a fake refuses a request with, and whether the
// client must call it retryable.
type Refusal struct {
	Status    int
	Retryable bool
}

// refusals are the statuses every client's suite sees: vendorapi.RetryableStatus
// as seen over the wire.
var refusals = []Refusal{
	{400, false}, {401, false}, {403, false}, {404, false}, {422, false},
	{429, true}, {500, true}, {502, true}, {503, true},
}

// ExerciseClassification runs, as the subtests Status and RetryAfter, the
// part of a client's behavioural suite that every provider client shares:
// a refused request becomes a *vendorapi.Error named for the client, with
// the status, a message, the retryability of vendorapi.RetryableStatus, and
// the wait the server asked for in Retry-After (seconds or an HTTP date).
//
// refuse starts the client's fake scripted to refuse one request with
// status (and the Retry-After header retryAfter when it is not empty),
// sends one request through the client under test and returns its error.
// more are statuses only some providers send (Anthropic's 529), checked
// after the shared ones. The subtests run in parallel.
func ExerciseClassification(t *testing.T, name string, refuse func(t *testing.T, status int, retryAfter string) error, more ...Refusal) {
	t.Helper()

	t.Run("Status", func(t *testing.T) {
		t.Parallel()
		for _, tt := range append(slices.Clip(refusals), more...) {
			t.Run(strconv.Itoa(tt.Status), func(t *testing.T) {
				t.Parallel()
				err := refuse(t, tt.Status, "")
				pe := AsError(t, err)
				if pe.Status != tt.Status || pe.Retryable != tt.Retryable || pe.Provider != name || pe.Message == "" {
					t.Errorf("request refused with %d: got %+v, want Status %d, Retryable %v, Provider %q and a message", tt.Status, pe, tt.Status, tt.Retryable, name)
				}
				if temp, ok := err.(interface{ Temporary() bool }); !ok || temp.Temporary() != tt.Retryable {
					t.Errorf("request refused with %d: Temporary() = %v, want %v", tt.Status, ok && temp.Temporary(), tt.Retryable)
				}
			})
		}
	})

	t.Run("RetryAfter", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			name     string
			header   func(now time.Time) string
			min, max time.Duration
		}{
			{"seconds", func(time.Time) string { return "7" }, 7 * time.Second, 7 * time.Second},
			{"HTTP date", func(now time.Time) string { return now.Add(30 * time.Second).UTC().Format(http.TimeFormat) }, 28 * time.Second, 30 * time.Second},
			{"absent", func(time.Time) string { return "" }, 0, 0},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				// The date is written just before the request, not when the
				// table is built: parallel subtests may start seconds later.
				header := tt.header(time.Now())
				err := refuse(t, http.StatusTooManyRequests, header)
				pe := AsError(t, err)
				var rd interface{ RetryDelay() time.Duration }
				if !errors.As(err, &rd) || rd.RetryDelay() != pe.RetryAfter {
					t.Errorf("error %T does not report RetryDelay", err)
				}
				if !pe.Retryable || pe.RetryAfter < tt.min || pe.RetryAfter > tt.max {
					t.Errorf("request refused with 429 and Retry-After %q: Retryable %v, RetryAfter %v; want retryable, RetryAfter in [%v, %v]", header, pe.Retryable, pe.RetryAfter, tt.min, tt.max)
				}
			})
		}
	})
}

// AsError fails the test unless err is a *vendorapi.Error (an *llm.Error,
// a *cloud.Error), and returns it.
func AsError(t testing.TB, err error) *vendorapi.Error {
	t.Helper()
	var pe *vendorapi.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *vendorapi.Error", err, err)
	}
	return pe
}
