package storetest

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// Campaign settings of schedules (issue 12): hours, retries, caps, pause.

// campaignSchedule stores a schedule of n contacts on a new number of
// orgID, one attempt each due at due, with the settings set by with.
func campaignSchedule(t *testing.T, s store.Store, orgID string, n int, due time.Time, with func(*schedule.Schedule)) scheduleFixture {
	t.Helper()
	base := 900_000 + int(campaignNumbers.Add(1))*100
	p := mustPurchase(t, s, orgID, number(base))
	cs := mustContacts(t, s, orgID, p.ID, numbers(base+1, n)...)
	sc, as := newScheduleWith(orgID, p.ID, ids(cs, func(c phone.Contact) string { return c.ID }), []time.Time{due}, t0)
	for i := range as {
		as[i].DueAt, as[i].RequestedAt = due, due
	}
	if with != nil {
		with(&sc)
	}
	must(t, "CreateSchedule", s.CreateSchedule(t.Context(), sc, as))
	return scheduleFixture{orgID: orgID, purchase: p, contacts: cs, sc: sc, attempts: as}
}

func testCampaigns(t *testing.T, open Opener) {
	t.Run("SettingsRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		f := campaignSchedule(t, s, o.ID, 2, at(time.Hour), func(sc *schedule.Schedule) {
			sc.Hours = schedule.CallingHours{Start: "09:00", End: "17:30", Days: []string{"mon", "fri"}}
			sc.Retry = schedule.RetryPolicy{Busy: schedule.Retry{AfterMinutes: 0.5, MaxAttempts: 3}, Failed: schedule.Retry{AfterMinutes: 5, MaxAttempts: 1}}
			sc.MaxConcurrentCalls = 7
		})
		sc, as, err := s.GetSchedule(ctx, o.ID, f.sc.ID)
		must(t, "GetSchedule", err)
		equal(t, "GetSchedule settings", normSchedule(sc), normSchedule(f.sc))
		for _, a := range as {
			if !a.RequestedAt.Equal(msTime(at(time.Hour))) || len(a.Tries) != 0 {
				t.Errorf("GetSchedule attempt %s: RequestedAt %v, Tries %v; want %v and none", a.ID, a.RequestedAt, a.Tries, msTime(at(time.Hour)))
			}
		}
		// A schedule of none of the settings reads back as none (any time, no retry).
		plain := campaignSchedule(t, s, o.ID, 1, at(time.Hour), nil)
		sc, _, err = s.GetSchedule(ctx, o.ID, plain.sc.ID)
		must(t, "GetSchedule(plain)", err)
		if !sc.Hours.AnyTime() || sc.Retry != (schedule.RetryPolicy{}) || sc.MaxConcurrentCalls != 0 || !sc.PausedAt.IsZero() {
			t.Errorf("GetSchedule(plain) settings = %+v %+v %d %v; want none", sc.Hours, sc.Retry, sc.MaxConcurrentCalls, sc.PausedAt)
		}
	})

	t.Run("ContactZones", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 2, at(time.Hour))
		other := mustOrg(t, s, "Other")
		unknown := id.New(id.Contact)
		got, err := s.ContactZones(ctx, f.orgID, f.purchase.ID, []string{f.contacts[0].ID, unknown, f.contacts[1].ID})
		must(t, "ContactZones", err)
		want := map[string]string{f.contacts[0].ID: "Europe/Paris", f.contacts[1].ID: "Europe/Paris"}
		equal(t, "ContactZones(2 contacts and an unknown id)", got, want)
		got, err = s.ContactZones(ctx, other.ID, f.purchase.ID, []string{f.contacts[0].ID})
		must(t, "ContactZones(other org)", err)
		if len(got) != 0 {
			t.Errorf("ContactZones(other org) = %v; want none", got)
		}
	})

	t.Run("OrgCaps", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		got, err := s.GetOrgCaps(ctx, o.ID)
		must(t, "GetOrgCaps", err)
		if got != (schedule.Caps{}) {
			t.Errorf("GetOrgCaps(new org) = %+v; want none", got)
		}
		must(t, "SetOrgCaps", s.SetOrgCaps(ctx, o.ID, schedule.Caps{PerOrg: 5, PerNumber: 2}))
		got, err = s.GetOrgCaps(ctx, o.ID)
		must(t, "GetOrgCaps", err)
		if got != (schedule.Caps{PerOrg: 5, PerNumber: 2}) {
			t.Errorf("GetOrgCaps after SetOrgCaps(5, 2) = %+v", got)
		}
		wantKind(t, "SetOrgCaps(unknown org)", s.SetOrgCaps(ctx, id.New(id.Org), schedule.Caps{PerOrg: 1}), apperr.NotFound)
		_, err = s.GetOrgCaps(ctx, id.New(id.Org))
		wantKind(t, "GetOrgCaps(unknown org)", err, apperr.NotFound)
	})

	t.Run("LeaseUnderCaps", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		now := at(2 * time.Hour)
		// capped: 30 attempts due first, at most 2 live; free: 3 due later,
		// on another number, no cap of its own. The capped schedule's
		// backlog must not hold the free one back.
		capped := campaignSchedule(t, s, o.ID, 30, at(time.Minute), func(sc *schedule.Schedule) { sc.MaxConcurrentCalls = 2 })
		free := campaignSchedule(t, s, o.ID, 3, at(time.Hour), nil)
		got, err := s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		bySched := map[string]int{}
		for _, a := range got {
			bySched[a.ScheduleID]++
		}
		if bySched[capped.sc.ID] != 2 || bySched[free.sc.ID] != 3 {
			t.Fatalf("LeaseAttempts(limit 10) leased %d of the schedule capped at 2 and %d of the free one; want 2 and 3", bySched[capped.sc.ID], bySched[free.sc.ID])
		}
		// Leased and undialed count as live: nothing more of it.
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts again", err)
		if len(got) != 0 {
			t.Fatalf("LeaseAttempts with the cap reached leased %d; want 0", len(got))
		}
		// Dialing one keeps it live; its call's end makes room for one.
		_, as, err := s.GetSchedule(ctx, o.ID, capped.sc.ID)
		must(t, "GetSchedule", err)
		var dialed call.Call
		for _, a := range as {
			if a.LeasedUntil.After(now) {
				dialed = mustCall(t, s, scheduledCall(capped, a, now))
				break
			}
		}
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts after a dial", err)
		if len(got) != 0 {
			t.Fatalf("LeaseAttempts with a live call and a lease leased %d; want 0", len(got))
		}
		ended := dialed
		must(t, "Transition", ended.Transition(call.Change{To: call.Ended, At: now, Outcome: call.Completed, Reason: call.ReasonCustomerEnded}))
		must(t, "UpdateCall", s.UpdateCall(ctx, ended, call.Queued))
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts after the call ended", err)
		if len(got) != 1 || got[0].ScheduleID != capped.sc.ID {
			t.Fatalf("LeaseAttempts after one call of the capped schedule ended leased %d; want 1 of it", len(got))
		}

		// The server's per-number cap, lowered by the organization's.
		o2 := mustOrg(t, s, "Beta")
		perNumber := campaignSchedule(t, s, o2.ID, 6, at(time.Minute), nil)
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{PerNumber: 4})
		must(t, "LeaseAttempts(per number 4)", err)
		if len(got) != 4 || got[0].ScheduleID != perNumber.sc.ID {
			t.Fatalf("LeaseAttempts(server cap 4 per number) leased %d; want 4", len(got))
		}
		must(t, "SetOrgCaps", s.SetOrgCaps(ctx, o2.ID, schedule.Caps{PerOrg: 5}))
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{PerNumber: 10})
		must(t, "LeaseAttempts(org cap 5)", err)
		if len(got) != 1 {
			t.Fatalf("LeaseAttempts under the organization's cap of 5 with 4 live leased %d; want 1", len(got))
		}
		// Caps never fail an attempt: the rest stay pending, unleased.
		_, as, err = s.GetSchedule(ctx, o2.ID, perNumber.sc.ID)
		must(t, "GetSchedule", err)
		waiting := 0
		for _, a := range as {
			if a.State == schedule.Pending && !a.LeasedUntil.After(now) {
				waiting++
			}
		}
		if waiting != 1 {
			t.Errorf("attempts over the caps = %d pending and unleased; want 1", waiting)
		}

		// A full number's backlog does not hold another number back: the
		// page after the first leaves the full number out.
		o3 := mustOrg(t, s, "Gamma")
		busy := campaignSchedule(t, s, o3.ID, 12, at(time.Minute), nil)
		later := campaignSchedule(t, s, o3.ID, 2, at(time.Hour), nil)
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 5, schedule.Caps{PerNumber: 2})
		must(t, "LeaseAttempts(per number 2, backlog on one number)", err)
		bySched = map[string]int{}
		for _, a := range got {
			bySched[a.ScheduleID]++
		}
		if bySched[busy.sc.ID] != 2 || bySched[later.sc.ID] != 2 || len(got) != 4 {
			t.Errorf("LeaseAttempts(limit 5, 2 per number) leased %d of the number with 12 due first, %d of the other (%d in all); want 2, 2 (4)",
				bySched[busy.sc.ID], bySched[later.sc.ID], len(got))
		}
	})

	t.Run("LeaseMovesToTheWindow", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		// t0 is 2025-03-14 (a Friday) 15:09 UTC, 16:09 in Paris (the
		// contacts' zone); the schedule's own zone (Asia/Tokyo) is not used.
		now := t0
		closed := campaignSchedule(t, s, o.ID, 1, at(-time.Minute), func(sc *schedule.Schedule) {
			sc.Timezone = "Asia/Tokyo"
			sc.Hours = schedule.CallingHours{Start: "08:00", End: "12:00", Days: []string{"mon", "fri"}}
		})
		open := campaignSchedule(t, s, o.ID, 1, at(-time.Minute), func(sc *schedule.Schedule) {
			sc.Hours = schedule.CallingHours{Start: "16:00", End: "17:00", Days: []string{"fri"}}
		})
		got, err := s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		if len(got) != 1 || got[0].ScheduleID != open.sc.ID {
			t.Fatalf("LeaseAttempts leased %v; want only the attempt inside its hours (%s)", attemptIDs(got), open.attempts[0].ID)
		}
		a, _, err := s.GetAttempt(ctx, closed.attempts[0].ID)
		must(t, "GetAttempt", err)
		next := time.Date(2025, 3, 17, 7, 0, 0, 0, time.UTC) // Monday 08:00 in Paris
		if a.State != schedule.Pending || !a.DueAt.Equal(next) || !a.RequestedAt.Equal(msTime(at(-time.Minute))) {
			t.Errorf("attempt outside its hours after LeaseAttempts = %s due %v requested %v; want pending, due %v (Monday 08:00 Paris), requested as asked", a.State, a.DueAt, a.RequestedAt, next)
		}
		got, err = s.LeaseAttempts(ctx, next, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts at the opening", err)
		if len(got) != 1 || got[0].ID != closed.attempts[0].ID {
			t.Errorf("LeaseAttempts at the next opening leased %v; want %s", attemptIDs(got), closed.attempts[0].ID)
		}
	})

	t.Run("PauseResume", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		mustWebhook(t, s, o.ID, "schedule.paused", "schedule.resumed")
		f := campaignSchedule(t, s, o.ID, 2, at(time.Minute), nil)
		now := at(time.Hour)
		leased, err := s.LeaseAttempts(ctx, now, time.Minute, 1, schedule.Caps{})
		must(t, "LeaseAttempts", err)
		if len(leased) != 1 {
			t.Fatalf("LeaseAttempts(limit 1) = %d; want 1", len(leased))
		}
		ev := func(typ string) event.Event {
			return event.Event{ID: id.New("evt"), Type: typ, At: now, Data: []byte(`{"scheduleId":"` + f.sc.ID + `"}`)}
		}
		for i, want := range []bool{true, false} {
			ch, err := s.SetSchedulePaused(ctx, o.ID, f.sc.ID, true, now, ev("schedule.paused"))
			must(t, "SetSchedulePaused(true)", err)
			if want := (store.ScheduleChange{Changed: want, Paused: true, State: schedule.StatePaused}); ch != want {
				t.Errorf("SetSchedulePaused(true) #%d = %+v; want %+v", i+1, ch, want)
			}
		}
		sc, _, err := s.GetSchedule(ctx, o.ID, f.sc.ID)
		must(t, "GetSchedule", err)
		if !sc.PausedAt.Equal(msTime(now)) {
			t.Errorf("PausedAt = %v; want %v", sc.PausedAt, msTime(now))
		}
		_, err = s.SetSchedulePaused(ctx, mustOrg(t, s, "Other").ID, f.sc.ID, true, now, ev("schedule.paused"))
		wantKind(t, "SetSchedulePaused(other org)", err, apperr.NotFound)

		// Paused: nothing is leased, and the claim of the attempt leased
		// before the pause gives it back undialed.
		got, err := s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts(paused)", err)
		if len(got) != 0 {
			t.Errorf("LeaseAttempts(paused) = %d; want 0", len(got))
		}
		c := scheduledCall(f, leased[0], now)
		wantKind(t, "CreateCall(attempt of a paused schedule)", s.CreateCall(ctx, c), apperr.Conflict)
		_, err = s.GetCall(ctx, o.ID, c.ID)
		wantKind(t, "GetCall(refused claim)", err, apperr.NotFound)
		a, _, err := s.GetAttempt(ctx, leased[0].ID)
		must(t, "GetAttempt", err)
		if a.State != schedule.Pending || !a.LeasedUntil.IsZero() || a.CallID != "" {
			t.Errorf("attempt after a paused claim = %s, leased until %v, call %q; want pending, given back, no call", a.State, a.LeasedUntil, a.CallID)
		}

		ch, err := s.SetSchedulePaused(ctx, o.ID, f.sc.ID, false, now, ev("schedule.resumed"))
		must(t, "SetSchedulePaused(false)", err)
		if want := (store.ScheduleChange{Changed: true, State: schedule.StateActive}); ch != want {
			t.Errorf("SetSchedulePaused(false) of a paused schedule = %+v; want %+v", ch, want)
		}
		got, err = s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		must(t, "LeaseAttempts(resumed)", err)
		if len(got) != 2 {
			t.Errorf("LeaseAttempts(resumed) = %d; want both attempts", len(got))
		}
		msgs, err := s.ClaimOutbox(ctx, now.Add(time.Minute), time.Minute, 10)
		must(t, "ClaimOutbox", err)
		var types []string
		for _, m := range msgs {
			types = append(types, m.Type)
		}
		slices.Sort(types)
		if !slices.Equal(types, []string{"schedule.paused", "schedule.resumed"}) {
			t.Errorf("events queued by pause, pause again, resume = %v; want one schedule.paused and one schedule.resumed", types)
		}
	})

	// A schedule that is over changes nothing: canceling, pausing or
	// resuming a finished schedule (no attempt pending nor calling), and
	// pausing or resuming a canceled one, answer Changed false with the
	// state it is in, and write nothing (no pausedAt, no canceledAt, no
	// event).
	t.Run("OverSchedules", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		mustWebhook(t, s, o.ID, "schedule.paused", "schedule.resumed")
		now := at(time.Hour)
		ev := func(typ string) event.Event { return newEvent(typ, now) }
		// Finished: its one attempt was dialed and its call ended.
		f := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		c := mustCall(t, s, scheduledCall(f, f.attempts[0], at(time.Minute)))
		prev := c.Status
		must(t, "Transition", c.Transition(call.Change{To: call.Ended, At: at(2 * time.Minute), Outcome: call.Completed, Reason: call.ReasonCustomerEnded}))
		must(t, "EndAttemptCall", s.EndAttemptCall(ctx, c, prev, store.AttemptEnd{}))
		finished := store.ScheduleChange{State: schedule.StateFinished}
		for _, tc := range []struct {
			name string
			do   func() (store.ScheduleChange, error)
		}{
			{"CancelSchedule", func() (store.ScheduleChange, error) { return s.CancelSchedule(ctx, o.ID, f.sc.ID, now) }},
			{"SetSchedulePaused(true)", func() (store.ScheduleChange, error) {
				return s.SetSchedulePaused(ctx, o.ID, f.sc.ID, true, now, ev("schedule.paused"))
			}},
			{"SetSchedulePaused(false)", func() (store.ScheduleChange, error) {
				return s.SetSchedulePaused(ctx, o.ID, f.sc.ID, false, now, ev("schedule.resumed"))
			}},
		} {
			ch, err := tc.do()
			must(t, tc.name+" of a finished schedule", err)
			if ch != finished {
				t.Errorf("%s of a finished schedule = %+v; want %+v", tc.name, ch, finished)
			}
		}
		sc, _, err := s.GetSchedule(ctx, o.ID, f.sc.ID)
		must(t, "GetSchedule", err)
		if !sc.PausedAt.IsZero() || !sc.CanceledAt.IsZero() {
			t.Errorf("finished schedule after cancel, pause, resume: PausedAt %v, CanceledAt %v; want both zero", sc.PausedAt, sc.CanceledAt)
		}
		// Canceled, nothing pending nor calling.
		g := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		if ch, err := s.CancelSchedule(ctx, o.ID, g.sc.ID, at(time.Minute)); err != nil || ch != (store.ScheduleChange{Changed: true, CanceledAttempts: 1, Canceled: true, State: schedule.StateCanceled}) {
			t.Fatalf("CancelSchedule(1 pending) = %+v, %v; want changed, 1 canceled, canceled", ch, err)
		}
		canceled := store.ScheduleChange{Canceled: true, State: schedule.StateCanceled}
		if ch, err := s.CancelSchedule(ctx, o.ID, g.sc.ID, now); err != nil || ch != canceled {
			t.Errorf("CancelSchedule of a canceled schedule = %+v, %v; want %+v", ch, err, canceled)
		}
		for _, paused := range []bool{true, false} {
			if ch, err := s.SetSchedulePaused(ctx, o.ID, g.sc.ID, paused, now, ev("schedule.paused")); err != nil || ch != canceled {
				t.Errorf("SetSchedulePaused(%v) of a canceled schedule = %+v, %v; want %+v", paused, ch, err, canceled)
			}
		}
		msgs, err := s.ClaimOutbox(ctx, now.Add(time.Minute), time.Minute, 10)
		must(t, "ClaimOutbox", err)
		for _, m := range msgs {
			if m.Type == "schedule.paused" || m.Type == "schedule.resumed" {
				t.Errorf("a pause or resume of a schedule that is over queued %s", m.Type)
			}
		}
	})

	t.Run("RacePauseClaim", func(t *testing.T) { racePauseClaim(t, open) })

	// CreateCalls decides each call of a batch as CreateCall would, in
	// one transaction: stored, suppressed (listed number), given back
	// (paused schedule), or refused (attempt no longer pending).
	t.Run("CreateCalls", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		f := campaignSchedule(t, s, o.ID, 5, at(time.Minute), nil)
		g := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		mustAddDNC(t, s, o.ID, newDNC(f.contacts[1].PhoneNumber, "", phone.DNCSourceAPI, "", at(time.Second)))
		_, err := s.SetSchedulePaused(ctx, o.ID, g.sc.ID, true, at(time.Second), newEvent("schedule.paused", at(time.Second)))
		must(t, "SetSchedulePaused", err)
		byContact := map[string]schedule.Attempt{}
		for _, a := range f.attempts {
			byContact[a.ContactID] = a
		}
		var ncs []store.NewCall
		for i, ct := range f.contacts {
			c := scheduledCall(f, byContact[ct.ID], at(time.Minute))
			c.To = ct.PhoneNumber
			ncs = append(ncs, store.NewCall{Call: c, Suppressed: []event.Event{newEvent("schedule.attempt.suppressed", at(time.Minute))}})
			if i == 2 { // dialed already: refused
				mustCall(t, s, scheduledCall(f, byContact[ct.ID], at(time.Second)))
			}
		}
		paused := scheduledCall(g, g.attempts[0], at(time.Minute))
		paused.To = g.contacts[0].PhoneNumber
		direct := newCall(o.ID, call.Phone, at(time.Minute))
		direct.To = "+15550009999"
		ncs = append(ncs, store.NewCall{Call: paused}, store.NewCall{Call: direct})
		errs, err := s.CreateCalls(ctx, ncs)
		must(t, "CreateCalls", err)
		for i, e := range errs {
			c := ncs[i].Call
			_, getErr := s.GetCall(ctx, o.ID, c.ID)
			stored := getErr == nil
			switch i {
			case 0, 3, 4, 6: // dialable: stored, attempt dialed
				if e != nil || !stored {
					t.Errorf("call %d: CreateCalls error %v, stored %v; want stored", i, e, stored)
				}
				if c.AttemptID != "" {
					a, _, err := s.GetAttempt(ctx, c.AttemptID)
					must(t, "GetAttempt", err)
					if a.State != schedule.Dialed || a.CallID != c.ID {
						t.Errorf("call %d: attempt %s, call %q; want dialed with %s", i, a.State, a.CallID, c.ID)
					}
				}
			case 1: // listed
				a, _, err := s.GetAttempt(ctx, c.AttemptID)
				must(t, "GetAttempt", err)
				if !phone.IsSuppressed(e) || stored || a.State != schedule.Suppressed {
					t.Errorf("call %d to a listed number: error %v, stored %v, attempt %s; want suppressed, not stored, attempt suppressed", i, e, stored, a.State)
				}
			case 2: // dialed already
				if !apperr.Is(e, apperr.Conflict) || phone.IsSuppressed(e) || stored {
					t.Errorf("call %d of a dialed attempt: error %v, stored %v; want a conflict, not stored", i, e, stored)
				}
			case 5: // paused
				a, _, err := s.GetAttempt(ctx, c.AttemptID)
				must(t, "GetAttempt", err)
				if !apperr.Is(e, apperr.Conflict) || stored || a.State != schedule.Pending || !a.LeasedUntil.IsZero() {
					t.Errorf("call %d of a paused schedule: error %v, stored %v, attempt %s leased until %v; want a conflict, not stored, pending and given back", i, e, stored, a.State, a.LeasedUntil)
				}
			}
		}
		// The totals count the stored calls: 4 here and the one dialed before.
		_, total, err := s.ListCalls(ctx, o.ID, store.CallFilter{Page: page(1, 10)})
		must(t, "ListCalls", err)
		if total != 5 {
			t.Errorf("ListCalls total after the batch = %d; want 5", total)
		}
	})

	t.Run("EndAttemptCall", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		mustWebhook(t, s, o.ID, "schedule.attempt.retrying", "schedule.completed", "call.ended")
		f := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		a := f.attempts[0]
		end := func(c call.Call, outcome call.Outcome, reason string, endedAt time.Time, e store.AttemptEnd) call.Call {
			t.Helper()
			prev := c.Status
			must(t, "Transition", c.Transition(call.Change{To: call.Ended, At: endedAt, Outcome: outcome, Reason: reason}))
			must(t, "EndAttemptCall", s.EndAttemptCall(ctx, c, prev, e, event.Event{ID: id.New("evt"), Type: "call.ended", At: endedAt, Data: []byte(`{}`), CallID: c.ID}))
			return c
		}
		ev := func(typ string) event.Event {
			return event.Event{ID: id.New("evt"), Type: typ, At: t0, Data: []byte(`{}`)}
		}
		// Try 1 ends busy: retried.
		c1 := mustCall(t, s, scheduledCall(f, a, at(time.Minute)))
		retryDue, retryReq := at(time.Hour), at(30*time.Minute)
		done := func(when string, want bool) store.ScheduleSummary {
			t.Helper()
			ds, err := s.DoneSchedules(ctx, 100)
			must(t, "DoneSchedules", err)
			i := slices.IndexFunc(ds, func(d store.ScheduleSummary) bool { return d.ID == f.sc.ID })
			if got := i >= 0; got != want {
				t.Errorf("DoneSchedules %s lists the schedule: %v; want %v", when, got, want)
			}
			if i < 0 {
				return store.ScheduleSummary{}
			}
			return ds[i]
		}
		done("before any dial", false)
		end(c1, call.Busy, call.ReasonCustomerBusy, at(2*time.Minute), store.AttemptEnd{Retry: true, RequestedAt: retryReq, DueAt: retryDue, Retrying: ev("schedule.attempt.retrying")})
		done("after a retry (the attempt is pending)", false)
		got, _, err := s.GetAttempt(ctx, a.ID)
		must(t, "GetAttempt after a retry", err)
		wantTry := schedule.Try{Due: msTime(at(time.Minute)), DialedAt: msTime(at(time.Minute)), CallID: c1.ID, Outcome: "busy", EndedReason: call.ReasonCustomerBusy}
		if got.State != schedule.Pending || got.CallID != "" || !got.DueAt.Equal(msTime(retryDue)) || !got.RequestedAt.Equal(msTime(retryReq)) ||
			len(got.Tries) != 1 || got.Tries[0] != wantTry || got.LeaseBase != got.Leases {
			t.Fatalf("attempt after EndAttemptCall(retry) = %+v; want pending, no call, due %v, requested %v, tries [%+v], LeaseBase = Leases",
				got, msTime(retryDue), msTime(retryReq), wantTry)
		}
		// Try 2 is dialed, ends completed: final, and the schedule is done.
		c2 := mustCall(t, s, scheduledCall(f, got, retryDue))
		got, _, err = s.GetAttempt(ctx, a.ID)
		must(t, "GetAttempt after the second dial", err)
		if cur, ok := got.CurrentTry(); !ok || cur.CallID != c2.ID || !cur.DialedAt.Equal(msTime(retryDue)) || cur.Outcome != "" || len(got.AllTries()) != 2 {
			t.Errorf("attempt's current try after the second dial = %+v (%v), all %d; want call %s dialed at %v, live, 2 tries", cur, ok, len(got.AllTries()), c2.ID, msTime(retryDue))
		}
		done("with the second try's call live", false)
		end(c2, call.Completed, call.ReasonCustomerEnded, retryDue.Add(time.Minute), store.AttemptEnd{})
		if d := done("after the final try", true); d.Progress.Completed["completed"] != 1 || d.Progress.Pending != 0 || d.Progress.Dialing != 0 {
			t.Errorf("DoneSchedules progress = %+v; want its one attempt completed", d.Progress)
		}
		for i, want := range []bool{true, false} {
			marked, err := s.CompleteSchedule(ctx, o.ID, f.sc.ID, retryDue.Add(2*time.Minute), ev("schedule.completed"))
			must(t, "CompleteSchedule", err)
			if marked != want {
				t.Errorf("CompleteSchedule #%d = %v; want %v (a schedule is marked once)", i+1, marked, want)
			}
		}
		done("once marked", false)
		got, _, err = s.GetAttempt(ctx, a.ID)
		must(t, "GetAttempt after the end", err)
		if got.State != schedule.Dialed || got.CallID != c2.ID || got.CallOutcome != "completed" || got.CallEndedReason != call.ReasonCustomerEnded || len(got.Tries) != 1 {
			t.Errorf("attempt after its final try = %+v; want dialed, call %s completed, 1 earlier try", got, c2.ID)
		}
		msgs, err := s.ClaimOutbox(ctx, at(24*time.Hour), time.Minute, 20)
		must(t, "ClaimOutbox", err)
		count := map[string]int{}
		for _, m := range msgs {
			count[m.Type]++
		}
		if count["call.ended"] != 2 || count["schedule.attempt.retrying"] != 1 || count["schedule.completed"] != 1 {
			t.Errorf("events queued by two ends = %v; want 2 call.ended, 1 schedule.attempt.retrying, 1 schedule.completed", count)
		}

		// A schedule canceled while its call is live is not retried.
		g := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		c3 := mustCall(t, s, scheduledCall(g, g.attempts[0], at(time.Minute)))
		if ch, err := s.CancelSchedule(ctx, o.ID, g.sc.ID, at(2*time.Minute)); err != nil || ch != (store.ScheduleChange{Changed: true, Canceled: true, State: schedule.StateActive}) {
			t.Fatalf("CancelSchedule(none pending, a call live) = %+v, %v; want changed (marked canceled), none canceled, active while the call lasts", ch, err)
		}
		sc, _, err := s.GetSchedule(ctx, o.ID, g.sc.ID)
		must(t, "GetSchedule", err)
		if sc.CanceledAt.IsZero() {
			t.Errorf("CancelSchedule with a live call left CanceledAt zero; want it set")
		}
		end(c3, call.Busy, call.ReasonCustomerBusy, at(3*time.Minute), store.AttemptEnd{Retry: true, RequestedAt: retryReq, DueAt: retryDue, Retrying: ev("schedule.attempt.retrying")})
		got, _, err = s.GetAttempt(ctx, g.attempts[0].ID)
		must(t, "GetAttempt", err)
		if got.State != schedule.Dialed || got.CallID != c3.ID {
			t.Errorf("attempt of a canceled schedule after a retryable end = %s, call %q; want dialed (final), call %s", got.State, got.CallID, c3.ID)
		}
		// Attempts that end without a call (canceled, failed) leave their
		// schedule done too.
		h := campaignSchedule(t, s, o.ID, 2, at(time.Minute), nil)
		must(t, "FailAttempt", s.FailAttempt(ctx, h.attempts[0].ID, "contact deleted", at(time.Minute)))
		if _, err := s.CancelSchedule(ctx, o.ID, h.sc.ID, at(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
		ds, err := s.DoneSchedules(ctx, 100)
		must(t, "DoneSchedules", err)
		var doneIDs []string
		for _, d := range ds {
			doneIDs = append(doneIDs, d.ID)
		}
		if !slices.Contains(doneIDs, g.sc.ID) || !slices.Contains(doneIDs, h.sc.ID) || slices.Contains(doneIDs, f.sc.ID) {
			t.Errorf("DoneSchedules = %v; want the canceled schedule whose call ended (%s) and the one failed and canceled without a call (%s), not the marked one (%s)",
				doneIDs, g.sc.ID, h.sc.ID, f.sc.ID)
		}
		// EndAttemptCall checks prev as UpdateCall does.
		stale := c3
		stale.Status = call.InProgress
		wantKind(t, "EndAttemptCall(stale prev)", s.EndAttemptCall(ctx, stale, call.Queued, store.AttemptEnd{}), apperr.Conflict)
	})
}

// campaignNumbers makes the numbers of campaignSchedule distinct.
var campaignNumbers atomic.Int64

// racePauseClaim races a dial's claim (CreateCall of a leased attempt)
// with SetSchedulePaused: either the call is stored and the attempt
// dialed, or the claim is refused and the attempt is pending, given back
// (unleased) and without a call; never a call of a pending attempt nor a
// dialed attempt without its call.
func racePauseClaim(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	const rounds = 20
	won := 0
	for r := range rounds {
		f := campaignSchedule(t, s, o.ID, 1, at(time.Minute), nil)
		now := at(time.Hour)
		leased, err := s.LeaseAttempts(ctx, now, time.Minute, 10, schedule.Caps{})
		if err != nil || len(leased) != 1 {
			t.Fatalf("round %d: LeaseAttempts = %d, %v; want 1", r, len(leased), err)
		}
		c := scheduledCall(f, leased[0], now)
		var callErr, pauseErr error
		race(func() { callErr = s.CreateCall(ctx, c) },
			func() {
				_, pauseErr = s.SetSchedulePaused(ctx, o.ID, f.sc.ID, true, now, event.Event{ID: id.New("evt"), Type: "schedule.paused", At: now, Data: []byte(`{}`)})
			})
		must(t, fmt.Sprintf("round %d: SetSchedulePaused", r), pauseErr)
		a, _, err := s.GetAttempt(ctx, leased[0].ID)
		must(t, "GetAttempt", err)
		_, getErr := s.GetCall(ctx, o.ID, c.ID)
		switch {
		case callErr == nil:
			won++
			if a.State != schedule.Dialed || a.CallID != c.ID || getErr != nil {
				t.Fatalf("round %d: the claim won the race but the attempt is %s (call %q), GetCall error %v; want dialed with %s", r, a.State, a.CallID, getErr, c.ID)
			}
		case apperr.Is(callErr, apperr.Conflict):
			if a.State != schedule.Pending || a.CallID != "" || !a.LeasedUntil.IsZero() || !apperr.Is(getErr, apperr.NotFound) {
				t.Fatalf("round %d: the claim was refused (%v) but the attempt is %s (call %q, leased until %v), GetCall error %v; want pending, no call, given back",
					r, callErr, a.State, a.CallID, a.LeasedUntil, getErr)
			}
		default:
			t.Fatalf("round %d: CreateCall racing SetSchedulePaused = %v; want nil or a Conflict", r, callErr)
		}
	}
	t.Logf("the claim won %d of %d races", won, rounds)
}
