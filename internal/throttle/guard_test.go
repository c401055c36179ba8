package throttle

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestGuard: answers the refused func reports spend the client's budget
// until the blocked answer comes first (with Retry-After, without running
// the handler); other answers spend nothing; another client is not held.
func TestGuard(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	l := NewLimiter(LimiterConfig{Rate: 0.001, Burst: 2, Now: func() time.Time { return clock }})
	ran := 0
	h := Guard(l, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran++
		if r.Header.Get("X-Good") == "" {
			w.WriteHeader(http.StatusForbidden)
		}
	}), func(status int) bool { return status == http.StatusForbidden },
		func(w http.ResponseWriter, _ time.Duration) { w.WriteHeader(http.StatusTooManyRequests) })
	send := func(addr string, good bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/twilio/voice", nil)
		r.RemoteAddr = addr + ":5000"
		if good {
			r.Header.Set("X-Good", "1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i := range 5 {
		if w := send("192.0.2.9", true); w.Code != http.StatusOK {
			t.Fatalf("good request %d: status %d, want 200 (a success spends nothing)", i, w.Code)
		}
	}
	for i := range 2 {
		if w := send("192.0.2.1", false); w.Code != http.StatusForbidden {
			t.Fatalf("refused request %d: status %d, want 403 (within the burst)", i, w.Code)
		}
	}
	before := ran
	w := send("192.0.2.1", true)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || ran != before {
		t.Fatalf("after the burst: status %d, Retry-After %q, handler ran %d more times; want 429 with Retry-After and no run", w.Code, w.Header().Get("Retry-After"), ran-before)
	}
	if w := send("192.0.2.9", true); w.Code != http.StatusOK {
		t.Fatalf("another client: status %d, want 200", w.Code)
	}
	if w := Guard(nil, nil, http.NotFoundHandler(), nil, nil); w == nil {
		t.Fatal("Guard(nil …) is nil")
	}
}
