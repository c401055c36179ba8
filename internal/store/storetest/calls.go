package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

func statusPtr(s call.Status) *call.Status { return &s }

// listCalls checks one ListCalls answer: the ids in order and the total.
func listCalls(t *testing.T, s store.Store, orgID string, f store.CallFilter, want []call.Call, wantTotal int) {
	t.Helper()
	got, total, err := s.ListCalls(t.Context(), orgID, f)
	desc := fmt.Sprintf("ListCalls(%s)", describeFilter(f))
	if err != nil {
		t.Errorf("%s: unexpected error: %v", desc, err)
		return
	}
	sameIDs(t, desc, callIDs(got), callIDs(want))
	if total != wantTotal {
		t.Errorf("%s: total = %d; want %d", desc, total, wantTotal)
	}
}

// rev returns the calls newest first, given them oldest first.
func rev(xs ...call.Call) []call.Call {
	out := slices.Clone(xs)
	slices.Reverse(out)
	return out
}

func page(n, size int) store.Page { return store.Page{Page: n, PageSize: size} }

func testCalls(t *testing.T, open Opener) {
	t.Run("ListReflectsEveryChange", func(t *testing.T) {
		// A listing read again after any change (a new call, a status
		// change, an update that keeps the status) shows the change: a
		// store that caches pages must notice every write.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		c := mustCall(t, s, newCall(o.ID, call.Phone, at(time.Second)))
		read := func(step string, want ...call.Call) {
			t.Helper()
			for range 2 { // the second read may come from a cache
				got, total, err := s.ListCalls(ctx, o.ID, store.CallFilter{Page: page(1, 10)})
				must(t, "ListCalls", err)
				if total != len(want) || len(got) != len(want) {
					t.Fatalf("%s: ListCalls = %d calls, total %d; want %d", step, len(got), total, len(want))
				}
				for i := range want {
					equal(t, fmt.Sprintf("%s: ListCalls item %d", step, i), normCall(got[i]), normCall(want[i]))
				}
			}
		}
		read("after CreateCall", c)
		d := mustCall(t, s, newCall(o.ID, call.Web, at(2*time.Second)))
		read("after a second CreateCall", d, c)
		prev := c.Status
		c.Status, c.UpdatedAt = call.Ringing, at(3*time.Second)
		must(t, "UpdateCall(queued → ringing)", s.UpdateCall(ctx, c, prev))
		read("after a status change", d, c)
		c.EndedReason, c.UpdatedAt = "note", at(4*time.Second)
		must(t, "UpdateCall(ringing → ringing)", s.UpdateCall(ctx, c, call.Ringing))
		read("after an update that kept the status", d, c)
		// A change in another organization does not disturb this one.
		other := mustOrg(t, s, "Other")
		mustCall(t, s, newCall(other.ID, call.Web, at(5*time.Second)))
		read("after another org's call", d, c)
	})

	t.Run("CreateGet", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		web := mustCall(t, s, newCall(o.ID, call.Web, at(time.Second)))
		ph := newCall(o.ID, call.Phone, at(2*time.Second))
		ph.Status, ph.Outcome, ph.EndedReason = call.Ended, call.NoAnswer, call.ReasonCustomerNoAnswer
		ph.StartedAt, ph.EndedAt, ph.UpdatedAt = at(3*time.Second+400*time.Microsecond), at(9*time.Second), at(9*time.Second)
		ph.ProviderCallID = "a84b4c76e66710@pc33.example.com"
		mustCall(t, s, ph)
		in := newCall(o.ID, call.Phone, at(3*time.Second))
		in.Direction, in.ProviderCallID = call.Inbound, "3848276298220188511@203.0.113.7"
		// Variables are kept byte for byte (listings copy them as stored).
		in.Variables = json.RawMessage(`{"call":{"id":"x"},"plan":"gold","n":1.50,"s":"<é>"}`)
		mustCall(t, s, in)

		for _, c := range []call.Call{web, ph, in} {
			got, err := s.GetCall(ctx, o.ID, c.ID)
			must(t, "GetCall", err)
			equal(t, fmt.Sprintf("GetCall(%s)", c.ID), normCall(got), normCall(c))
			got, err = s.GetCallAnyOrg(ctx, c.ID)
			must(t, "GetCallAnyOrg", err)
			equal(t, fmt.Sprintf("GetCallAnyOrg(%s)", c.ID), normCall(got), normCall(c))
			_, err = s.GetCall(ctx, other.ID, c.ID)
			wantKind(t, fmt.Sprintf("GetCall(other org, %s)", c.ID), err, apperr.NotFound)
		}
		_, err := s.GetCall(ctx, o.ID, id.New(id.Call))
		wantKind(t, "GetCall(unknown id)", err, apperr.NotFound)
		_, err = s.GetCallAnyOrg(ctx, id.New(id.Call))
		wantKind(t, "GetCallAnyOrg(unknown id)", err, apperr.NotFound)
	})

	t.Run("ListFiltersAndPaging", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		// c[i] is created at t0 + i s: even ones web, odd ones phone.
		var c []call.Call
		for i := range 6 {
			typ := call.Web
			if i%2 == 1 {
				typ = call.Phone
			}
			c = append(c, newCall(o.ID, typ, at(time.Duration(i)*time.Second)))
		}
		c[5].Direction = call.Inbound // c1 and c3 are outbound
		for _, i := range []int{3, 0, 5, 1, 4, 2} {
			mustCall(t, s, c[i])
		}
		for i := range 3 {
			mustCall(t, s, newCall(other.ID, call.Web, at(time.Duration(i)*time.Second)))
		}

		for _, tc := range []struct {
			f     store.CallFilter
			want  []call.Call
			total int
		}{
			{store.CallFilter{Page: page(1, 10)}, rev(c...), 6},
			{store.CallFilter{Page: page(1, 4)}, rev(c[2:]...), 6},
			{store.CallFilter{Page: page(2, 4)}, rev(c[:2]...), 6},
			{store.CallFilter{Page: page(3, 4)}, nil, 6},
			{store.CallFilter{Page: page(100, 4)}, nil, 6},
			{store.CallFilter{Type: call.Web, Page: page(1, 10)}, rev(c[0], c[2], c[4]), 3},
			{store.CallFilter{Type: call.Phone, Page: page(1, 2)}, rev(c[3], c[5]), 3},
			{store.CallFilter{Type: call.Phone, Page: page(2, 2)}, rev(c[1]), 3},
			{store.CallFilter{Status: statusPtr(call.Queued), Page: page(1, 10)}, rev(c...), 6},
			{store.CallFilter{Status: statusPtr(call.Ended), Page: page(1, 10)}, nil, 0},
			// Both bounds are exclusive.
			{store.CallFilter{CreatedAfter: c[1].CreatedAt, Page: page(1, 10)}, rev(c[2:]...), 4},
			{store.CallFilter{CreatedBefore: c[4].CreatedAt, Page: page(1, 10)}, rev(c[:4]...), 4},
			{store.CallFilter{CreatedAfter: c[1].CreatedAt, CreatedBefore: c[4].CreatedAt, Page: page(1, 10)}, rev(c[2], c[3]), 2},
			{store.CallFilter{CreatedAfter: c[1].CreatedAt.Add(-time.Millisecond), CreatedBefore: c[4].CreatedAt.Add(time.Millisecond), Page: page(1, 10)}, rev(c[1:5]...), 4},
			{store.CallFilter{CreatedAfter: c[0].CreatedAt, Type: call.Web, Page: page(1, 10)}, rev(c[2], c[4]), 2},
			{store.CallFilter{CreatedAfter: c[0].CreatedAt, Page: page(2, 3)}, rev(c[1], c[2]), 5},
			{store.CallFilter{CreatedAfter: c[0].CreatedAt, Page: page(3, 3)}, nil, 5},
			{store.CallFilter{CreatedAfter: c[5].CreatedAt, Page: page(1, 10)}, nil, 0},
			{store.CallFilter{CreatedBefore: c[0].CreatedAt, Page: page(1, 10)}, nil, 0},
			{store.CallFilter{Direction: call.Outbound, Page: page(1, 10)}, rev(c[1], c[3]), 2},
			{store.CallFilter{Direction: call.Outbound, Page: page(2, 1)}, rev(c[1]), 2},
			{store.CallFilter{Direction: call.Inbound, Page: page(1, 10)}, rev(c[5]), 1},
			{store.CallFilter{Direction: call.Inbound, Type: call.Web, Page: page(1, 10)}, nil, 0},
			{store.CallFilter{Direction: call.Outbound, Status: statusPtr(call.Queued), CreatedAfter: c[1].CreatedAt, Page: page(1, 10)}, rev(c[3]), 1},
		} {
			listCalls(t, s, o.ID, tc.f, tc.want, tc.total)
		}
		listCalls(t, s, id.New(id.Org), store.CallFilter{Page: page(1, 10)}, nil, 0)
	})

	t.Run("TotalsFollowStatus", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		var c []call.Call
		for i := range 4 {
			typ := call.Web
			if i%2 == 1 {
				typ = call.Phone
			}
			c = append(c, mustCall(t, s, newCall(o.ID, typ, at(time.Duration(i)*time.Second))))
		}
		// want lists, per status, the calls expected in it (newest first).
		check := func(step string, byStatus map[call.Status][]call.Call) {
			t.Helper()
			all := 0
			for st := call.Queued; st <= call.Ended; st++ {
				want := byStatus[st]
				all += len(want)
				listCalls(t, s, o.ID, store.CallFilter{Status: statusPtr(st), Page: page(1, 10)}, want, len(want))
				var phones []call.Call
				for _, x := range want {
					if x.Type == call.Phone {
						phones = append(phones, x)
					}
				}
				listCalls(t, s, o.ID, store.CallFilter{Type: call.Phone, Status: statusPtr(st), Page: page(1, 10)}, phones, len(phones))
				// The date-filtered total is counted another way; it must agree.
				listCalls(t, s, o.ID, store.CallFilter{Status: statusPtr(st), CreatedAfter: at(-time.Hour), Page: page(1, 10)}, want, len(want))
			}
			if all != 4 {
				t.Fatalf("%s: bad test: %d calls in the expectation", step, all)
			}
			_, total, err := s.ListCalls(ctx, o.ID, store.CallFilter{Page: page(1, 10)})
			must(t, "ListCalls", err)
			if total != 4 {
				t.Errorf("%s: ListCalls(no filter) total = %d; want 4", step, total)
			}
		}
		check("after CreateCall", map[call.Status][]call.Call{call.Queued: {c[3], c[2], c[1], c[0]}})

		step := func(i int, to call.Status, prev call.Status) {
			t.Helper()
			c[i].Status, c[i].UpdatedAt = to, c[i].UpdatedAt.Add(time.Second)
			if to == call.InProgress {
				c[i].StartedAt = c[i].UpdatedAt
			}
			if to == call.Ended {
				c[i].EndedAt, c[i].Outcome, c[i].EndedReason = c[i].UpdatedAt, call.Completed, call.ReasonAssistantEnded
			}
			must(t, fmt.Sprintf("UpdateCall(c%d, %s → %s)", i, prev.Text(), to.Text()), s.UpdateCall(ctx, c[i], prev))
			got, err := s.GetCall(ctx, o.ID, c[i].ID)
			must(t, "GetCall", err)
			equal(t, fmt.Sprintf("GetCall(c%d) after UpdateCall(%s → %s)", i, prev.Text(), to.Text()), normCall(got), normCall(c[i]))
		}
		step(1, call.Ringing, call.Queued)
		check("c1 ringing", map[call.Status][]call.Call{call.Queued: {c[3], c[2], c[0]}, call.Ringing: {c[1]}})
		step(1, call.InProgress, call.Ringing)
		step(2, call.Ended, call.Queued)
		check("c1 in progress, c2 ended", map[call.Status][]call.Call{call.Queued: {c[3], c[0]}, call.InProgress: {c[1]}, call.Ended: {c[2]}})
		step(1, call.Ended, call.InProgress)
		check("c1, c2 ended", map[call.Status][]call.Call{call.Queued: {c[3], c[0]}, call.Ended: {c[2], c[1]}})

		// An update that keeps the status saves the other fields and
		// leaves the totals alone.
		c[0].EndedReason, c[0].UpdatedAt = "note", at(time.Minute)
		must(t, "UpdateCall(same status)", s.UpdateCall(ctx, c[0], call.Queued))
		got, err := s.GetCall(ctx, o.ID, c[0].ID)
		must(t, "GetCall", err)
		equal(t, "GetCall after UpdateCall(queued → queued)", normCall(got), normCall(c[0]))
		check("c0 updated in place", map[call.Status][]call.Call{call.Queued: {c[3], c[0]}, call.Ended: {c[2], c[1]}})
	})

	t.Run("UpdateKeepsProviderCallID", func(t *testing.T) {
		// The provider's call id, learned on a later event, is saved by
		// UpdateCall, and the direction is kept.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		c := newCall(o.ID, call.Phone, t0)
		c.Direction = call.Inbound
		mustCall(t, s, c)
		c.Status, c.UpdatedAt, c.ProviderCallID = call.Ringing, at(time.Second), "f81d4fae-7dec-11d0-a765-00a0c91e6bf6@host"
		must(t, "UpdateCall(queued → ringing, with provider call id)", s.UpdateCall(ctx, c, call.Queued))
		got, err := s.GetCall(ctx, o.ID, c.ID)
		must(t, "GetCall", err)
		equal(t, "GetCall after UpdateCall set ProviderCallID", normCall(got), normCall(c))
		listCalls(t, s, o.ID, store.CallFilter{Direction: call.Inbound, Page: page(1, 10)}, []call.Call{c}, 1)
		listCalls(t, s, o.ID, store.CallFilter{Direction: call.Outbound, Page: page(1, 10)}, nil, 0)
	})

	t.Run("UpdateConflict", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		orig := mustCall(t, s, newCall(o.ID, call.Phone, t0))

		upd := orig
		upd.Status, upd.Outcome, upd.EndedAt, upd.UpdatedAt = call.Ended, call.Failed, at(time.Second), at(time.Second)
		err := s.UpdateCall(ctx, upd, call.Ringing)
		wantKind(t, "UpdateCall(queued call, prev ringing)", err, apperr.Conflict)

		hijack := upd
		hijack.OrgID = other.ID
		wantErr(t, "UpdateCall(call with the other org's id, prev queued)", s.UpdateCall(ctx, hijack, call.Queued))
		missing := upd
		missing.ID = id.New(id.Call)
		wantErr(t, "UpdateCall(unknown id)", s.UpdateCall(ctx, missing, call.Queued))

		got, err := s.GetCall(ctx, o.ID, orig.ID)
		must(t, "GetCall", err)
		equal(t, "GetCall after refused UpdateCalls (must be unchanged)", normCall(got), normCall(orig))
		listCalls(t, s, o.ID, store.CallFilter{Status: statusPtr(call.Queued), Page: page(1, 10)}, []call.Call{orig}, 1)
		listCalls(t, s, o.ID, store.CallFilter{Status: statusPtr(call.Ended), Page: page(1, 10)}, nil, 0)
		listCalls(t, s, o.ID, store.CallFilter{Status: statusPtr(call.Ringing), Page: page(1, 10)}, nil, 0)
		listCalls(t, s, other.ID, store.CallFilter{Page: page(1, 10)}, nil, 0)
		listCalls(t, s, other.ID, store.CallFilter{Status: statusPtr(call.Ended), Page: page(1, 10)}, nil, 0)
		listCalls(t, s, other.ID, store.CallFilter{Status: statusPtr(call.Queued), Page: page(1, 10)}, nil, 0)
	})

	// UpdateCalls saves each call of a batch as UpdateCall would, in one
	// transaction: the totals, analyses and events follow the calls saved,
	// and a stale or repeated change is refused alone.
	t.Run("UpdateCalls", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, "call.started")
		var cs []call.Call
		for i := range 4 {
			cs = append(cs, mustCall(t, s, newCall(o.ID, call.Phone, at(time.Duration(i)*time.Second))))
		}
		theirs := mustCall(t, s, newCall(other.ID, call.Phone, at(5*time.Second)))
		got, err := s.GetCallsAnyOrg(ctx, []string{cs[0].ID, theirs.ID, id.New(id.Call), cs[3].ID})
		must(t, "GetCallsAnyOrg", err)
		slices.SortFunc(got, func(a, b call.Call) int { return strings.Compare(a.ID, b.ID) })
		want := []call.Call{normCall(cs[0]), normCall(theirs), normCall(cs[3])}
		slices.SortFunc(want, func(a, b call.Call) int { return strings.Compare(a.ID, b.ID) })
		equal(t, "GetCallsAnyOrg(two of one org, one of another, one unknown)", got, want)

		change := func(c call.Call, to call.Status, d time.Duration) call.Call {
			c.Status, c.UpdatedAt, c.ProviderCallID = to, at(d), "pc-"+c.ID
			switch to {
			case call.InProgress:
				c.StartedAt, c.NodeID = c.UpdatedAt, "node-1"
			case call.Ended:
				c.EndedAt, c.Outcome, c.EndedReason = c.UpdatedAt, call.NoAnswer, call.ReasonCustomerNoAnswer
			}
			return c
		}
		started := newEvent("call.started", at(time.Minute))
		us := []store.CallUpdate{
			{Call: change(cs[0], call.Ringing, time.Minute), Prev: call.Queued},
			{Call: change(cs[1], call.InProgress, time.Minute), Prev: call.Queued, Events: []event.Event{started}},
			{Call: change(cs[2], call.Ended, time.Minute), Prev: call.Queued},
			{Call: change(cs[3], call.Ended, time.Minute), Prev: call.Ringing, Events: []event.Event{newEvent("call.started", at(time.Minute))}}, // stale prev
			{Call: change(cs[0], call.InProgress, 2*time.Minute), Prev: call.Queued},                                                             // named twice
			{Call: change(theirs, call.Ringing, time.Minute), Prev: call.Queued},
		}
		errs, err := s.UpdateCalls(ctx, us)
		must(t, "UpdateCalls", err)
		for i, u := range us {
			stored, err := s.GetCall(ctx, u.Call.OrgID, u.Call.ID)
			must(t, "GetCall", err)
			switch i {
			case 3, 4:
				wantKind(t, fmt.Sprintf("UpdateCalls change %d", i), errs[i], apperr.Conflict)
				if i == 3 {
					equal(t, "GetCall after a refused change", stored, normCall(cs[3]))
				}
			default:
				must(t, fmt.Sprintf("UpdateCalls change %d", i), errs[i])
				equal(t, fmt.Sprintf("GetCall after change %d", i), stored, normCall(u.Call))
			}
		}
		// Totals: Acme has one ringing, one in progress, one ended, one
		// queued (the refused); Other one ringing.
		for st, n := range map[call.Status]int{call.Queued: 1, call.Ringing: 1, call.InProgress: 1, call.Ended: 1} {
			_, total, err := s.ListCalls(ctx, o.ID, store.CallFilter{Status: statusPtr(st), Page: page(1, 10)})
			must(t, "ListCalls", err)
			if total != n {
				t.Errorf("ListCalls(%s) total after UpdateCalls = %d; want %d", st.Text(), total, n)
			}
		}
		listCalls(t, s, other.ID, store.CallFilter{Status: statusPtr(call.Ringing), Page: page(1, 10)}, []call.Call{us[5].Call}, 1)
		// The ended call has its analysis; the refused one none; only the
		// saved change's event is queued.
		if _, err := s.GetAnalysis(ctx, o.ID, cs[2].ID); err != nil {
			t.Errorf("GetAnalysis(call ended by UpdateCalls): %v; want pending", err)
		}
		_, err = s.GetAnalysis(ctx, o.ID, cs[3].ID)
		wantKind(t, "GetAnalysis(call whose end was refused)", err, apperr.NotFound)
		m := claimOne(t, s, "after UpdateCalls", at(time.Hour))
		wantMessage(t, "ClaimOutbox after UpdateCalls", m, w, started, 0)
	})

	t.Run("Recording", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := newCall(o.ID, call.Phone, at(time.Second))
		c.Status = call.InProgress
		mustCall(t, s, c)
		plain := mustCall(t, s, newCall(o.ID, call.Web, at(2*time.Second)))
		// The listing is read (and cached) before the recording is set.
		listCalls(t, s, o.ID, store.CallFilter{Page: page(1, 10)}, rev(c, plain), 2)
		rel := "recordings/" + o.ID + "/" + c.ID + ".wav"
		must(t, "SetCallRecording", s.SetCallRecording(ctx, o.ID, c.ID, rel))
		// The call's end, written from a copy read before, keeps it.
		ended := c
		ended.Status, ended.Outcome, ended.EndedReason, ended.EndedAt, ended.UpdatedAt = call.Ended, call.Completed, call.ReasonCustomerEnded, at(9*time.Second), at(9*time.Second)
		must(t, "UpdateCall(end)", s.UpdateCall(ctx, ended, call.InProgress))
		got, err := s.GetCall(ctx, o.ID, c.ID)
		must(t, "GetCall", err)
		if got.Recording != rel {
			t.Errorf("GetCall after SetCallRecording(%q) and the end: Recording = %q, want %q", rel, got.Recording, rel)
		}
		ended.Recording = rel
		listCalls(t, s, o.ID, store.CallFilter{Page: page(1, 10)}, rev(ended, plain), 2)
		wantKind(t, "SetCallRecording(other org)", s.SetCallRecording(ctx, other.ID, c.ID, "x"), apperr.NotFound)
		wantKind(t, "SetCallRecording(unknown id)", s.SetCallRecording(ctx, o.ID, id.New(id.Call), "x"), apperr.NotFound)
		if got, _ := s.GetCall(ctx, o.ID, plain.ID); got.Recording != "" {
			t.Errorf("a call without a recording: Recording = %q, want empty", got.Recording)
		}
	})

	t.Run("StaleCalls", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		old, cutoff, recent := at(time.Minute), at(10*time.Minute), at(20*time.Minute)
		mk := func(org string, st call.Status, updated time.Time) call.Call {
			c := newCall(org, call.Phone, t0)
			c.Status, c.UpdatedAt = st, updated
			if st == call.Ended {
				c.EndedAt, c.Outcome = updated, call.Completed
			}
			return mustCall(t, s, c)
		}
		queued := mk(o.ID, call.Queued, old)
		ringing := mk(o.ID, call.Ringing, old)
		inProgress := mk(o.ID, call.InProgress, old)
		foreign := mk(other.ID, call.InProgress, old)
		mk(o.ID, call.Ended, old)
		mk(o.ID, call.InProgress, recent)
		mk(o.ID, call.Ringing, cutoff) // updated exactly at the cutoff: not before it

		got, err := s.StaleCalls(ctx, cutoff, 100)
		must(t, "StaleCalls", err)
		sameIDSet(t, fmt.Sprintf("StaleCalls(before %v, 100)", cutoff), callIDs(got), callIDs([]call.Call{queued, ringing, inProgress, foreign}))
		for _, c := range got {
			if c.ID == foreign.ID {
				equal(t, "StaleCalls: the other org's call", normCall(c), normCall(foreign))
			}
		}
		got, err = s.StaleCalls(ctx, cutoff, 2)
		must(t, "StaleCalls", err)
		if len(got) != 2 {
			t.Errorf("StaleCalls(before %v, limit 2) = %d calls; want 2", cutoff, len(got))
		}
		got, err = s.StaleCalls(ctx, old, 100)
		must(t, "StaleCalls", err)
		if len(got) != 0 {
			t.Errorf("StaleCalls(before the oldest update) = %v; want none", callIDs(got))
		}

		// A status change that refreshes UpdatedAt takes the call out.
		upd := queued
		upd.Status, upd.UpdatedAt = call.Ringing, recent
		must(t, "UpdateCall", s.UpdateCall(ctx, upd, call.Queued))
		fin := ringing
		fin.Status, fin.UpdatedAt, fin.EndedAt, fin.Outcome = call.Ended, old, old, call.Failed
		must(t, "UpdateCall", s.UpdateCall(ctx, fin, call.Ringing))
		got, err = s.StaleCalls(ctx, cutoff, 100)
		must(t, "StaleCalls", err)
		sameIDSet(t, "StaleCalls after one call was refreshed and one ended", callIDs(got), callIDs([]call.Call{inProgress, foreign}))
	})

	t.Run("CallCounts", func(t *testing.T) {
		// The metrics' totals by status, across organizations.
		t.Parallel()
		s, ctx := open(t), t.Context()
		cc, ok := counter(s)
		if !ok {
			t.Skip("the store does not implement store.Counter")
		}
		check := func(step string, want map[call.Status]int64) {
			t.Helper()
			got, err := cc.CallCounts(ctx)
			must(t, step+": CallCounts", err)
			for st := call.Queued; st <= call.Ended; st++ {
				if got[st] != want[st] {
					t.Errorf("%s: CallCounts()[%s] = %d; want %d (all %v)", step, st.Text(), got[st], want[st], got)
				}
			}
		}
		check("empty store", nil)
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := mustCall(t, s, newCall(o.ID, call.Phone, t0))
		mustCall(t, s, newCall(o.ID, call.Web, t0))
		mustCall(t, s, newCall(other.ID, call.Web, t0))
		check("three calls queued in two orgs", map[call.Status]int64{call.Queued: 3})
		c.Status, c.UpdatedAt = call.Ringing, at(time.Second)
		must(t, "UpdateCall(queued → ringing)", s.UpdateCall(ctx, c, call.Queued))
		check("one ringing", map[call.Status]int64{call.Queued: 2, call.Ringing: 1})
		mustEndedCall(t, s, other.ID, at(2*time.Second))
		check("one more ended", map[call.Status]int64{call.Queued: 2, call.Ringing: 1, call.Ended: 1})
		c.Status = call.InProgress
		wantKind(t, "UpdateCall(stale prev status)", s.UpdateCall(ctx, c, call.Queued), apperr.Conflict)
		check("after a refused update", map[call.Status]int64{call.Queued: 2, call.Ringing: 1, call.Ended: 1})
	})

}
