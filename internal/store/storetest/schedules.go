package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// scheduleFixture is an organization with a purchased number, contacts on
// it and a stored schedule whose attempts are listed in due order.
type scheduleFixture struct {
	orgID    string
	purchase phone.Purchase
	contacts []phone.Contact
	sc       schedule.Schedule
	attempts []schedule.Attempt
}

// mustSchedule stores a schedule on p for the contacts, one attempt per
// (date, contact). The attempts are handed to CreateSchedule in reverse due
// order so that reading them back in due order means something.
func mustSchedule(t *testing.T, s store.Store, orgID string, p phone.Purchase, contacts []phone.Contact, dates []time.Time, created time.Time) (schedule.Schedule, []schedule.Attempt) {
	t.Helper()
	cids := ids(contacts, func(c phone.Contact) string { return c.ID })
	sc, as := newScheduleWith(orgID, p.ID, cids, dates, created)
	in := slices.Clone(as)
	slices.Reverse(in)
	must(t, fmt.Sprintf("CreateSchedule(%s, %d attempts)", sc.ID, len(in)), s.CreateSchedule(t.Context(), sc, in))
	return sc, as
}

func newScheduleFixture(t *testing.T, s store.Store, nContacts int, dates ...time.Time) scheduleFixture {
	t.Helper()
	o := mustOrg(t, s, "Acme")
	p := mustPurchase(t, s, o.ID, number(1))
	cs := mustContacts(t, s, o.ID, p.ID, numbers(100, nContacts)...)
	sc, as := mustSchedule(t, s, o.ID, p, cs, dates, t0)
	return scheduleFixture{orgID: o.ID, purchase: p, contacts: cs, sc: sc, attempts: as}
}

// scheduledCall is the call a dialer places for attempt a.
func scheduledCall(f scheduleFixture, a schedule.Attempt, created time.Time) call.Call {
	c := newCall(f.orgID, call.Phone, created)
	c.PurchaseID, c.AttemptID = f.purchase.ID, a.ID
	return c
}

// checkAttempts reads the schedule back and compares its attempts, in
// order, with want (ignoring UpdatedAt).
func checkAttempts(t *testing.T, s store.Store, step string, f scheduleFixture, want []schedule.Attempt) []schedule.Attempt {
	t.Helper()
	_, got, err := s.GetSchedule(t.Context(), f.orgID, f.sc.ID)
	if err != nil {
		t.Fatalf("%s: GetSchedule(%s): unexpected error: %v", step, f.sc.ID, err)
	}
	equal(t, fmt.Sprintf("%s: GetSchedule(%s) attempts", step, f.sc.ID), norm(got, normAttemptNoUpdated), norm(want, normAttemptNoUpdated))
	return got
}

func testSchedules(t *testing.T, open Opener) {
	d1, d2 := at(24*time.Hour+123*time.Microsecond), at(48*time.Hour)

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 2, d1, d2)
		other := mustOrg(t, s, "Other")

		sc, as, err := s.GetSchedule(ctx, f.orgID, f.sc.ID)
		must(t, "GetSchedule", err)
		equal(t, fmt.Sprintf("GetSchedule(%s) schedule", f.sc.ID), normSchedule(sc), normSchedule(f.sc))
		equal(t, fmt.Sprintf("GetSchedule(%s) attempts (in due order, CallStatus -1 before dialing)", f.sc.ID),
			norm(as, normAttemptNoUpdated), norm(f.attempts, normAttemptNoUpdated))
		if len(as) == 4 && !sameIDs(t, "GetSchedule attempts order", attemptIDs(as), attemptIDs(f.attempts)) {
			t.Logf("due times: %v", ids(as, func(a schedule.Attempt) string { return a.DueAt.String() }))
		}

		_, _, err = s.GetSchedule(ctx, other.ID, f.sc.ID)
		wantKind(t, "GetSchedule(other org, id)", err, apperr.NotFound)
		_, _, err = s.GetSchedule(ctx, f.orgID, id.New(id.Schedule))
		wantKind(t, "GetSchedule(unknown id)", err, apperr.NotFound)

		a, asc, err := s.GetAttempt(ctx, f.attempts[2].ID)
		must(t, "GetAttempt", err)
		equal(t, fmt.Sprintf("GetAttempt(%s) attempt", f.attempts[2].ID), normAttemptNoUpdated(a), normAttemptNoUpdated(f.attempts[2]))
		settings := f.sc
		settings.Dates, settings.ContactIDs = nil, nil
		equal(t, fmt.Sprintf("GetAttempt(%s) schedule (its settings: no dates, no contacts)", f.attempts[2].ID), normSchedule(asc), normSchedule(settings))
		_, _, err = s.GetAttempt(ctx, id.New(id.Attempt))
		wantKind(t, "GetAttempt(unknown id)", err, apperr.NotFound)
	})

	t.Run("DialFailCancel", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 2, d1, d2)
		other := mustOrg(t, s, "Other")
		want := slices.Clone(f.attempts)
		a := f.attempts

		// Dialing a[0] links the call.
		c1 := mustCall(t, s, scheduledCall(f, a[0], d1))
		want[0].State, want[0].CallID, want[0].CallStatus = schedule.Dialed, c1.ID, int(call.Queued)
		checkAttempts(t, s, "after CreateCall(attempt 0)", f, want)
		got, _, err := s.GetAttempt(ctx, a[0].ID)
		must(t, "GetAttempt", err)
		equal(t, "GetAttempt(attempt 0) after CreateCall", normAttemptNoUpdated(got), normAttemptNoUpdated(want[0]))

		// A second call for the same attempt is refused and nothing is stored.
		c2 := scheduledCall(f, a[0], d1.Add(time.Second))
		err = s.CreateCall(ctx, c2)
		wantKind(t, "CreateCall(second call for a dialed attempt)", err, apperr.Conflict)
		_, err = s.GetCall(ctx, f.orgID, c2.ID)
		wantKind(t, "GetCall of the refused second call", err, apperr.NotFound)
		_, err = s.GetCallAnyOrg(ctx, c2.ID)
		wantKind(t, "GetCallAnyOrg of the refused second call", err, apperr.NotFound)
		listCalls(t, s, f.orgID, store.CallFilter{Page: page(1, 10)}, []call.Call{c1}, 1)
		listCalls(t, s, f.orgID, store.CallFilter{Status: statusPtr(call.Queued), Page: page(1, 10)}, []call.Call{c1}, 1)
		checkAttempts(t, s, "after a refused second CreateCall", f, want)

		// The attempt shows its call's status and outcome.
		c1.Status, c1.Outcome, c1.EndedReason, c1.EndedAt, c1.UpdatedAt = call.Ended, call.Completed, call.ReasonCustomerEnded, d1.Add(time.Minute), d1.Add(time.Minute)
		must(t, "UpdateCall", s.UpdateCall(ctx, c1, call.Queued))
		want[0].CallStatus, want[0].CallOutcome = int(call.Ended), string(call.Completed)
		checkAttempts(t, s, "after the call ended", f, want)

		// FailAttempt.
		tf := at(time.Hour + 600*time.Microsecond)
		must(t, "FailAttempt", s.FailAttempt(ctx, a[1].ID, "contact deleted", tf))
		want[1].State, want[1].Error = schedule.Failed, "contact deleted"
		got2 := checkAttempts(t, s, "after FailAttempt(attempt 1)", f, want)
		if len(got2) == 4 && !got2[1].UpdatedAt.Equal(msTime(tf)) {
			t.Errorf("FailAttempt(attempt 1, at %v) then GetSchedule: UpdatedAt = %v; want %v", tf, got2[1].UpdatedAt, msTime(tf))
		}
		wantErr(t, "FailAttempt(an attempt already failed)", s.FailAttempt(ctx, a[1].ID, "again", at(2*time.Hour)))
		wantErr(t, "FailAttempt(a dialed attempt)", s.FailAttempt(ctx, a[0].ID, "too late", at(2*time.Hour)))
		wantErr(t, "FailAttempt(unknown id)", s.FailAttempt(ctx, id.New(id.Attempt), "nope", at(2*time.Hour)))
		checkAttempts(t, s, "after refused FailAttempts", f, want)

		// CancelSchedule cancels the pending attempts only.
		_, err = s.CancelSchedule(ctx, other.ID, f.sc.ID, at(2*time.Hour))
		wantKind(t, "CancelSchedule(other org, id)", err, apperr.NotFound)
		_, err = s.CancelSchedule(ctx, f.orgID, id.New(id.Schedule), at(2*time.Hour))
		wantKind(t, "CancelSchedule(unknown id)", err, apperr.NotFound)
		checkAttempts(t, s, "after refused CancelSchedules", f, want)

		tc := at(3*time.Hour + 900*time.Microsecond)
		ch, err := s.CancelSchedule(ctx, f.orgID, f.sc.ID, tc)
		n := ch.CanceledAttempts
		must(t, "CancelSchedule", err)
		if n != 2 {
			t.Errorf("CancelSchedule(1 dialed, 1 failed, 2 pending) = %d; want 2", n)
		}
		want[2].State, want[3].State = schedule.Canceled, schedule.Canceled
		got3 := checkAttempts(t, s, "after CancelSchedule", f, want)
		for i := 2; i < len(got3); i++ {
			if !got3[i].UpdatedAt.Equal(msTime(tc)) {
				t.Errorf("CancelSchedule(at %v) then GetSchedule: attempt %d UpdatedAt = %v; want %v", tc, i, got3[i].UpdatedAt, msTime(tc))
			}
		}
		sc, _, err := s.GetSchedule(ctx, f.orgID, f.sc.ID)
		must(t, "GetSchedule", err)
		if !sc.CanceledAt.Equal(msTime(tc)) {
			t.Errorf("CancelSchedule(at %v) then GetSchedule: CanceledAt = %v; want %v", tc, sc.CanceledAt, msTime(tc))
		}
		ch, err = s.CancelSchedule(ctx, f.orgID, f.sc.ID, at(5*time.Hour))
		n = ch.CanceledAttempts
		must(t, "CancelSchedule (again)", err)
		if n != 0 {
			t.Errorf("CancelSchedule of a canceled schedule = %d; want 0", n)
		}
		sc, _, err = s.GetSchedule(ctx, f.orgID, f.sc.ID)
		must(t, "GetSchedule", err)
		if !sc.CanceledAt.Equal(msTime(tc)) {
			t.Errorf("second CancelSchedule then GetSchedule: CanceledAt = %v; want the first time %v", sc.CanceledAt, msTime(tc))
		}

		// A canceled attempt cannot be dialed any more.
		c3 := scheduledCall(f, a[2], d2)
		wantKind(t, "CreateCall(call for a canceled attempt)", s.CreateCall(ctx, c3), apperr.Conflict)
		_, err = s.GetCall(ctx, f.orgID, c3.ID)
		wantKind(t, "GetCall of the refused call", err, apperr.NotFound)
		listCalls(t, s, f.orgID, store.CallFilter{Page: page(1, 10)}, []call.Call{c1}, 1)
		wantErr(t, "FailAttempt(a canceled attempt)", s.FailAttempt(ctx, a[3].ID, "late", at(6*time.Hour)))
		checkAttempts(t, s, "after refused operations on canceled attempts", f, want)
	})

	t.Run("LeaseAttempts", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 3, d1) // created at t0
		a := f.attempts
		const lease = 10 * time.Minute
		leaseAt := func(step string, now time.Time, limit int, want []schedule.Attempt, wantLeases int) []schedule.Attempt {
			t.Helper()
			got, err := s.LeaseAttempts(ctx, now, lease, limit, schedule.Caps{})
			must(t, "LeaseAttempts", err)
			call := fmt.Sprintf("%s: LeaseAttempts(now %v, limit %d)", step, now, limit)
			sameIDSet(t, call, attemptIDs(got), attemptIDs(want))
			for _, g := range got {
				if g.State != schedule.Pending || g.ScheduleID != f.sc.ID || g.OrgID != f.orgID || g.ContactID == "" {
					t.Errorf("%s returned %+v; want a pending attempt of schedule %s", call, g, f.sc.ID)
				}
				if g.Leases != wantLeases || !g.LeasedUntil.Equal(msTime(now.Add(lease))) {
					t.Errorf("%s: attempt %s Leases %d, LeasedUntil %v; want %d, %v", call, g.ID, g.Leases, g.LeasedUntil, wantLeases, msTime(now.Add(lease)))
				}
			}
			return got
		}
		leased := func(step string, now time.Time, want int) {
			t.Helper()
			n, err := s.LeasedAttempts(ctx, now)
			must(t, "LeasedAttempts", err)
			if n != want {
				t.Errorf("%s: LeasedAttempts(now %v) = %d; want %d", step, now, n, want)
			}
		}
		// The fixture's attempts fall due at d1, d1+1m and d1+2m.
		leaseAt("before the first is due", d1.Add(-time.Millisecond), 100, nil, 1)
		leased("before any lease", d1, 0)
		leaseAt("when the first is due", d1, 100, a[:1], 1)
		leaseAt("the first is leased", d1.Add(time.Second), 100, nil, 1)
		leased("one leased", d1.Add(time.Second), 1)
		leased("the lease ran out", d1.Add(lease), 0)
		got, _, err := s.GetAttempt(ctx, a[0].ID)
		must(t, "GetAttempt", err)
		if got.Leases != 1 || !got.LeasedUntil.Equal(msTime(d1.Add(lease))) || got.State != schedule.Pending {
			t.Errorf("GetAttempt after one lease: Leases %d, LeasedUntil %v, state %s; want 1, %v, pending", got.Leases, got.LeasedUntil, got.State, msTime(d1.Add(lease)))
		}
		// All due (a0 still leased): the limit holds, then the rest.
		t1 := d1.Add(2 * time.Minute)
		leaseAt("limit 1 when all are due: the earliest due unleased", t1, 1, a[1:2], 1)
		leaseAt("the rest", t1, 100, a[2:], 1)
		leased("three leased", t1, 3)
		// a0's lease ran out undialed: handed out again, as its second lease.
		leaseAt("a0's lease ran out", d1.Add(lease), 100, a[:1], 2)
		// Dialed, failed and canceled attempts are never leased nor counted.
		mustCall(t, s, scheduledCall(f, a[0], d1))
		must(t, "FailAttempt", s.FailAttempt(ctx, a[1].ID, "no", at(time.Minute)))
		leaseAt("after dialing a0 and failing a1", t1.Add(lease), 100, a[2:], 2)
		leased("only a2 leased", t1.Add(lease), 1)
		_, err = s.CancelSchedule(ctx, f.orgID, f.sc.ID, at(time.Hour))
		must(t, "CancelSchedule", err)
		leased("after cancel", t1.Add(time.Hour), 0)
		leaseAt("after cancel", t1.Add(2*time.Hour), 100, nil, 0)
	})

	t.Run("ClaimDials", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 3, d1) // due at d1, d1+1m, d1+2m
		a := f.attempts
		const handOut, hold = 10 * time.Minute, time.Minute
		claimAt := func(step string, now time.Time, limit int, want []schedule.Attempt) {
			t.Helper()
			got, err := s.ClaimDials(ctx, now, hold, limit)
			must(t, "ClaimDials", err)
			call := fmt.Sprintf("%s: ClaimDials(now %v, limit %d)", step, now, limit)
			sameIDSet(t, call, dialIDs(got), attemptIDs(want))
			numberOf := map[string]string{}
			for _, c := range f.contacts {
				numberOf[c.ID] = c.PhoneNumber
			}
			for _, g := range got {
				if g.State != schedule.Pending || g.ScheduleID != f.sc.ID || g.OrgID != f.orgID || g.ContactID == "" || g.Leases != 1 {
					t.Errorf("%s returned %+v; want a pending attempt of schedule %s handed out once", call, g, f.sc.ID)
				}
				if g.PurchaseID != f.purchase.ID || g.To != numberOf[g.ContactID] {
					t.Errorf("%s returned attempt %s with number %q, to %q; want the schedule's %s, to its contact's %q", call, g.ID, g.PurchaseID, g.To, f.purchase.ID, numberOf[g.ContactID])
				}
				// What the call's variables are made of: the contact and
				// the schedule's message and zone.
				for _, c := range f.contacts {
					if c.ID == g.ContactID && (g.Contact.ID != c.ID || g.Contact.Name != c.Name || g.Contact.PhoneNumber != c.PhoneNumber ||
						g.Contact.Timezone != c.Timezone || string(g.Contact.Metadata) != string(c.Metadata)) {
						t.Errorf("%s returned attempt %s with contact %+v; want %+v", call, g.ID, g.Contact, c)
					}
				}
				if g.Message != f.sc.Message || g.Timezone != f.sc.Timezone {
					t.Errorf("%s returned attempt %s with message %q, zone %q; want the schedule's %q, %q", call, g.ID, g.Message, g.Timezone, f.sc.Message, f.sc.Timezone)
				}
			}
		}
		t1 := d1.Add(2 * time.Minute)
		claimAt("nothing handed out", t1, 100, nil)
		handed, err := s.LeaseAttempts(ctx, t1, handOut, 2, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		sameIDSet(t, "LeaseAttempts(limit 2)", attemptIDs(handed), attemptIDs(a[:2]))
		claimAt("limit 1: the earliest due", t1, 1, a[:1])
		claimAt("the other one handed out", t1, 100, a[1:2])
		claimAt("both held", t1.Add(hold-time.Millisecond), 100, nil)
		claimAt("both holds ended: claimed again", t1.Add(hold), 100, a[:2])
		mustCall(t, s, scheduledCall(f, a[0], t1))
		claimAt("a0 dialed", t1.Add(2*hold), 100, a[1:2])
		claimAt("the hand-out ended: the promoter must hand it out again", t1.Add(handOut), 100, nil)
		_, err = s.LeaseAttempts(ctx, t1.Add(handOut), handOut, 100, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		_, err = s.CancelSchedule(ctx, f.orgID, f.sc.ID, t1.Add(handOut))
		must(t, "CancelSchedule", err)
		claimAt("canceled", t1.Add(handOut+2*hold), 100, nil)
	})

	t.Run("LeaseAttemptsConcurrently", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		var dates []time.Time
		for i := range 50 {
			dates = append(dates, d1.Add(time.Duration(i)*time.Second))
		}
		f := newScheduleFixture(t, s, 4, dates...) // 200 attempts
		const workers = 4
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for {
					got, err := s.LeaseAttempts(ctx, d1.Add(time.Hour), time.Minute, 7, schedule.Caps{})
					if err != nil {
						t.Errorf("LeaseAttempts: %v", err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					for _, a := range got {
						seen[a.ID]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(seen) != len(f.attempts) {
			t.Errorf("%d concurrent LeaseAttempts leased %d distinct attempts; want all %d", workers, len(seen), len(f.attempts))
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%d concurrent LeaseAttempts leased attempt %s %d times; want once", workers, id, n)
			}
		}
	})

	t.Run("ManyAttempts", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		var dates []time.Time
		for i := range 325 {
			dates = append(dates, d1.Add(time.Duration(i)*time.Hour))
		}
		f := newScheduleFixture(t, s, 2, dates...) // 650 attempts
		checkAttempts(t, s, "650 attempts", f, f.attempts)
		now := d1.Add(400 * time.Hour)
		got, err := s.LeaseAttempts(ctx, now, time.Minute, 1000, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		sameIDSet(t, "LeaseAttempts of 650 attempts", attemptIDs(got), attemptIDs(f.attempts))
		if n, err := s.LeasedAttempts(ctx, now); err != nil || n != 650 {
			t.Errorf("LeasedAttempts after leasing 650 = %d, %v; want 650", n, err)
		}
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 1000, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		if len(got) != 0 {
			t.Errorf("LeaseAttempts again within the lease = %d attempts; want none", len(got))
		}
		ch, err := s.CancelSchedule(ctx, f.orgID, f.sc.ID, at(time.Hour))
		n := ch.CanceledAttempts
		must(t, "CancelSchedule", err)
		if n != 650 {
			t.Errorf("CancelSchedule(650 pending) = %d; want 650", n)
		}
	})

	t.Run("ListSchedules", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		p := mustPurchase(t, s, o.ID, number(1))
		cs := mustContacts(t, s, o.ID, p.ID, numbers(100, 2)...)
		po := mustPurchase(t, s, other.ID, number(2))
		cso := mustContacts(t, s, other.ID, po.ID, numbers(200, 1)...)

		s1, a1 := mustSchedule(t, s, o.ID, p, cs, []time.Time{d1, d2}, at(time.Second))
		s2, _ := mustSchedule(t, s, o.ID, p, cs, []time.Time{d1}, at(2*time.Second))
		s3, _ := mustSchedule(t, s, o.ID, p, cs[:1], []time.Time{d2}, at(3*time.Second))
		mustSchedule(t, s, other.ID, po, cso, []time.Time{d1}, at(4*time.Second))

		// s1: a1[0] dialed, call live ("calling"); a1[1] failed; a1[2]
		// dialed, call ended ("completed"); a1[3] pending.
		live := newCall(o.ID, call.Phone, d1)
		live.PurchaseID, live.AttemptID = p.ID, a1[0].ID
		mustCall(t, s, live)
		must(t, "FailAttempt", s.FailAttempt(ctx, a1[1].ID, "no", at(time.Hour)))
		done := newCall(o.ID, call.Phone, d2)
		done.PurchaseID, done.AttemptID = p.ID, a1[2].ID
		mustCall(t, s, done)
		done.Status, done.Outcome, done.EndedAt, done.UpdatedAt = call.Ended, call.Voicemail, d2.Add(time.Minute), d2.Add(time.Minute)
		must(t, "UpdateCall(ended)", s.UpdateCall(ctx, done, call.Queued))
		ch, err := s.CancelSchedule(ctx, o.ID, s2.ID, at(2*time.Hour))
		n := ch.CanceledAttempts
		must(t, "CancelSchedule", err)
		if n != 2 {
			t.Fatalf("CancelSchedule(s2) = %d; want 2", n)
		}
		s2.CanceledAt = at(2 * time.Hour)

		// Attempts are counted by schedule.Progress.
		progress := []string{string(schedule.Pending), "calling", "completed", string(schedule.Canceled), string(schedule.Failed)}
		s1Counts := map[string]int{"pending": 1, "calling": 1, "completed": 1, "failed": 1}
		for _, tc := range []struct {
			p      store.Page
			want   []schedule.Schedule
			counts []map[string]int
		}{
			{page(1, 10), []schedule.Schedule{s3, s2, s1}, []map[string]int{{"pending": 1}, {"canceled": 2}, s1Counts}},
			{page(2, 2), []schedule.Schedule{s1}, []map[string]int{s1Counts}},
			{page(3, 2), nil, nil},
		} {
			list, total, err := s.ListSchedules(ctx, o.ID, tc.p)
			call := fmt.Sprintf("ListSchedules(org, %s)", describePage(tc.p))
			must(t, call, err)
			if total != 3 {
				t.Errorf("%s: total = %d; want 3", call, total)
			}
			var got []schedule.Schedule
			for _, x := range list {
				got = append(got, normSchedule(x.Schedule))
			}
			if !equal(t, call, got, norm(tc.want, normSchedule)) {
				continue
			}
			for i, x := range list {
				for _, pr := range progress {
					if x.Attempts[pr] != tc.counts[i][pr] {
						t.Errorf("%s: schedule %d (%s) has %d %s attempts; want %d (all counts %v)", call, i, x.ID, x.Attempts[pr], pr, tc.counts[i][pr], x.Attempts)
					}
				}
				for k, n := range x.Attempts {
					if n != 0 && !slices.Contains(progress, k) {
						t.Errorf("%s: schedule %d (%s) counts %d attempts under %q, which is no progress (want one of %v)", call, i, x.ID, n, k, progress)
					}
				}
			}
		}
		_, total, err := s.ListSchedules(ctx, other.ID, page(1, 10))
		must(t, "ListSchedules(other org)", err)
		if total != 1 {
			t.Errorf("ListSchedules(other org) total = %d; want 1", total)
		}
	})

	t.Run("CancelWithNonePending", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 2, d1)
		c := mustCall(t, s, scheduledCall(f, f.attempts[0], d1))
		// Its call has ended: a live one makes the cancel stick (campaigns.go).
		ended := c
		must(t, "Transition", ended.Transition(call.Change{To: call.Ended, At: d1.Add(time.Minute), Outcome: call.Completed, Reason: call.ReasonCustomerEnded}))
		must(t, "UpdateCall(ended)", s.UpdateCall(ctx, ended, call.Queued))
		must(t, "FailAttempt", s.FailAttempt(ctx, f.attempts[1].ID, "no", at(time.Hour)))
		want := slices.Clone(f.attempts)
		want[0].State, want[0].CallID, want[0].CallStatus, want[0].CallOutcome = schedule.Dialed, c.ID, int(call.Ended), string(call.Completed)
		want[1].State, want[1].Error = schedule.Failed, "no"

		ch, err := s.CancelSchedule(ctx, f.orgID, f.sc.ID, at(2*time.Hour))
		n := ch.CanceledAttempts
		must(t, "CancelSchedule", err)
		if n != 0 {
			t.Errorf("CancelSchedule(schedule with no pending attempt) = %d; want 0", n)
		}
		sc, _, err := s.GetSchedule(ctx, f.orgID, f.sc.ID)
		must(t, "GetSchedule", err)
		equal(t, "GetSchedule after CancelSchedule of a schedule with none pending (left as it is)", normSchedule(sc), normSchedule(f.sc))
		checkAttempts(t, s, "after CancelSchedule with none pending", f, want)
	})

	t.Run("RaceDialCancel", func(t *testing.T) { raceDialCancel(t, open) })
	t.Run("RaceScheduleRelease", func(t *testing.T) { raceScheduleRelease(t, open) })

	t.Run("ReleaseWithPendingAttempts", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 2, d1)
		q := mustPurchase(t, s, f.orgID, number(2))
		qcs := mustContacts(t, s, f.orgID, q.ID, numbers(300, 1)...)
		mustSchedule(t, s, f.orgID, q, qcs, []time.Time{d1}, t0) // pending on another number

		// One attempt dialed, one still pending: the release is refused.
		mustCall(t, s, scheduledCall(f, f.attempts[0], d1))
		err := s.ReleasePurchase(ctx, f.orgID, f.purchase.ID, at(time.Hour))
		wantKind(t, "ReleasePurchase(number with a pending attempt)", err, apperr.Conflict)
		got, err := s.GetPurchase(ctx, f.orgID, f.purchase.ID)
		must(t, "GetPurchase after a refused release", err)
		equal(t, "GetPurchase after a refused release", normPurchase(got), normPurchase(f.purchase))
		_, total, err := s.ListContacts(ctx, f.orgID, f.purchase.ID, page(1, 10))
		must(t, "ListContacts after a refused release", err)
		if total != 2 {
			t.Errorf("ListContacts after a refused release: total = %d; want 2", total)
		}
		held, err := s.HeldNumbers(ctx, provider)
		must(t, "HeldNumbers", err)
		if !held[f.purchase.Number] {
			t.Errorf("HeldNumbers after a refused release = %v; want it to hold %s", held, f.purchase.Number)
		}

		ch, err := s.CancelSchedule(ctx, f.orgID, f.sc.ID, at(2*time.Hour))
		n := ch.CanceledAttempts
		must(t, "CancelSchedule", err)
		if n != 1 {
			t.Errorf("CancelSchedule = %d; want 1", n)
		}
		must(t, "ReleasePurchase after CancelSchedule", s.ReleasePurchase(ctx, f.orgID, f.purchase.ID, at(3*time.Hour)))
		_, err = s.GetPurchase(ctx, f.orgID, f.purchase.ID)
		wantKind(t, "GetPurchase after ReleasePurchase", err, apperr.NotFound)
		wantKind(t, "ReleasePurchase(q with a pending attempt)", s.ReleasePurchase(ctx, f.orgID, q.ID, at(3*time.Hour)), apperr.Conflict)
	})
}
