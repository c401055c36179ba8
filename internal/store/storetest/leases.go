package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// RunTwoNodes runs the lease tests with two stores open on one database,
// as two nodes of a cluster are (each with its own connections): the
// outbox messages, analyses and scheduled attempts they claim concurrently
// are each leased to exactly one of them, none is lost, and a lease that
// expires lets the other node claim the row; two nodes dialing one attempt
// create one call. open returns two fresh, migrated stores on one new empty
// database and arranges for them to be closed.
func RunTwoNodes(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	for _, race := range []struct {
		name string
		run  func(t *testing.T, a, b store.Store)
	}{
		{"ClaimOutbox", claimOutboxRace},
		{"ClaimAnalyses", claimAnalysesRace},
		{"LeaseAttempts", leaseAttemptsRace},
		{"ClaimDials", claimDialsRace},
		{"DialClaim", dialClaimRace},
		{"DNCAddVsDial", dncRace},
	} {
		t.Run(race.name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			race.run(t, a, b)
		})
	}
}

// leaseAttemptsRace stores 60 due attempts through a and has a and b race
// for their dial leases (see leaseRace): two nodes' promoters never hand
// one attempt out twice, and a lease that runs out (its node died) lets
// the other node hand it out.
func leaseAttemptsRace(t *testing.T, a, b store.Store) {
	var dates []time.Time
	for i := range 10 {
		dates = append(dates, at(time.Duration(i)*time.Millisecond))
	}
	newScheduleFixture(t, a, 6, dates...)
	leaseRace(t, "LeaseAttempts", a, b, 60, func(ctx context.Context, s store.Store, now time.Time, limit int) ([]string, error) {
		as, err := s.LeaseAttempts(ctx, now, lease, limit, schedule.Caps{})
		return attemptIDs(as), err
	})
}

// claimDialsRace: the dialers of two nodes claim the attempts the
// promoter handed out; each is held by one of them at a time.
func claimDialsRace(t *testing.T, a, b store.Store) {
	var dates []time.Time
	for i := range 10 {
		dates = append(dates, at(time.Duration(i)*time.Millisecond))
	}
	newScheduleFixture(t, a, 6, dates...)
	// Handed out for longer than the race lasts.
	handed, err := a.LeaseAttempts(t.Context(), at(time.Hour), 24*time.Hour, 1000, schedule.Caps{})
	must(t, "LeaseAttempts", err)
	if len(handed) != 60 {
		t.Fatalf("LeaseAttempts handed out %d attempts; want 60", len(handed))
	}
	leaseRace(t, "ClaimDials", a, b, 60, func(ctx context.Context, s store.Store, now time.Time, limit int) ([]string, error) {
		ds, err := s.ClaimDials(ctx, now, lease, limit)
		return dialIDs(ds), err
	})
}

// dialClaimRace has two nodes create a call for each of 20 attempts at the
// same moment (two dial jobs of one attempt: a stranded one rescued late,
// and the one of its next lease): for each attempt exactly one CreateCall
// succeeds, the other is a Conflict, and the attempt links the winner's call.
func dialClaimRace(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	f := newScheduleFixture(t, a, 20, at(0))
	for _, att := range f.attempts {
		calls := [2]call.Call{scheduledCall(f, att, at(time.Second)), scheduledCall(f, att, at(time.Second))}
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, s := range []store.Store{a, b} {
			wg.Go(func() {
				<-start
				errs[i] = s.CreateCall(ctx, calls[i])
			})
		}
		close(start)
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Errorf("attempt %s: both nodes' CreateCall succeeded; want one", att.ID)
				}
				won = i
			case !apperr.Is(err, apperr.Conflict):
				t.Errorf("attempt %s: node %c's CreateCall = %v; want nil or a conflict", att.ID, 'a'+i, err)
			}
		}
		if won < 0 {
			t.Errorf("attempt %s: neither node's CreateCall succeeded; want one", att.ID)
			continue
		}
		got, _, err := a.GetAttempt(ctx, att.ID)
		must(t, "GetAttempt", err)
		if got.State != schedule.Dialed || got.CallID != calls[won].ID {
			t.Errorf("attempt %s after the race: state %s, call %s; want dialed with node %c's call %s", att.ID, got.State, got.CallID, 'a'+won, calls[won].ID)
		}
		if _, err := a.GetCall(ctx, f.orgID, calls[1-won].ID); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("attempt %s: the losing node's call %s was stored (err %v); want not found", att.ID, calls[1-won].ID, err)
		}
	}
}

// claimFunc leases up to limit rows at now on one store and returns their ids.
type claimFunc func(ctx context.Context, s store.Store, now time.Time, limit int) ([]string, error)

// Workers per node and rows per claim in the races: small claims, so that
// the workers' transactions overlap many times.
const (
	raceWorkers = 4
	raceLimit   = 3
)

// claimOutboxRace queues 120 messages through a and has a and b race for
// their leases (see leaseRace).
func claimOutboxRace(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	o := mustOrg(t, a, "Acme")
	for range 3 {
		mustWebhook(t, a, o.ID, evEnded)
	}
	const events = 40
	for i := range events {
		ev := newEvent(evEnded, at(time.Duration(i)*time.Millisecond))
		must(t, "QueueEvent", a.QueueEvent(ctx, o.ID, ev, ev.At))
	}
	leaseRace(t, "ClaimOutbox", a, b, 3*events, func(ctx context.Context, s store.Store, now time.Time, limit int) ([]string, error) {
		ms, err := s.ClaimOutbox(ctx, now, lease, limit)
		return msgIDs(ms), err
	})
}

// claimAnalysesRace ends 60 calls through a and has a and b race for their
// analyses' leases (see leaseRace).
func claimAnalysesRace(t *testing.T, a, b store.Store) {
	o := mustOrg(t, a, "Acme")
	const calls = 60
	for i := range calls {
		mustEndedCall(t, a, o.ID, at(time.Duration(i)*time.Millisecond))
	}
	leaseRace(t, "ClaimAnalyses", a, b, calls, func(ctx context.Context, s store.Store, now time.Time, limit int) ([]string, error) {
		as, err := s.ClaimAnalyses(ctx, now, lease, limit)
		return analysisIDs(as), err
	})
}

// leaseRace checks the leases of the n claimable rows of a store open as
// nodes a and b (which may be the same store):
//
//  1. a alone leases 10 rows;
//  2. a and b, several workers each, claim at the same time until nothing
//     is left: every other row is leased exactly once, none of a's 10;
//  3. before the leases end, b claims nothing;
//  4. after they end, b alone leases all n rows, a's included;
//  5. after b's leases end, a and b race again: each row exactly once.
func leaseRace(t *testing.T, name string, a, b store.Store, n int, claim claimFunc) {
	t.Helper()
	ctx := t.Context()
	once := func(step string, s store.Store, now time.Time, limit int) []string {
		t.Helper()
		got, err := claim(ctx, s, now, limit)
		must(t, fmt.Sprintf("%s: %s(now %v, limit %d)", step, name, now, limit), err)
		return got
	}
	// drain claims on s alone until a claim returns nothing.
	drain := func(step string, s store.Store, now time.Time) []string {
		t.Helper()
		var out []string
		for {
			got := once(step, s, now, raceLimit)
			if len(got) == 0 {
				return out
			}
			out = append(out, got...)
		}
	}
	// exactlyOnce checks that got holds want distinct ids, none twice.
	exactlyOnce := func(step string, got []string, want int) {
		t.Helper()
		if dup := duplicates(got); len(dup) > 0 {
			t.Errorf("%s: %s leased %d row(s) twice within one lease, among them %v", step, name, len(dup), dup[:min(len(dup), 3)])
		}
		if distinct := len(slices.Compact(slices.Sorted(slices.Values(got)))); distinct != want {
			t.Errorf("%s: %s leased %d distinct rows; want %d", step, name, distinct, want)
		}
	}

	now := at(time.Hour)
	first := once("node a alone", a, now, 10)
	if len(first) != 10 {
		t.Fatalf("node a alone: %s(limit 10) of %d claimable = %d rows; want 10", name, n, len(first))
	}

	byNode := claimConcurrently(t, name, []store.Store{a, b}, claim, now)
	raced := slices.Concat(byNode...)
	exactlyOnce("race at the same time", raced, n-10)
	for _, x := range raced {
		if slices.Contains(first, x) {
			t.Errorf("race: %s leased %s again while node a held its lease", name, x)
		}
	}
	exactlyOnce("node a alone, then the race", append(slices.Clone(first), raced...), n)
	t.Logf("%s race: node a leased %d rows, node b %d", name, len(byNode[0]), len(byNode[1]))
	for i, s := range []store.Store{a, b} {
		if left := once("after the race", s, now, n); len(left) != 0 {
			t.Errorf("after the race: node %c leased %d more rows; want none (all leased)", 'a'+i, len(left))
		}
	}

	if got := once("before the leases end", b, now.Add(lease-time.Millisecond), n); len(got) != 0 {
		t.Errorf("before the leases end: node b leased %v; want none", got)
	}

	later := now.Add(lease + time.Millisecond)
	all := drain("after the leases end", b, later)
	exactlyOnce("node b alone after the leases end", all, n)
	for _, x := range first {
		if !slices.Contains(all, x) {
			t.Errorf("after node a's lease ended: node b did not lease %s", x)
		}
	}

	again := claimConcurrently(t, name, []store.Store{a, b}, claim, later.Add(lease+time.Millisecond))
	exactlyOnce("race after node b's leases end", slices.Concat(again...), n)
}

// claimConcurrently has raceWorkers goroutines per node claim at now until
// a claim returns nothing, all starting at once; it returns the ids each
// node claimed, repeats included.
func claimConcurrently(t *testing.T, name string, nodes []store.Store, claim claimFunc, now time.Time) [][]string {
	t.Helper()
	ctx := t.Context()
	var mu sync.Mutex
	out := make([][]string, len(nodes))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range nodes {
		for range raceWorkers {
			wg.Go(func() {
				<-start
				for {
					got, err := claim(ctx, s, now, raceLimit)
					if err != nil {
						t.Errorf("node %c: %s(now %v, limit %d) racing: %v", 'a'+i, name, now, raceLimit, err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					out[i] = append(out[i], got...)
					mu.Unlock()
				}
			})
		}
	}
	close(start)
	wg.Wait()
	return out
}
