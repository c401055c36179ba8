package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/store"
)

// wantRecord checks a ReserveIdempotency answer that must be a stored record.
func wantRecord(t *testing.T, call string, got *store.Idempotent, err error, hash string, status int, body string, created time.Time) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: unexpected error: %v", call, err)
		return
	}
	if got == nil {
		t.Errorf("%s = nil; want the stored record {hash %s, status %d, body %q}", call, hash, status, body)
		return
	}
	if got.RequestHash != hash || got.Status != status || string(got.Body) != body || !got.CreatedAt.Equal(msTime(created)) {
		t.Errorf("%s = {hash %s, status %d, body %q, created %v}; want {hash %s, status %d, body %q, created %v}",
			call, got.RequestHash, got.Status, got.Body, got.CreatedAt, hash, status, body, msTime(created))
	}
}

// wantReserved checks a ReserveIdempotency answer that must claim the key.
func wantReserved(t *testing.T, call string, got *store.Idempotent, err error) {
	t.Helper()
	if err != nil || got != nil {
		t.Errorf("%s = %+v, %v; want nil, nil (reserved)", call, got, err)
	}
}

func testIdempotency(t *testing.T, open Opener) {
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		org := id.New(id.Org)
		first := at(100 * time.Microsecond)

		rec, err := s.ReserveIdempotency(ctx, org, "k1", "hash-a", first)
		wantReserved(t, "ReserveIdempotency(k1, hash-a) first", rec, err)
		rec, err = s.ReserveIdempotency(ctx, org, "k1", "hash-a", at(time.Second))
		wantRecord(t, "ReserveIdempotency(k1) while in flight", rec, err, "hash-a", 0, "", first)
		rec, err = s.ReserveIdempotency(ctx, org, "k1", "hash-b", at(time.Second))
		wantRecord(t, "ReserveIdempotency(k1, another hash) while in flight", rec, err, "hash-a", 0, "", first)

		body := `{"id":"call_x","status":0}`
		must(t, "CompleteIdempotency", s.CompleteIdempotency(ctx, org, "k1", 201, []byte(body)))
		rec, err = s.ReserveIdempotency(ctx, org, "k1", "hash-a", at(2*time.Second))
		wantRecord(t, "ReserveIdempotency(k1) after CompleteIdempotency(201)", rec, err, "hash-a", 201, body, first)

		must(t, "ReleaseIdempotency", s.ReleaseIdempotency(ctx, org, "k1"))
		rec, err = s.ReserveIdempotency(ctx, org, "k1", "hash-c", at(3*time.Second))
		wantReserved(t, "ReserveIdempotency(k1) after ReleaseIdempotency", rec, err)
		rec, err = s.ReserveIdempotency(ctx, org, "k1", "hash-a", at(4*time.Second))
		wantRecord(t, "ReserveIdempotency(k1) after the new reservation", rec, err, "hash-c", 0, "", at(3*time.Second))

		must(t, "ReleaseIdempotency(unknown key)", s.ReleaseIdempotency(ctx, org, "never-reserved"))
	})

	t.Run("PerOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a, b := id.New(id.Org), id.New(id.Org)
		rec, err := s.ReserveIdempotency(ctx, a, "same-key", "hash-a", t0)
		wantReserved(t, "ReserveIdempotency(org A, same-key)", rec, err)
		rec, err = s.ReserveIdempotency(ctx, b, "same-key", "hash-b", t0)
		wantReserved(t, "ReserveIdempotency(org B, same-key) while A holds it", rec, err)
		must(t, "CompleteIdempotency(B)", s.CompleteIdempotency(ctx, b, "same-key", 200, []byte("b")))
		rec, err = s.ReserveIdempotency(ctx, a, "same-key", "hash-a", t0)
		wantRecord(t, "ReserveIdempotency(org A, same-key) after B completed", rec, err, "hash-a", 0, "", t0)
		must(t, "ReleaseIdempotency(A)", s.ReleaseIdempotency(ctx, a, "same-key"))
		rec, err = s.ReserveIdempotency(ctx, b, "same-key", "hash-b", t0)
		wantRecord(t, "ReserveIdempotency(org B, same-key) after A released", rec, err, "hash-b", 200, "b", t0)
	})

	t.Run("Purge", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		org := id.New(id.Org)
		old, edge, young := t0, at(30*time.Minute), at(time.Hour)
		for k, when := range map[string]time.Time{"old": old, "edge": edge, "young": young} {
			rec, err := s.ReserveIdempotency(ctx, org, k, "h-"+k, when)
			wantReserved(t, fmt.Sprintf("ReserveIdempotency(%s)", k), rec, err)
		}
		must(t, "CompleteIdempotency(old)", s.CompleteIdempotency(ctx, org, "old", 200, []byte("x")))
		must(t, "PurgeIdempotency", s.PurgeIdempotency(ctx, edge.Truncate(time.Millisecond)))

		rec, err := s.ReserveIdempotency(ctx, org, "old", "h-new", at(2*time.Hour))
		wantReserved(t, "ReserveIdempotency(key created before the purge time)", rec, err)
		rec, err = s.ReserveIdempotency(ctx, org, "edge", "h-x", at(2*time.Hour))
		wantRecord(t, "ReserveIdempotency(key created exactly at the purge time)", rec, err, "h-edge", 0, "", edge)
		rec, err = s.ReserveIdempotency(ctx, org, "young", "h-x", at(2*time.Hour))
		wantRecord(t, "ReserveIdempotency(key created after the purge time)", rec, err, "h-young", 0, "", young)
	})

	t.Run("ConcurrentReserve", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		org := id.New(id.Org)
		const n = 8
		recs := make([]*store.Idempotent, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				recs[i], errs[i] = s.ReserveIdempotency(ctx, org, "race", fmt.Sprintf("h%d", i), t0)
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i := range n {
			if errs[i] != nil {
				t.Errorf("ReserveIdempotency(racer %d) error = %v", i, errs[i])
				continue
			}
			if recs[i] == nil {
				if winner >= 0 {
					t.Errorf("ReserveIdempotency: racers %d and %d both got the reservation", winner, i)
				}
				winner = i
			}
		}
		if winner < 0 {
			t.Fatalf("ReserveIdempotency from %d goroutines: nobody got the reservation", n)
		}
		for i := range n {
			if recs[i] != nil && recs[i].RequestHash != fmt.Sprintf("h%d", winner) {
				t.Errorf("ReserveIdempotency(racer %d) = record with hash %s; want the winner's h%d", i, recs[i].RequestHash, winner)
			}
		}
	})
}
