package gateway

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"switchboard/internal/apperr"
)

// TestRefusalForUsesTheOneTable: a classified error reaching the gateway
// is refused with the status and code the REST API gives its kind
// (apperr.Kind.HTTPStatus), and a server failure shows nothing of its cause.
func TestRefusalForUsesTheOneTable(t *testing.T) {
	for _, tc := range []struct {
		err        error
		status     int
		code, msg  string
		retryAfter string
	}{
		{apperr.New(apperr.Conflict, "call call_x keeps changing"), http.StatusConflict, "conflict", "call call_x keeps changing", ""},
		{apperr.New(apperr.Unavailable, "database is down"), http.StatusServiceUnavailable, apperr.Unavailable.Code(), "database is down", ""},
		{apperr.Invalidf("call_id", "not an id"), http.StatusBadRequest, apperr.Invalid.Code(), "", ""},
		{&apperr.Error{Kind: apperr.RateLimited, Message: "slow down", RetryAfter: 3 * time.Second}, http.StatusTooManyRequests, apperr.RateLimited.Code(), "slow down", "3"},
		{apperr.New(apperr.Internal, "secret detail"), http.StatusInternalServerError, apperr.Internal.Code(), "internal server error", ""},
		{errors.New("disk on fire"), http.StatusInternalServerError, apperr.Internal.Code(), "internal server error", ""},
	} {
		ref := refusalFor(tc.err)
		if want := apperr.HTTPStatus(tc.err); ref.status != want || ref.status != tc.status {
			t.Errorf("refusalFor(%v).status = %d, want %d (apperr.HTTPStatus: %d)", tc.err, ref.status, tc.status, want)
		}
		if ref.code != tc.code {
			t.Errorf("refusalFor(%v).code = %q, want %q", tc.err, ref.code, tc.code)
		}
		if tc.msg != "" && ref.message != tc.msg {
			t.Errorf("refusalFor(%v).message = %q, want %q", tc.err, ref.message, tc.msg)
		}
		if got := ref.header.Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("refusalFor(%v) Retry-After = %q, want %q", tc.err, got, tc.retryAfter)
		}
	}
	if refusalFor(nil) != nil {
		t.Error("refusalFor(nil) is not nil")
	}
}
