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

const evSuppressed = "schedule.attempt.suppressed"

func newDNC(number, reason, source, callID string, created time.Time) phone.DNCEntry {
	return phone.DNCEntry{Number: number, Reason: reason, Source: source, CallID: callID, CreatedAt: created}
}

func normDNC(e phone.DNCEntry) phone.DNCEntry {
	e.CreatedAt = msTime(e.CreatedAt)
	return e
}

func dncNumbers(es []phone.DNCEntry) []string {
	return ids(es, func(e phone.DNCEntry) string { return e.Number })
}

// mustAddDNC adds entries for orgID and returns what AddDNC did.
func mustAddDNC(t *testing.T, s store.Store, orgID string, es ...phone.DNCEntry) store.DNCAdded {
	t.Helper()
	got, err := s.AddDNC(t.Context(), orgID, es)
	must(t, fmt.Sprintf("AddDNC(%s, %v)", orgID, dncNumbers(es)), err)
	return got
}

func testDNC(t *testing.T, open Opener) {
	t.Run("AddListDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		e1 := newDNC(number(1), "asked by email", phone.DNCSourceAPI, "", at(time.Second))
		e2 := newDNC(number(2), "", phone.DNCSourceOptOut, id.New(id.Call), at(2*time.Second))
		e3 := newDNC("+4930123456", "complaint", phone.DNCSourceAPI, "", at(3*time.Second))
		got := mustAddDNC(t, s, o.ID, e1, e2, e3)
		want := []phone.DNCEntry{e1, e2, e3}
		for i := range want {
			want[i].OrgID = o.ID
		}
		equal(t, "AddDNC: added", norm(got.Added, normDNC), norm(want, normDNC))
		if len(got.Listed) != 0 || len(got.LiveCalls) != 0 {
			t.Errorf("AddDNC of 3 new numbers, no calls: listed %v, live calls %v; want none", got.Listed, got.LiveCalls)
		}

		// Adding again keeps the first entry; a new number in the same add is added.
		again := newDNC(number(1), "another reason", phone.DNCSourceOptOut, id.New(id.Call), at(4*time.Second))
		e4 := newDNC(number(4), "", phone.DNCSourceAPI, "", at(5*time.Second))
		got = mustAddDNC(t, s, o.ID, again, e4, e4)
		e4.OrgID = o.ID
		equal(t, "AddDNC(listed, new, new again): added", norm(got.Added, normDNC), norm([]phone.DNCEntry{e4}, normDNC))
		if !slices.Equal(got.Listed, []int{0, 2}) {
			t.Errorf("AddDNC(listed, new, new again): listed = %v; want [0 2]", got.Listed)
		}

		list := func(org, search string, p store.Page) ([]phone.DNCEntry, int) {
			t.Helper()
			es, total, err := s.ListDNC(ctx, org, search, p)
			must(t, fmt.Sprintf("ListDNC(%q, %s)", search, describePage(p)), err)
			return es, total
		}
		all, total := list(o.ID, "", store.Page{Page: 1, PageSize: 10})
		newestFirst := []phone.DNCEntry{e4, want[2], want[1], want[0]}
		equal(t, "ListDNC: newest first, the first entry of a re-added number", norm(all, normDNC), norm(newestFirst, normDNC))
		if total != 4 {
			t.Errorf("ListDNC total = %d; want 4", total)
		}
		page2, total := list(o.ID, "", store.Page{Page: 2, PageSize: 3})
		sameIDs(t, "ListDNC page 2 of size 3", dncNumbers(page2), []string{number(1)})
		if total != 4 {
			t.Errorf("ListDNC page 2 total = %d; want 4", total)
		}
		for _, c := range []struct {
			search string
			want   []string
		}{
			{"+1555", []string{number(4), number(2), number(1)}},
			{"0000002", []string{number(2)}},
			{"+49", []string{"+4930123456"}},
			{"3012", []string{"+4930123456"}},
			{"+4415", nil},
		} {
			es, total := list(o.ID, c.search, store.Page{Page: 1, PageSize: 10})
			if !sameIDs(t, fmt.Sprintf("ListDNC(search %q)", c.search), nilIfEmpty(dncNumbers(es)), c.want) {
				continue
			}
			if total != len(c.want) {
				t.Errorf("ListDNC(search %q) total = %d; want %d", c.search, total, len(c.want))
			}
		}
		if es, total := list(other.ID, "", store.Page{Page: 1, PageSize: 10}); len(es) != 0 || total != 0 {
			t.Errorf("ListDNC of another organization = %v (total %d); want none", dncNumbers(es), total)
		}

		wantKind(t, "DeleteDNC by another organization", s.DeleteDNC(ctx, other.ID, number(1)), apperr.NotFound)
		must(t, "DeleteDNC", s.DeleteDNC(ctx, o.ID, number(1)))
		wantKind(t, "DeleteDNC again", s.DeleteDNC(ctx, o.ID, number(1)), apperr.NotFound)
		wantKind(t, "DeleteDNC of a number never listed", s.DeleteDNC(ctx, o.ID, number(9)), apperr.NotFound)
		all, _ = list(o.ID, "", store.Page{Page: 1, PageSize: 10})
		sameIDs(t, "ListDNC after DeleteDNC", dncNumbers(all), []string{number(4), "+4930123456", number(2)})
		// Listed again after its deletion: a new entry.
		got = mustAddDNC(t, s, o.ID, again)
		if len(got.Added) != 1 || got.Added[0].Reason != "another reason" {
			t.Errorf("AddDNC after DeleteDNC: added %+v; want the new entry", got.Added)
		}
	})

	t.Run("LiveCalls", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		to := func(n string) call.Call {
			c := newCall(o.ID, call.Phone, at(0))
			c.To = n
			return c
		}
		live := mustCall(t, s, to(number(1)))
		ended := mustCall(t, s, to(number(1)))
		done := ended
		must(t, "Transition", done.Transition(call.Change{To: call.Ended, At: at(time.Second), Outcome: call.Completed, Reason: call.ReasonCustomerEnded}))
		must(t, "UpdateCall(ended)", s.UpdateCall(ctx, done, call.Queued))
		in := to(number(1))
		in.Direction, in.From, in.To = call.Inbound, number(1), "+15550100"
		mustCall(t, s, in)
		otherNumber := mustCall(t, s, to(number(2)))
		got := mustAddDNC(t, s, o.ID, newDNC(number(1), "", phone.DNCSourceAPI, "", at(time.Minute)))
		if !slices.Equal(got.LiveCalls[number(1)], []string{live.ID}) || len(got.LiveCalls) != 1 {
			t.Errorf("AddDNC(%s): live calls %v; want only %s (not the ended %s, the inbound one, nor %s to another number)",
				number(1), got.LiveCalls, live.ID, ended.ID, otherNumber.ID)
		}
	})

	t.Run("DialSuppressed", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		f := newScheduleFixture(t, s, 3, at(0))
		other := mustOrg(t, s, "Other")
		mustWebhook(t, s, f.orgID, evSuppressed)
		listed := f.contacts[0].PhoneNumber
		mustAddDNC(t, s, f.orgID, newDNC(listed, "", phone.DNCSourceAPI, "", at(time.Second)))

		// A direct call: nothing stored.
		direct := newCall(f.orgID, call.Phone, at(time.Minute))
		direct.To = listed
		err := s.CreateCall(ctx, direct)
		if !phone.IsSuppressed(err) {
			t.Errorf("CreateCall to listed %s = %v; want the suppressed error", listed, err)
		}
		wantKind(t, "GetCall of the suppressed call", getErr(s.GetCall(ctx, f.orgID, direct.ID)), apperr.NotFound)

		// A scheduled call: the attempt is suppressed, its event queued, no call.
		byContact := map[string]schedule.Attempt{}
		for _, a := range f.attempts {
			byContact[a.ContactID] = a
		}
		att := byContact[f.contacts[0].ID]
		sc := scheduledCall(f, att, at(time.Minute))
		sc.To = listed
		ev := newEvent(evSuppressed, at(time.Minute))
		if err := s.CreateCall(ctx, sc, ev); !phone.IsSuppressed(err) {
			t.Errorf("CreateCall of attempt %s to listed %s = %v; want the suppressed error", att.ID, listed, err)
		}
		wantKind(t, "GetCall of the suppressed attempt's call", getErr(s.GetCall(ctx, f.orgID, sc.ID)), apperr.NotFound)
		got, _, err := s.GetAttempt(ctx, att.ID)
		must(t, "GetAttempt", err)
		if got.State != schedule.Suppressed || got.CallID != "" || got.Error == "" {
			t.Errorf("attempt %s after a dial to a listed number: state %s, call %q, error %q; want suppressed, no call, a reason", att.ID, got.State, got.CallID, got.Error)
		}
		msgs, err := s.ClaimOutbox(ctx, at(time.Hour), lease, 10)
		must(t, "ClaimOutbox", err)
		if len(msgs) != 1 || msgs[0].Type != evSuppressed {
			t.Errorf("ClaimOutbox after a suppressed attempt = %d messages %v; want one %s", len(msgs), ids(msgs, func(m store.OutboxMessage) string { return m.Type }), evSuppressed)
		}
		// Dialing it again: no longer pending, a plain conflict.
		sc2 := scheduledCall(f, att, at(2*time.Minute))
		sc2.To = listed
		err = s.CreateCall(ctx, sc2)
		if !apperr.Is(err, apperr.Conflict) || phone.IsSuppressed(err) {
			t.Errorf("CreateCall of the suppressed attempt again = %v; want a conflict other than suppressed (the attempt is not pending)", err)
		}

		// Not suppressed: another number, an inbound call from the listed
		// number, a web call, and the same number in another organization.
		free := scheduledCall(f, byContact[f.contacts[1].ID], at(time.Minute))
		free.To = f.contacts[1].PhoneNumber
		mustCall(t, s, free)
		in := newCall(f.orgID, call.Phone, at(time.Minute))
		in.Direction, in.From, in.To = call.Inbound, listed, f.purchase.Number
		mustCall(t, s, in)
		mustCall(t, s, newCall(f.orgID, call.Web, at(time.Minute)))
		elsewhere := newCall(other.ID, call.Phone, at(time.Minute))
		elsewhere.To = listed
		mustCall(t, s, elsewhere)

		// Deleted from the list: dialed again.
		must(t, "DeleteDNC", s.DeleteDNC(ctx, f.orgID, listed))
		direct.ID = id.New(id.Call)
		mustCall(t, s, direct)
	})

	t.Run("AddVsDial", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		dncRace(t, s, s)
	})
}

func getErr[T any](_ T, err error) error { return err }

// dncRace has a add numbers to the do-not-call list while b dials them,
// pair by pair at the same moment (30 pairs at once, each its own number
// and attempt), and checks that each pair was decided in one order: either
// the dial was suppressed (no call, the attempt suppressed) and the add saw
// no live call, or the dial's claim committed before the add: its call
// exists, its attempt is dialed, and the add reported the call live (the
// add read the calls after taking the number's lock, so a claim that
// committed after that read is one that did not wait for the add).
func dncRace(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	const pairs = 30
	f := newScheduleFixture(t, a, pairs, at(0))
	numberOf := map[string]string{}
	for _, c := range f.contacts {
		numberOf[c.ID] = c.PhoneNumber
	}
	type result struct {
		added   store.DNCAdded
		addErr  error
		c       call.Call
		dialErr error
	}
	res := make([]result, len(f.attempts))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, att := range f.attempts {
		n := numberOf[att.ContactID]
		res[i].c = scheduledCall(f, att, at(time.Second))
		res[i].c.To = n
		wg.Go(func() {
			<-start
			res[i].added, res[i].addErr = a.AddDNC(ctx, f.orgID, []phone.DNCEntry{newDNC(n, "", phone.DNCSourceAPI, "", at(time.Second))})
		})
		wg.Go(func() {
			<-start
			res[i].dialErr = b.CreateCall(ctx, res[i].c)
		})
	}
	close(start)
	wg.Wait()
	dialed, suppressed := 0, 0
	for i, att := range f.attempts {
		r, n := res[i], res[i].c.To
		if r.addErr != nil || len(r.added.Added) != 1 {
			t.Errorf("pair %d: AddDNC(%s) = %+v, %v; want it added", i, n, r.added, r.addErr)
			continue
		}
		got, _, err := a.GetAttempt(ctx, att.ID)
		must(t, "GetAttempt", err)
		_, callErr := a.GetCall(ctx, f.orgID, r.c.ID)
		live := r.added.LiveCalls[n]
		switch {
		case r.dialErr == nil:
			dialed++
			if callErr != nil || got.State != schedule.Dialed || got.CallID != r.c.ID {
				t.Errorf("pair %d (%s): the dial succeeded but its call reads %v and the attempt is %s with call %q; want the call, the attempt dialed with it", i, n, callErr, got.State, got.CallID)
			}
			if !slices.Equal(live, []string{r.c.ID}) {
				t.Errorf("pair %d (%s): the dial succeeded but the add saw live calls %v, not %s: the claim committed after the add listed the number", i, n, live, r.c.ID)
			}
		case phone.IsSuppressed(r.dialErr):
			suppressed++
			if !apperr.Is(callErr, apperr.NotFound) || got.State != schedule.Suppressed {
				t.Errorf("pair %d (%s): the dial was suppressed but its call reads %v and the attempt is %s; want no call, the attempt suppressed", i, n, callErr, got.State)
			}
			if len(live) != 0 {
				t.Errorf("pair %d (%s): the dial was suppressed but the add saw live calls %v", i, n, live)
			}
		default:
			t.Errorf("pair %d (%s): CreateCall = %v; want nil or the suppressed error", i, n, r.dialErr)
		}
	}
	t.Logf("do-not-call add vs dial, %d pairs: %d dialed before the add, %d suppressed", pairs, dialed, suppressed)
}
