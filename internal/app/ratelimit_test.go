package app

import (
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRateLimitAcrossNodes: two nodes on one PostgreSQL share a key's rate
// limit. Clients hammer both with the same key for a few seconds; together
// the nodes answer no more than the bound docs/api.md states (burst +
// rate·T + (N−1)·(burst + rate·D), D two sync intervals plus a sync's
// time), where each node alone would have admitted burst + rate·T, and
// both together twice that. The clients go on past T until some request
// was refused (a loaded machine may send fewer than the limit allows in
// T), so every run shows the limit at work.
func TestRateLimitAcrossNodes(t *testing.T) {
	t.Parallel()
	base := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if base == "" {
		t.Skip("rate limits are shared only on PostgreSQL: set SWITCHBOARD_TEST_POSTGRES (./scripts/ensure-postgres.sh)")
	}
	const (
		rate      = 5.0 // burst 10
		T         = 3 * time.Second
		most      = 60 * time.Second // for a machine too busy to outpace the limit in T
		syncEvery = 100 * time.Millisecond
	)
	dbURL := freshPostgres(t, base)
	cfg := testConfig(dbURL)
	cfg.RateLimit, cfg.RateLimitSync = rate, syncEvery
	a := start(t, cfg)
	b := start(t, cfg)
	key := a.key

	var ok, limited, other [2]atomic.Int64
	var wg sync.WaitGroup
	begin := time.Now()
	stop, giveUp := begin.Add(T), begin.Add(most)
	going := func() bool {
		now := time.Now()
		return now.Before(stop) || (limited[0].Load()+limited[1].Load() == 0 && now.Before(giveUp))
	}
	for i, node := range []*testBundle{a, b} {
		for range 4 {
			wg.Go(func() {
				client := &http.Client{Timeout: 5 * time.Second}
				for going() {
					rq, _ := http.NewRequest("GET", node.m.URL()+"/v1/assistants", nil)
					rq.Header.Set("X-API-Key", key)
					r, err := client.Do(rq)
					if err != nil {
						other[i].Add(1)
						continue
					}
					r.Body.Close()
					switch r.StatusCode {
					case 200:
						ok[i].Add(1)
					case 429:
						if r.Header.Get("Retry-After") == "" {
							t.Errorf("node %d: 429 without Retry-After", i)
						}
						limited[i].Add(1)
					default:
						other[i].Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(begin).Seconds()
	total := ok[0].Load() + ok[1].Load()
	burst := 2 * rate
	// D: a node hears of the other's admissions within two syncs plus the
	// sync's own time; a second of allowance covers a loaded machine.
	d := (2*syncEvery + time.Second).Seconds()
	bound := burst + rate*elapsed + (burst + rate*d)
	t.Logf("two nodes, one key at %g/s (burst %g) for %.2fs, sync %v: admitted %d (%d + %d), refused %d + %d, other %d + %d; bound %.0f, one node alone %.0f",
		rate, burst, elapsed, syncEvery, total, ok[0].Load(), ok[1].Load(), limited[0].Load(), limited[1].Load(),
		other[0].Load(), other[1].Load(), bound, burst+rate*elapsed)
	if other[0].Load()+other[1].Load() > 0 {
		t.Errorf("requests answered neither 200 nor 429: %d + %d", other[0].Load(), other[1].Load())
	}
	if float64(total) > bound {
		t.Errorf("two nodes admitted %d requests of one key in %.2fs, over the stated bound %.0f", total, elapsed, bound)
	}
	for i := range 2 {
		if ok[i].Load() == 0 {
			t.Errorf("node %d admitted nothing", i)
		}
	}
	if limited[0].Load()+limited[1].Load() == 0 {
		t.Errorf("no request was refused in %.0fs: the clients sent %d, less than the limit allows", elapsed, total)
	}
}
