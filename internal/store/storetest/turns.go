package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

func newTurn(c call.Call, seq int, role, text string, started time.Time) call.Turn {
	return call.Turn{
		ID: id.New("turn"), OrgID: c.OrgID, CallID: c.ID, Seq: seq, Role: role, Text: text,
		StartedAt: started, EndedAt: started.Add(1500 * time.Millisecond),
	}
}

// breakdown is a voice turn's breakdown whose durations have parts below
// the microsecond, which the store drops (it keeps microseconds).
func breakdown(base time.Duration) call.Breakdown {
	return call.Breakdown{
		Endpointing: base + 250*time.Millisecond + 999,
		Transcriber: base + 80*time.Millisecond + 1,
		Model:       base + 310*time.Millisecond + 123_456,
		Voice:       base + 95*time.Millisecond,
		Platform:    base + 4*time.Millisecond + 321,
		Total:       5*base + 739*time.Millisecond + 124_777,
	}
}

func normTurn(t call.Turn) call.Turn {
	t.StartedAt, t.EndedAt = msTime(t.StartedAt), msTime(t.EndedAt)
	t.Latency = t.Latency.Truncate(time.Microsecond)
	if t.Breakdown != nil {
		b := *t.Breakdown
		for _, d := range []*time.Duration{&b.Endpointing, &b.Transcriber, &b.Model, &b.Voice, &b.Platform, &b.Total} {
			*d = d.Truncate(time.Microsecond)
		}
		t.Breakdown = &b
	}
	return t
}

// mustTurns appends the turns in order.
func mustTurns(t *testing.T, s store.Store, turns ...call.Turn) {
	t.Helper()
	for _, tn := range turns {
		must(t, fmt.Sprintf("AppendTurn(%s seq %d)", tn.CallID, tn.Seq), s.AppendTurn(t.Context(), tn))
	}
}

// listTurns checks a call's turns as ListTurns returns them.
func listTurns(t *testing.T, s store.Store, orgID, callID, step string, want ...call.Turn) {
	t.Helper()
	got, err := s.ListTurns(t.Context(), orgID, callID)
	desc := fmt.Sprintf("%s: ListTurns(%s)", step, callID)
	must(t, desc, err)
	equal(t, desc, norm(got, normTurn), norm(want, normTurn))
}

func testTurns(t *testing.T, open Opener) {
	t.Run("AppendList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		c := mustCall(t, s, newCall(o.ID, call.Web, t0))
		first := newTurn(c, 1, call.RoleAssistant, "Hello! How can I help?", at(time.Second))
		user := newTurn(c, 2, call.RoleUser, "Book me for Tuesday.", at(3*time.Second))
		reply := newTurn(c, 3, call.RoleAssistant, "Tuesday it is.", at(4*time.Second))
		reply.Latency = 739*time.Millisecond + 124_777
		b := breakdown(0)
		reply.Breakdown = &b
		text := newTurn(c, 4, call.RoleAssistant, "Anything else?", at(6*time.Second))
		text.Latency, text.Interrupted = 48*time.Microsecond, true
		mustTurns(t, s, first, user, text, reply) // stored out of order, listed by seq

		listTurns(t, s, o.ID, c.ID, "after AppendTurn", first, user, reply, text)

		dup := newTurn(c, 2, call.RoleUser, "again", at(5*time.Second))
		wantKind(t, "AppendTurn(seq already stored)", s.AppendTurn(ctx, dup), apperr.Conflict)
		listTurns(t, s, o.ID, c.ID, "after a refused AppendTurn", first, user, reply, text)

		none, err := s.ListTurns(ctx, o.ID, id.New(id.Call))
		must(t, "ListTurns(call without turns)", err)
		if len(none) != 0 {
			t.Errorf("ListTurns(call without turns) = %d turns; want none", len(none))
		}
	})

	// Concurrent appends (stored in groups on one store) each store their
	// own turn, and of two turns with one seq exactly one is stored.
	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o := mustOrg(t, s, "Acme")
		var calls []call.Call
		for i := range 4 {
			calls = append(calls, mustCall(t, s, newCall(o.ID, call.Phone, at(time.Duration(i)*time.Second))))
		}
		const perCall = 25
		type appended struct {
			tn  call.Turn
			err error
		}
		results := make(chan appended, len(calls)*(perCall+1))
		var wg sync.WaitGroup
		for _, c := range calls {
			for seq := 1; seq <= perCall; seq++ {
				tn := newTurn(c, seq, call.RoleUser, fmt.Sprintf("turn %d", seq), at(time.Duration(seq)*time.Second))
				wg.Go(func() { results <- appended{tn, s.AppendTurn(t.Context(), tn)} })
			}
			rival := newTurn(c, 7, call.RoleAssistant, "rival of turn 7", at(7*time.Second))
			wg.Go(func() { results <- appended{rival, s.AppendTurn(t.Context(), rival)} })
		}
		wg.Wait()
		close(results)
		stored := map[string]call.Turn{}
		refused := map[string]int{}
		for r := range results {
			switch {
			case r.err == nil:
				stored[r.tn.ID] = r.tn
			case apperr.Is(r.err, apperr.Conflict) && r.tn.Seq == 7:
				refused[r.tn.CallID]++
			default:
				t.Errorf("AppendTurn(%s seq %d) = %v", r.tn.CallID, r.tn.Seq, r.err)
			}
		}
		for _, c := range calls {
			got, err := s.ListTurns(t.Context(), o.ID, c.ID)
			must(t, "ListTurns", err)
			if len(got) != perCall || refused[c.ID] != 1 {
				t.Errorf("call %s: %d turns stored, %d refused; want %d and the one rival of seq 7", c.ID, len(got), refused[c.ID], perCall)
			}
			for i, tn := range got {
				want, ok := stored[tn.ID]
				if !ok || tn.Seq != i+1 {
					t.Errorf("call %s: turn %d listed is %s seq %d, whose AppendTurn did not succeed (or out of order)", c.ID, i, tn.ID, tn.Seq)
					continue
				}
				equal(t, "listed turn", normTurn(tn), normTurn(want))
			}
		}
	})

	t.Run("Breakdown", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		c := mustCall(t, s, newCall(o.ID, call.Phone, t0))
		// The first message has no breakdown: nil stays nil.
		first := newTurn(c, 1, call.RoleAssistant, "Hello!", at(time.Second))
		user := newTurn(c, 2, call.RoleUser, "What are your hours?", at(2*time.Second))
		reply := newTurn(c, 3, call.RoleAssistant, "Nine to five.", at(3*time.Second))
		reply.Latency = 700 * time.Millisecond
		b := breakdown(time.Second) // parts below the microsecond are dropped
		reply.Breakdown = &b
		// An all-zero breakdown is still a breakdown (not "none").
		zero := newTurn(c, 4, call.RoleAssistant, "Anything else?", at(4*time.Second))
		zero.Breakdown = &call.Breakdown{}
		mustTurns(t, s, first, user, reply, zero)

		listTurns(t, s, o.ID, c.ID, "after AppendTurn with breakdowns", first, user, reply, zero)
		got, err := s.ListTurns(ctx, o.ID, c.ID)
		must(t, "ListTurns", err)
		if len(got) == 4 {
			for i, want := range []bool{false, false, true, true} {
				if has := got[i].Breakdown != nil; has != want {
					t.Errorf("ListTurns: turn %d has a breakdown: %v; want %v", got[i].Seq, has, want)
				}
			}
		}
	})

	t.Run("Interrupted", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o := mustOrg(t, s, "Acme")
		c := mustCall(t, s, newCall(o.ID, call.Web, t0))
		// A barge-in: the turn is stored with what the caller heard, marked
		// interrupted, with its breakdown.
		user := newTurn(c, 1, call.RoleUser, "Tell me about the plans.", at(time.Second))
		reply := newTurn(c, 2, call.RoleAssistant, "We have three plans:", at(2*time.Second))
		reply.Latency, reply.Interrupted = 650*time.Millisecond, true
		b := breakdown(0)
		reply.Breakdown = &b
		// Cut before anything was heard: no text, still interrupted.
		silent := newTurn(c, 3, call.RoleAssistant, "", at(3*time.Second))
		silent.Interrupted = true
		mustTurns(t, s, user, reply, silent)

		listTurns(t, s, o.ID, c.ID, "after AppendTurn of interrupted turns", user, reply, silent)
	})

	t.Run("OtherOrgIsNotFound", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := mustCall(t, s, newCall(o.ID, call.Web, t0))
		reply := newTurn(c, 1, call.RoleAssistant, "Hello there.", at(time.Second))
		b := breakdown(0)
		reply.Breakdown = &b
		mustTurns(t, s, reply)

		got, err := s.ListTurns(ctx, other.ID, c.ID)
		must(t, "ListTurns(other org, call)", err)
		if len(got) != 0 {
			t.Errorf("ListTurns(other org, call) = %d turns; want none", len(got))
		}
		listTurns(t, s, o.ID, c.ID, "owner, after the other org's ListTurns", reply)
	})
}
