package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/throttle"
)

// handshake is a refused-or-not handshake served without a network, from
// the client address remote.
func handshake(srv *Server, query, remote string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", "/new-web-call/connection?"+query, nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	return w
}

// TestRefusalLogsAggregated: a flood of refused handshakes writes one line
// for the first and one count per window, not a line each.
func TestRefusalLogsAggregated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		mem := newMemory()
		srv := New(Config{Store: mem, Calls: mem, Runtime: testRuntime(t, mem), Log: slog.New(slog.NewJSONHandler(&buf, nil))})
		for i := range 1000 {
			w := handshake(srv, "call_id="+id.New(id.Call)+"&assistant_id="+id.New(id.Assistant), "192.0.2.1:1234")
			if w.Code != http.StatusNotFound {
				t.Fatalf("refusal %d = %d, want 404", i, w.Code)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], `"count":999`) || !strings.Contains(lines[1], `"not_found":999`) {
			t.Errorf("log after 1000 refused handshakes = %d lines:\n%.2000s\nwant 2: the first refusal, then a count of 999 by reason", len(lines), buf.String())
		}
		if err := srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// countingStore counts call lookups.
type countingStore struct {
	*memory
	lookups atomic.Int64
}

func (c *countingStore) GetCallAnyOrg(ctx context.Context, callID string) (call.Call, error) {
	c.lookups.Add(1)
	return c.memory.GetCallAnyOrg(ctx, callID)
}

// TestRefusalsThrottled: refused handshakes spend their client's budget and
// then get 429 with Retry-After without a lookup; the client is the peer
// unless the peer is a trusted proxy; ids that cannot be ids are refused
// before any lookup.
func TestRefusalsThrottled(t *testing.T) {
	checkLeaks(t)
	mem := newMemory()
	st := &countingStore{memory: mem}
	proxies, err := throttle.ParseProxies("10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Store: st, Calls: mem, Runtime: testRuntime(t, mem), Proxies: proxies,
		Refusals: throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: 3})})
	t.Cleanup(func() { srv.Close(context.Background()) })
	unknown := func() string { return "call_id=" + id.New(id.Call) + "&assistant_id=" + id.New(id.Assistant) }

	for _, q := range []string{"call_id=c%00&assistant_id=" + id.New(id.Assistant), "call_id=call_" + strings.Repeat("A", 26) + "&assistant_id=" + id.New(id.Assistant),
		"call_id=" + id.New(id.Call) + "&assistant_id=asst_%ff"} {
		if w := handshake(srv, q, "192.0.2.50:1"); w.Code != http.StatusNotFound {
			t.Errorf("handshake %s = %d, want 404", q, w.Code)
		}
	}
	if n := st.lookups.Load(); n != 0 {
		t.Errorf("ids that cannot be ids cost %d lookups, want 0", n)
	}

	for i := range 3 {
		if w := handshake(srv, unknown(), "192.0.2.1:1"); w.Code != http.StatusNotFound {
			t.Fatalf("refusal %d = %d, want 404 within the burst", i+1, w.Code)
		}
	}
	before := st.lookups.Load()
	w := handshake(srv, unknown(), "192.0.2.1:2")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"code":"rate_limited"`) {
		t.Errorf("past the burst = %d Retry-After %q %s, want 429 rate_limited with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if n := st.lookups.Load() - before; n != 0 {
		t.Errorf("a throttled handshake cost %d lookups, want 0", n)
	}
	if w := handshake(srv, unknown(), "10.0.0.1:3", "X-Forwarded-For", "192.0.2.1"); w.Code != http.StatusTooManyRequests {
		t.Errorf("the same client through the trusted proxy = %d, want 429", w.Code)
	}
	if w := handshake(srv, unknown(), "10.0.0.1:3", "X-Forwarded-For", "192.0.2.2"); w.Code != http.StatusNotFound {
		t.Errorf("another client through the trusted proxy = %d, want 404", w.Code)
	}
	if w := handshake(srv, unknown(), "192.0.2.3:3", "X-Forwarded-For", "192.0.2.1"); w.Code != http.StatusNotFound {
		t.Errorf("X-Forwarded-For from a peer that is not a proxy = %d, want 404 (the peer's own budget)", w.Code)
	}
	if got := srv.Stats().Refusals; got["not_found"] != 8 || got["rate_limited"] != 2 {
		t.Errorf("Stats().Refusals = %v, want not_found 8, rate_limited 2", got)
	}
}

// TestShutdownRefusalsSampled: handshakes refused because the server is
// shutting down (the listener outlives the gateway's Close) are logged by
// sample like any refusal, at Info: they are expected, not server faults.
func TestShutdownRefusalsSampled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		mem := newMemory()
		a := assistant.Assistant{ID: id.New(id.Assistant), OrgID: id.New(id.Org), Name: "Ava", MaxDurationSeconds: 600, SilenceTimeoutSeconds: 30}
		mem.assistants[a.ID] = a
		now := time.Now().UTC()
		c := mem.add(call.Call{ID: id.New(id.Call), OrgID: a.OrgID, Type: call.Web, Status: call.Queued, AssistantID: a.ID, CreatedAt: now, UpdatedAt: now})
		srv := New(Config{Store: mem, Calls: mem, Runtime: testRuntime(t, mem), Log: slog.New(slog.NewJSONHandler(&buf, nil))})
		if err := srv.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := range 100 {
			w := handshake(srv, "call_id="+c.ID+"&assistant_id="+a.ID, "192.0.2.1:1234", "Connection", "Upgrade", "Upgrade", "websocket",
				"Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			if w.Code != http.StatusServiceUnavailable {
				t.Fatalf("handshake %d after Close = %d %s, want 503", i, w.Code, w.Body)
			}
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 || !strings.Contains(lines[0], `"level":"INFO"`) || !strings.Contains(lines[1], `"unavailable":99`) {
			t.Errorf("log after 100 handshakes refused in shutdown = %d lines:\n%.2000s\nwant 2: the first at INFO, then a count of 99", len(lines), buf.String())
		}
	})
}

// slowStore is a countingStore whose lookups take a while, so concurrent
// handshakes overlap the way a flood's do.
type slowStore struct{ countingStore }

func (s *slowStore) GetCallAnyOrg(ctx context.Context, callID string) (call.Call, error) {
	time.Sleep(time.Millisecond)
	return s.countingStore.GetCallAnyOrg(ctx, callID)
}

// TestConcurrentRefusalsBounded: a client's concurrent handshakes for
// unknown calls get no more lookups than it has refusals left.
func TestConcurrentRefusalsBounded(t *testing.T) {
	const burst, flood = 20, 300
	mem := newMemory()
	st := &slowStore{countingStore{memory: mem}}
	srv := New(Config{Store: st, Calls: mem, Runtime: testRuntime(t, mem),
		Refusals: throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: burst})})
	t.Cleanup(func() { srv.Close(context.Background()) })
	unknown := func() string { return "call_id=" + id.New(id.Call) + "&assistant_id=" + id.New(id.Assistant) }
	if w := handshake(srv, unknown(), "192.0.2.1:1"); w.Code != http.StatusNotFound {
		t.Fatalf("first unknown call = %d, want 404", w.Code)
	}
	before := st.lookups.Load()
	var wg sync.WaitGroup
	for range flood {
		wg.Go(func() { handshake(srv, unknown(), "192.0.2.1:2") })
	}
	wg.Wait()
	if n := st.lookups.Load() - before; n > burst-1 {
		t.Errorf("%d concurrent handshakes with %d refusals left cost %d lookups, want at most %d", flood, burst-1, n, burst-1)
	}
}

// TestMethodRefusalSpendsBudget: a handshake that is not a GET is a 405
// that spends the client's refusal budget, as the protocol document says.
func TestMethodRefusalSpendsBudget(t *testing.T) {
	mem := newMemory()
	srv := New(Config{Store: mem, Calls: mem, Runtime: testRuntime(t, mem),
		Refusals: throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: 2})})
	t.Cleanup(func() { srv.Close(context.Background()) })
	for range 2 {
		r := httptest.NewRequest("POST", "/new-web-call/connection?call_id="+id.New(id.Call)+"&assistant_id="+id.New(id.Assistant), nil)
		r.RemoteAddr = "192.0.2.1:1"
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != http.StatusMethodNotAllowed {
			t.Fatalf("POST handshake = %d, want 405", w.Code)
		}
	}
	if w := handshake(srv, "call_id="+id.New(id.Call)+"&assistant_id="+id.New(id.Assistant), "192.0.2.1:2"); w.Code != http.StatusTooManyRequests {
		t.Errorf("GET after two 405s with a burst of 2 = %d, want 429", w.Code)
	}
}
