package httpapi

import (
	"log/slog"
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/store/sqlite"
)

// limitNodes is n Servers sharing one store, each with a per-key limit of
// rate a second (burst twice that) and a clock the test moves.
func limitNodes(t *testing.T, n int, rate float64) ([]*Server, *time.Time) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "limits.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	nodes := make([]*Server, n)
	for i := range nodes {
		s := New(Config{RateLimit: rate}, db, nil, nil, slog.New(slog.DiscardHandler), nil)
		s.now = func() time.Time { return now }
		t.Cleanup(s.Close)
		nodes[i] = s
	}
	return nodes, &now
}

func syncAll(t *testing.T, nodes []*Server) {
	t.Helper()
	for i, s := range nodes {
		if err := s.SyncLimits(t.Context()); err != nil {
			t.Fatalf("node %d: SyncLimits: %v", i, err)
		}
	}
}

// TestSharedLimitsDebt: two nodes that each spent a key's burst before
// hearing of each other owe the other's spend once they sync: both refuse,
// with the Retry-After of the debt, until the cluster is back under the
// rate.
func TestSharedLimitsDebt(t *testing.T) {
	nodes, now := limitNodes(t, 2, 5) // burst 10
	kid := id.New(id.Key)
	syncAll(t, nodes) // nothing to share yet
	for i, s := range nodes {
		for j := range 10 {
			if ok, _ := s.keyLimiters.secret.allow(kid, *now); !ok {
				t.Fatalf("node %d: request %d of the burst refused", i, j+1)
			}
		}
		if ok, wait := s.keyLimiters.secret.allow(kid, *now); ok || wait != 200*time.Millisecond {
			t.Fatalf("node %d: request 11 = %v, wait %v; want refused, wait 200ms (one token at 5/s)", i, ok, wait)
		}
	}
	// Node 0's second sync reads node 1's push: it owes node 1's 10
	// (tokens -10, one token in 11/5 s). Node 1 first read the key's count
	// after both had spent: it starts from that count and owes nothing
	// (a node's first sight of a key is the (N−1)·burst of the bound).
	syncAll(t, nodes)
	syncAll(t, nodes)
	for i, want := range []time.Duration{2200 * time.Millisecond, 200 * time.Millisecond} {
		if ok, wait := nodes[i].keyLimiters.secret.allow(kid, *now); ok || wait != want {
			t.Errorf("node %d after syncing: allow = %v, wait %v; want refused, wait %v", i, ok, wait, want)
		}
	}
	// From now on each hears of the other's spend: node 1 spends one token
	// after 200 ms, which node 0 then owes too.
	*now = now.Add(200 * time.Millisecond)
	if ok, _ := nodes[1].keyLimiters.secret.allow(kid, *now); !ok {
		t.Fatal("node 1: refused once a token is back")
	}
	syncAll(t, nodes)
	syncAll(t, nodes)
	// Node 0: -10 + 1 (200 ms) - 1 (node 1's) = -10: one token in 2.2 s.
	if ok, wait := nodes[0].keyLimiters.secret.allow(kid, *now); ok || wait != 2200*time.Millisecond {
		t.Errorf("node 0 after node 1's request: allow = %v, wait %v; want refused, wait 2.2s", ok, wait)
	}
	*now = now.Add(2200 * time.Millisecond)
	for i, s := range nodes {
		if ok, _ := s.keyLimiters.secret.allow(kid, *now); !ok {
			t.Errorf("node %d: refused once the debt is paid", i)
		}
	}
	// Unknown keys and keys of the other kind are not debited: a sync
	// that reads a publishable key's count with publishable limits off
	// leaves it alone.
	if err := nodes[0].store.AddRateSpend(t.Context(), map[string]int64{id.New(id.PublicKey): 5}, *now); err != nil {
		t.Fatal(err)
	}
	syncAll(t, nodes)
	if n := countBuckets(nodes[1].keyLimiters.secret); n != 1 {
		t.Errorf("node 1 holds %d secret-key buckets, want 1", n)
	}
}

func countBuckets(l *keyLimits) int {
	n := 0
	l.buckets.Range(func(any, any) bool { n++; return true })
	return n
}

// TestSharedLimitsBound: N nodes that all try a key every 10 ms for a
// minute and sync every 250 ms admit together no more than the bound
// docs/api.md states, burst + rate·T + (N−1)·(burst + rate·D), with D two
// sync intervals; and not less than rate·T: sharing does not starve the
// key. Without sharing they would admit N times as much.
func TestSharedLimitsBound(t *testing.T) {
	const (
		rate  = 5.0
		burst = 2 * rate
		T     = time.Minute
		tick  = 10 * time.Millisecond
		every = 250 * time.Millisecond
	)
	for _, n := range []int{2, 3} {
		nodes, now := limitNodes(t, n, rate)
		kid := id.New(id.Key)
		start := *now
		admitted := make([]int, n)
		for elapsed := time.Duration(0); elapsed < T; elapsed += tick {
			*now = start.Add(elapsed)
			for i, s := range nodes {
				if ok, _ := s.keyLimiters.secret.allow(kid, *now); ok {
					admitted[i]++
				}
			}
			if elapsed%every == 0 {
				syncAll(t, nodes)
			}
		}
		total := 0
		for _, a := range admitted {
			total += a
		}
		d := 2 * every
		bound := burst + rate*T.Seconds() + float64(n-1)*(burst+rate*d.Seconds())
		t.Logf("%d nodes, %v at %g/s (burst %g), sync every %v: admitted %d %v; bound %g, rate·T %g, unshared %g",
			n, T, rate, burst, every, total, admitted, bound, rate*T.Seconds(), float64(n)*(burst+rate*T.Seconds()))
		if float64(total) > bound {
			t.Errorf("%d nodes admitted %d requests of one key in %v, over the stated bound %g", n, total, T, bound)
		}
		if float64(total) < math.Floor(rate*T.Seconds()) {
			t.Errorf("%d nodes admitted %d requests of one key in %v, under rate·T = %g: sharing starves the key", n, total, T, rate*T.Seconds())
		}
		for i, a := range admitted {
			if a == 0 {
				t.Errorf("node %d admitted nothing", i)
			}
		}
	}
}

// BenchmarkKeyLimit is the per-key rate limit on the hot path: the
// authentication of a request with a good key with the limit off and on
// (a rate it never reaches), and the bucket alone, one request at a time
// and from every CPU at once on one key (they share its lock). Sharing the
// limit across nodes adds nothing here: SyncLimits runs beside the
// requests, every 250 ms.
func BenchmarkKeyLimit(b *testing.B) {
	k, secret := auth.NewKey(id.New(id.Org), "k", []string{auth.CallsRead}, time.Now())
	for _, limit := range []float64{0, 1e9} {
		s := New(Config{RateLimit: limit}, &keyStore{key: k}, nil, nil, slog.New(slog.DiscardHandler), nil)
		b.Cleanup(s.Close)
		name := "authenticate-off"
		if limit > 0 {
			name = "authenticate-on"
		}
		b.Run(name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/v1/calls", nil)
			r.Header.Set("X-API-Key", secret)
			for b.Loop() {
				if err := s.authenticate(r.Context(), &request{Request: r}, listCallsRoute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	l := newKeyLimits(1e9, 2e9)
	kid := id.New(id.Key)
	b.Run("bucket", func(b *testing.B) {
		for b.Loop() {
			if ok, _ := l.allow(kid, time.Now()); !ok {
				b.Fatal("refused")
			}
		}
	})
	b.Run("bucket-parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if ok, _ := l.allow(kid, time.Now()); !ok {
					b.Error("refused")
					return
				}
			}
		})
	})
}
