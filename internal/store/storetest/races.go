package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// race runs f and g at the same time and waits for both.
func race(f, g func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() { <-start; f() })
	wg.Go(func() { <-start; g() })
	close(start)
	wg.Wait()
}

// raceDialCancel races the dialer's CreateCall for an attempt with
// CancelSchedule: either the call is stored and the attempt dialed, or the
// call is refused and the attempt canceled, never both nor neither.
func raceDialCancel(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	p := mustPurchase(t, s, o.ID, number(1))
	cs := mustContacts(t, s, o.ID, p.ID, numbers(100, 1)...)
	const rounds = 20
	for r := range rounds {
		sc, as := mustSchedule(t, s, o.ID, p, cs, []time.Time{at(24 * time.Hour)}, t0)
		c := newCall(o.ID, call.Phone, at(24*time.Hour))
		c.PurchaseID, c.AttemptID = p.ID, as[0].ID
		var callErr, cancelErr error
		var canceled int
		race(func() { callErr = s.CreateCall(ctx, c) },
			func() {
				var ch store.ScheduleChange
				ch, cancelErr = s.CancelSchedule(ctx, o.ID, sc.ID, at(time.Hour))
				canceled = ch.CanceledAttempts
			})
		must(t, fmt.Sprintf("round %d: CancelSchedule", r), cancelErr)
		_, got, err := s.GetSchedule(ctx, o.ID, sc.ID)
		must(t, "GetSchedule", err)
		_, getErr := s.GetCall(ctx, o.ID, c.ID)
		switch {
		case callErr == nil:
			if canceled != 0 || got[0].State != schedule.Dialed || got[0].CallID != c.ID || getErr != nil {
				t.Fatalf("round %d: CreateCall won the race but CancelSchedule = %d, attempt %s (call %q), GetCall error %v; want 0, dialed with %s, found",
					r, canceled, got[0].State, got[0].CallID, getErr, c.ID)
			}
		case apperr.Is(callErr, apperr.Conflict):
			if canceled != 1 || got[0].State != schedule.Canceled || got[0].CallID != "" || !apperr.Is(getErr, apperr.NotFound) {
				t.Fatalf("round %d: CreateCall refused (%v) but CancelSchedule = %d, attempt %s (call %q), GetCall error %v; want 1, canceled without call, NotFound",
					r, callErr, canceled, got[0].State, got[0].CallID, getErr)
			}
		default:
			t.Fatalf("round %d: CreateCall racing CancelSchedule = %v; want nil or a Conflict", r, callErr)
		}
	}
	_, total, err := s.ListCalls(ctx, o.ID, store.CallFilter{Page: page(1, 1)})
	must(t, "ListCalls", err)
	list, _, err := s.ListCalls(ctx, o.ID, store.CallFilter{Page: page(1, rounds)})
	must(t, "ListCalls", err)
	if total != len(list) {
		t.Errorf("ListCalls after the races: total %d but %d calls listed", total, len(list))
	}
}

// raceAddRelease races AddContacts with ReleasePurchase: if the release
// wins, the contacts must not survive it.
func raceAddRelease(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	const rounds = 20
	for r := range rounds {
		p := mustPurchase(t, s, o.ID, number(r))
		cs := []phone.Contact{newContact("+33600000001", t0), newContact("+33600000002", t0)}
		var addErr, relErr error
		race(func() { _, _, addErr = s.AddContacts(ctx, o.ID, p.ID, cs) },
			func() { relErr = s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)) })
		must(t, fmt.Sprintf("round %d: ReleasePurchase", r), relErr)
		if addErr != nil {
			wantKind(t, fmt.Sprintf("round %d: AddContacts racing ReleasePurchase", r), addErr, apperr.NotFound)
		}
		for _, c := range cs {
			if _, err := s.GetContact(ctx, o.ID, c.ID); !apperr.Is(err, apperr.NotFound) {
				t.Fatalf("round %d: AddContacts = %v, ReleasePurchase succeeded, then GetContact(%s) = %v; want NotFound (a released number keeps no contacts)",
					r, addErr, c.ID, err)
			}
		}
	}
}

// raceScheduleRelease races CreateSchedule with ReleasePurchase: either the
// schedule is stored and the release refused (pending attempts), or the
// release wins and the schedule is refused; never a schedule with pending
// attempts on a released number.
func raceScheduleRelease(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	const rounds = 20
	for r := range rounds {
		p := mustPurchase(t, s, o.ID, number(r))
		cs := mustContacts(t, s, o.ID, p.ID, numbers(100, 1)...)
		sc, as := newScheduleWith(o.ID, p.ID, []string{cs[0].ID}, []time.Time{at(24 * time.Hour)}, t0)
		var schedErr, relErr error
		race(func() { schedErr = s.CreateSchedule(ctx, sc, as) },
			func() { relErr = s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)) })
		switch {
		case schedErr == nil && apperr.Is(relErr, apperr.Conflict):
			if _, err := s.GetPurchase(ctx, o.ID, p.ID); err != nil {
				t.Fatalf("round %d: release refused but the purchase is gone: %v", r, err)
			}
		case relErr == nil && apperr.Is(schedErr, apperr.NotFound):
			if _, _, err := s.GetSchedule(ctx, o.ID, sc.ID); !apperr.Is(err, apperr.NotFound) {
				t.Fatalf("round %d: schedule refused but stored (GetSchedule error %v)", r, err)
			}
		default:
			t.Fatalf("round %d: CreateSchedule = %v, ReleasePurchase = %v; want exactly one to win", r, schedErr, relErr)
		}
	}
}

// raceRedeliverDelete races Redeliver of a delivered message with
// DeleteWebhook of its endpoint: whichever wins, a deleted endpoint's
// message is never queued to be sent again.
func raceRedeliverDelete(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	const rounds = 20
	for r := range rounds {
		w := mustWebhook(t, s, o.ID, evEnded)
		ev := newEvent(evEnded, at(time.Duration(r)*time.Second))
		must(t, "QueueEvent", s.QueueEvent(ctx, o.ID, ev, ev.At))
		m := claimOne(t, s, fmt.Sprintf("round %d", r), ev.At)
		d := delivery(m, 1, 200, ev.At)
		must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, m, d, store.OutboxDelivered, d.At))
		var redeliverErr, deleteErr error
		race(func() { redeliverErr = s.Redeliver(ctx, o.ID, w.ID, m.ID, ev.At) },
			func() { deleteErr = s.DeleteWebhook(ctx, o.ID, w.ID, ev.At) })
		must(t, fmt.Sprintf("round %d: DeleteWebhook racing Redeliver", r), deleteErr)
		if redeliverErr != nil {
			wantKind(t, fmt.Sprintf("round %d: Redeliver racing DeleteWebhook", r), redeliverErr, apperr.NotFound)
		}
		if ms := claimOutbox(t, s, ev.At.Add(time.Hour), 10); len(ms) != 0 {
			t.Fatalf("round %d: Redeliver = %v, DeleteWebhook succeeded, then ClaimOutbox claimed %v for endpoints %v; want none (a deleted endpoint's messages are never sent)",
				r, redeliverErr, msgIDs(ms), endpoints(ms))
		}
	}
}
