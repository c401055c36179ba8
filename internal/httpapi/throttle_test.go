package httpapi

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
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

// slowKeyStore is a keyStore whose lookups take a while, so that
// concurrent requests overlap the way a flood's do.
type slowKeyStore struct {
	keyStore
	delay time.Duration
}

func (s *slowKeyStore) GetKey(ctx context.Context, kid string) (auth.Key, error) {
	time.Sleep(s.delay)
	return s.keyStore.GetKey(ctx, kid)
}

// TestConcurrentRefusalsBounded: a client that has a refusal budget cannot
// get more lookups than it has refusals left by sending its requests all
// at once: admission takes the refusal before the lookup. (It used to
// check, look up, then spend: 500 concurrent requests cost 500 lookups.)
func TestConcurrentRefusalsBounded(t *testing.T) {
	const burst, flood = 20, 500
	st := &slowKeyStore{delay: time.Millisecond}
	s := New(Config{Refusals: throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: burst})}, st, nil, nil, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(s.Close)
	send := func() int {
		r := httptest.NewRequest("GET", "/v1/calls", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("X-API-Key", auth.KeyPrefix+id.Random(10)+"_"+id.Random(20))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w.Code
	}
	if code := send(); code != 401 {
		t.Fatalf("first unknown key = %d, want 401", code)
	}
	before := st.lookups.Load()
	var wg sync.WaitGroup
	var refused, throttled atomic.Int64
	for range flood {
		wg.Go(func() {
			switch send() {
			case 401:
				refused.Add(1)
			case 429:
				throttled.Add(1)
			}
		})
	}
	wg.Wait()
	if n := st.lookups.Load() - before; n > burst-1 || refused.Load() != n || throttled.Load() != flood-n {
		t.Errorf("%d concurrent unknown keys with %d refusals left: %d lookups, %d × 401, %d × 429; want at most %d lookups, one 401 each, 429 for the rest",
			flood, burst-1, n, refused.Load(), throttled.Load(), burst-1)
	}
}

// BenchmarkAuthenticate is the authentication of a request with a good key
// (the hot path of every REST request) with the refusal budget on: while
// no client has a budget (idle), and while another client has one.
func BenchmarkAuthenticate(b *testing.B) {
	k, secret := auth.NewKey(id.New(id.Org), "k", []string{auth.CallsRead}, time.Now())
	for _, name := range []string{"idle", "under-attack"} {
		b.Run(name, func(b *testing.B) {
			lim := throttle.NewLimiter(throttle.LimiterConfig{Rate: 1, Burst: 20})
			s := New(Config{Refusals: lim}, &keyStore{key: k}, nil, nil, slog.New(slog.DiscardHandler), nil)
			b.Cleanup(s.Close)
			if name == "under-attack" {
				r := httptest.NewRequest("GET", "/v1/calls", nil)
				r.RemoteAddr = "198.51.100.1:1"
				r.Header.Set("X-API-Key", "bad")
				_ = s.authenticate(r.Context(), &request{Request: r}, auth.CallsRead)
			}
			r := httptest.NewRequest("GET", "/v1/calls", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			r.Header.Set("X-API-Key", secret)
			for b.Loop() {
				if err := s.authenticate(r.Context(), &request{Request: r}, auth.CallsRead); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
