package storetest

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"switchboard/internal/id"
)

func testRateLimits(t *testing.T, open Opener) {
	t.Run("AddAndRead", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a, b, c := id.New(id.Key), id.New(id.PublicKey), id.New(id.Key)
		got, err := s.RateSpend(ctx, time.Time{})
		if err != nil || len(got) != 0 {
			t.Fatalf("RateSpend(zero) on an empty store = %v, %v; want {}, nil", got, err)
		}
		must(t, "AddRateSpend(nothing)", s.AddRateSpend(ctx, nil, at(0)))
		must(t, "AddRateSpend(a 3, b 1, c 0)", s.AddRateSpend(ctx, map[string]int64{a: 3, b: 1, c: 0}, at(time.Second)))
		must(t, "AddRateSpend(a 2)", s.AddRateSpend(ctx, map[string]int64{a: 2}, at(3*time.Second)))
		// A node whose clock is behind does not move a key's change back.
		must(t, "AddRateSpend(b 4) dated earlier", s.AddRateSpend(ctx, map[string]int64{b: 4, c: -1}, at(500*time.Millisecond)))

		for _, tc := range []struct {
			since time.Duration
			want  map[string]int64
		}{
			{0, map[string]int64{a: 5, b: 5}},
			{time.Second, map[string]int64{a: 5, b: 5}},
			{time.Second + time.Millisecond, map[string]int64{a: 5}},
			{3 * time.Second, map[string]int64{a: 5}},
			{4 * time.Second, map[string]int64{}},
		} {
			got, err := s.RateSpend(ctx, at(tc.since))
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("RateSpend(t0+%v) = %v, %v; want %v", tc.since, got, err, tc.want)
			}
		}

		must(t, "PurgeRateSpend(t0+2s)", s.PurgeRateSpend(ctx, at(2*time.Second)))
		if got, err := s.RateSpend(ctx, time.Time{}); err != nil || !maps.Equal(got, map[string]int64{a: 5}) {
			t.Errorf("RateSpend after PurgeRateSpend(t0+2s) = %v, %v; want only %s: 5", got, err, a)
		}
		// A purged key starts again from zero.
		must(t, "AddRateSpend(b 2) after its purge", s.AddRateSpend(ctx, map[string]int64{b: 2}, at(5*time.Second)))
		if got, err := s.RateSpend(ctx, at(5*time.Second)); err != nil || !maps.Equal(got, map[string]int64{b: 2}) {
			t.Errorf("RateSpend(t0+5s) = %v, %v; want {%s: 2}", got, err, b)
		}
	})

	// Concurrent: nodes adding to the same keys at once (in any order of
	// their maps) lose no count and do not deadlock.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		keys := make([]string, 150) // more than one statement's worth
		for i := range keys {
			keys[i] = fmt.Sprintf("key_%03d", i)
		}
		const nodes, rounds = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, nodes*rounds)
		for n := range nodes {
			wg.Go(func() {
				for r := range rounds {
					batch := map[string]int64{}
					for _, k := range keys {
						batch[k] = int64(n + 1)
					}
					errs <- s.AddRateSpend(ctx, batch, at(time.Duration(r)*time.Millisecond))
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("AddRateSpend from %d nodes at once: %v", nodes, err)
			}
		}
		got, err := s.RateSpend(ctx, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		want := int64(rounds * (1 + 2 + 3 + 4))
		for _, k := range keys {
			if got[k] != want {
				t.Fatalf("RateSpend()[%s] = %d after %d nodes × %d rounds, want %d", k, got[k], nodes, rounds, want)
			}
		}
	})
}
