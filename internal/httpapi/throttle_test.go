package httpapi

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/throttle"
)

// keyStore is a store that knows one key and counts key lookups; any other
// method panics (the embedded interface is nil).
type keyStore struct {
	store.Store
	key     auth.Key
	lookups atomic.Int64
}

func (s *keyStore) GetKey(_ context.Context, kid string) (auth.Key, error) {
	s.lookups.Add(1)
	if kid != s.key.ID {
		return auth.Key{}, apperr.NotFoundf("key %s not found", kid)
	}
	return s.key, nil
}

func (s *keyStore) TouchKeys(context.Context, map[string]time.Time) error { return nil }

// TestRefusedFloodCostsNoLookups: once a client has spent its refusal
// budget, its requests with unknown keys are answered 429 without a key
// lookup, while a key that passed before is still looked up and served.
func TestRefusedFloodCostsNoLookups(t *testing.T) {
	k, secret := auth.NewKey(id.New(id.Org), "k", []string{auth.CallsRead}, time.Now())
	st := &keyStore{key: k}
	s := New(Config{Refusals: throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: 2})}, st, nil, nil, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(s.Close)
	try := func(key string) (int, error) {
		r := httptest.NewRequest("GET", "/v1/calls", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("X-API-Key", key)
		req := &request{Request: r, id: "req_test"}
		err := s.authenticate(r.Context(), req, auth.CallsRead)
		status, _, _ := errorResponse(err, req.id, s.log)
		if err == nil {
			status = 200
		}
		return status, err
	}
	if st, err := try(secret); st != 200 {
		t.Fatalf("authenticate(good key) = %d %v, want success", st, err)
	}
	for range 2 {
		if st, _ := try(auth.KeyPrefix + id.Random(10) + "_" + id.Random(20)); st != 401 {
			t.Fatalf("authenticate(unknown key) = %d, want 401 within the burst", st)
		}
	}
	before := st.lookups.Load()
	for range 100 {
		if st, err := try(auth.KeyPrefix + id.Random(10) + "_" + id.Random(20)); st != 429 {
			t.Fatalf("authenticate(unknown key) past the burst = %d %v, want 429", st, err)
		}
	}
	if n := st.lookups.Load() - before; n != 0 {
		t.Errorf("100 throttled requests cost %d key lookups, want 0", n)
	}
	if st, err := try(secret); st != 200 {
		t.Errorf("authenticate(good key) from the throttled address = %d %v, want success", st, err)
	}
}
