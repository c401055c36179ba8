package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
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
		err := s.authenticate(r.Context(), req, &route{method: "GET", path: "/v1/calls", scope: auth.CallsRead})
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
		return serve(t, s, r).Code
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
				_ = s.authenticate(r.Context(), &request{Request: r}, listCallsRoute)
			}
			r := httptest.NewRequest("GET", "/v1/calls", nil)
			r.RemoteAddr = "192.0.2.1:1234"
			r.Header.Set("X-API-Key", secret)
			for b.Loop() {
				if err := s.authenticate(r.Context(), &request{Request: r}, listCallsRoute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestMalformedIDsCostNoQuery: on every route with ids in its path, an id
// that cannot be one is the route's 404 without any call to the store or
// the services (the store here knows only the key: any other call panics,
// which would be a 500), and a key with bytes no key has is a 401 without
// a key lookup. The end-to-end tests cannot show this: SQLite answers the
// same 404 when such an id is looked up.
func TestMalformedIDsCostNoQuery(t *testing.T) {
	k, secret := auth.NewKey(id.New(id.Org), "k", auth.AllScopes, time.Now())
	st := &keyStore{key: k}
	s := New(Config{}, st, nil, nil, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(s.Close)
	send := func(method, path, key, body string) *httptest.ResponseRecorder {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		r := httptest.NewRequest(method, path, rd)
		r.Header.Set("X-API-Key", key)
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		return serve(t, s, r)
	}
	// The id kind of each path parameter, by the path before it.
	kinds := map[string]string{
		"/v1/calls/{id}": id.Call, "/v1/phone/purchases/{id}": id.Purchase, "/v1/phone/contacts/{id}": id.Purchase,
		"{contactId}": id.Contact, "/v1/phone/schedules/{id}": id.Schedule, "/v1/assistants/{id}": id.Assistant,
		"/v1/webhooks/{id}": id.Webhook, "{messageId}": id.Message, "/v1/phone/connections/{id}": id.Connection,
		"/v1/public-keys/{id}": id.PublicKey,
		// Not an id: a number, whose malformed values get the same 404 with no query.
		"/v1/phone/dnc/{number}": "dnc",
	}
	bodies := map[string]string{
		"PATCH /v1/assistants/{id}":    `{"name":"renamed"}`,
		"POST /v1/phone/contacts/{id}": `{"contacts":[{"phoneNumber":"+14155550123"}]}`,
		"POST /v1/calls/{id}/say":      `{"text":"One moment please."}`,
		"POST /v1/calls/{id}/transfer": `{"destination":"+14155550123"}`,
	}
	bad := []string{"x\x00y", "\xff\xfe", "\xed\xa0\x80", "asst_" + strings.Repeat("a", 25) + "\x00", "call_abc", "CALL_" + strings.Repeat("A", 26), "call_" + strings.Repeat("1", 26)}
	routes := 0
	for _, rt := range s.Routes() {
		method, pattern := rt[0], rt[1]
		segs := strings.Split(pattern, "/")
		var params []int
		for i, seg := range segs {
			if strings.HasPrefix(seg, "{") {
				params = append(params, i)
			}
		}
		if len(params) == 0 {
			continue
		}
		routes++
		kindOf := func(i int) string {
			if k, ok := kinds[segs[i]]; ok {
				return k
			}
			k, ok := kinds[strings.Join(segs[:i+1], "/")]
			if !ok {
				t.Fatalf("%s %s: no id kind for %s: add it to this test", method, pattern, segs[i])
			}
			return k
		}
		for _, p := range params {
			for _, v := range bad {
				path := slices.Clone(segs)
				for _, q := range params {
					path[q] = id.New(kindOf(q))
				}
				path[p] = url.PathEscape(v)
				before := st.lookups.Load()
				w := send(method, strings.Join(path, "/"), secret, bodies[method+" "+pattern])
				if w.Code != 404 || !strings.Contains(w.Body.String(), `"code":"not_found"`) {
					t.Errorf("%s %s with %s = %q: %d %s, want 404 not_found with no store call", method, pattern, segs[p], v, w.Code, w.Body)
				}
				if n := st.lookups.Load() - before; n != 1 {
					t.Errorf("%s %s with %s = %q: %d key lookups, want 1", method, pattern, segs[p], v, n)
				}
			}
		}
	}
	if routes != 28 {
		t.Errorf("found %d routes with path ids, want 28", routes)
	}

	before := st.lookups.Load()
	for _, key := range []string{
		auth.KeyPrefix + strings.Repeat("\xff", 16) + "_" + id.Random(20),
		auth.KeyPrefix + "AAAAAAAAAAAAAAAA_" + id.Random(20),
		auth.KeyPrefix + "aaaaaaaa\xc3\xa9aaaaaa_" + id.Random(20),
		auth.KeyPrefix + "aaaaaaaaaaaaaaa\x00_" + id.Random(20),
		"not-a-key",
		auth.PublicKeyPrefix + "aaaaaaaaaaaaaaaaaaaaaaaaa\x00_" + id.Random(20),
		auth.PublicKeyPrefix + strings.Repeat("A", 26) + "_" + id.Random(20),
		auth.PublicKeyPrefix + id.Random(16) + "_" + strings.Repeat("\xff", 32),
	} {
		if w := send("GET", "/v1/calls", key, ""); w.Code != 401 {
			t.Errorf("GET /v1/calls with key %q = %d, want 401", key, w.Code)
		}
	}
	if n := st.lookups.Load() - before; n != 0 {
		t.Errorf("keys with bytes no key has cost %d key lookups, want 0", n)
	}
}

// listCallsRoute is the route the authentication tests and benchmarks ask for.
var listCallsRoute = &route{method: "GET", path: "/v1/calls", scope: auth.CallsRead}
