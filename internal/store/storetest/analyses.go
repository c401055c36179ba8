package storetest

import (
	"fmt"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// mustEndedCall stores a web call of the organization and ends it at
// ended, which queues its analysis.
func mustEndedCall(t *testing.T, s store.Store, orgID string, ended time.Time) call.Call {
	t.Helper()
	c := mustCall(t, s, newCall(orgID, call.Web, t0))
	c.Status, c.Outcome, c.EndedReason, c.EndedAt, c.UpdatedAt = call.Ended, call.Completed, call.ReasonCustomerEnded, ended, ended
	must(t, fmt.Sprintf("UpdateCall(%s, queued → ended)", c.ID), s.UpdateCall(t.Context(), c, call.Queued))
	return c
}

func normAnalysis(a store.Analysis) store.Analysis {
	a.Result = nilIfEmpty(a.Result)
	a.CreatedAt, a.UpdatedAt = msTime(a.CreatedAt), msTime(a.UpdatedAt)
	return a
}

// pendingAnalysis is the analysis a call ended at ended has before any claim.
func pendingAnalysis(c call.Call) store.Analysis {
	return store.Analysis{CallID: c.ID, OrgID: c.OrgID, State: store.AnalysisPending, CreatedAt: c.UpdatedAt, UpdatedAt: c.UpdatedAt}
}

// getAnalysis checks GetAnalysis against want.
func getAnalysis(t *testing.T, s store.Store, step string, want store.Analysis) {
	t.Helper()
	got, err := s.GetAnalysis(t.Context(), want.OrgID, want.CallID)
	call := fmt.Sprintf("%s: GetAnalysis(%s)", step, want.CallID)
	must(t, call, err)
	equal(t, call, normAnalysis(got), normAnalysis(want))
}

// claimAnalyses claims with ClaimAnalyses, failing the test on an error.
func claimAnalyses(t *testing.T, s store.Store, now time.Time, limit int) []store.Analysis {
	t.Helper()
	as, err := s.ClaimAnalyses(t.Context(), now, lease, limit)
	must(t, fmt.Sprintf("ClaimAnalyses(now %v, lease %v, limit %d)", now, lease, limit), err)
	return as
}

func analysisIDs(as []store.Analysis) []string {
	return ids(as, func(a store.Analysis) string { return a.CallID })
}

func testAnalyses(t *testing.T, open Opener) {
	t.Run("PendingWhenCallEnds", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := mustCall(t, s, newCall(o.ID, call.Phone, t0))
		_, err := s.GetAnalysis(ctx, o.ID, c.ID)
		wantKind(t, "GetAnalysis(call not ended)", err, apperr.NotFound)
		c.Status, c.UpdatedAt = call.Ringing, at(time.Second)
		must(t, "UpdateCall(queued → ringing)", s.UpdateCall(ctx, c, call.Queued))
		_, err = s.GetAnalysis(ctx, o.ID, c.ID)
		wantKind(t, "GetAnalysis(call ringing)", err, apperr.NotFound)
		if as := claimAnalyses(t, s, at(time.Hour), 10); len(as) != 0 {
			t.Errorf("ClaimAnalyses before any call ended = %v; want none", analysisIDs(as))
		}

		ended := at(5*time.Second + 250*time.Microsecond)
		c.Status, c.Outcome, c.EndedAt, c.UpdatedAt = call.Ended, call.NoAnswer, ended, ended
		must(t, "UpdateCall(ringing → ended)", s.UpdateCall(ctx, c, call.Ringing))
		want := pendingAnalysis(c)
		getAnalysis(t, s, "after the call ended", want)
		_, err = s.GetAnalysis(ctx, other.ID, c.ID)
		wantKind(t, "GetAnalysis(other org, call)", err, apperr.NotFound)
		_, err = s.GetAnalysis(ctx, o.ID, id.New(id.Call))
		wantKind(t, "GetAnalysis(unknown call)", err, apperr.NotFound)

		// An update of the ended call does not queue a second analysis nor
		// reset the first.
		claimAnalyses(t, s, ended, 10)
		c.EndedReason, c.UpdatedAt = "note", at(time.Minute)
		must(t, "UpdateCall(ended → ended)", s.UpdateCall(ctx, c, call.Ended))
		want.Attempts = 1
		getAnalysis(t, s, "after a claim and an update of the ended call", want)
	})

	t.Run("ClaimLease", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		calls := []call.Call{
			mustEndedCall(t, s, o.ID, at(time.Second)),
			mustEndedCall(t, s, other.ID, at(2*time.Second)),
			mustEndedCall(t, s, o.ID, at(3*time.Second)),
		}
		want := map[string]store.Analysis{}
		for _, c := range calls {
			want[c.ID] = pendingAnalysis(c)
		}
		// check compares claimed analyses (of any organization) with want,
		// each with the given attempts.
		check := func(step string, got []store.Analysis, attempts int) {
			t.Helper()
			for _, a := range got {
				w, ok := want[a.CallID]
				if !ok {
					t.Errorf("%s: claimed unknown analysis %s", step, a.CallID)
					continue
				}
				w.Attempts = attempts
				equal(t, fmt.Sprintf("%s: claimed analysis %s", step, a.CallID), normAnalysis(a), normAnalysis(w))
				getAnalysis(t, s, step, w)
			}
		}

		now := at(time.Minute)
		first := claimAnalyses(t, s, now, 2)
		if len(first) != 2 {
			t.Fatalf("ClaimAnalyses(limit 2) of 3 pending = %d; want 2", len(first))
		}
		check("first claim", first, 1)
		rest := claimAnalyses(t, s, now, 10)
		check("second claim", rest, 1)
		claimed := append(analysisIDs(first), analysisIDs(rest)...)
		sameIDSet(t, "ClaimAnalyses(limit 2) then ClaimAnalyses(limit 10)", claimed, callIDs(calls))
		if dup := duplicates(claimed); len(dup) > 0 {
			t.Errorf("ClaimAnalyses claimed %v twice within one lease", dup)
		}
		if as := claimAnalyses(t, s, now, 10); len(as) != 0 {
			t.Errorf("ClaimAnalyses with all leased = %v; want none", analysisIDs(as))
		}
		if as := claimAnalyses(t, s, now.Add(lease-time.Millisecond), 10); len(as) != 0 {
			t.Errorf("ClaimAnalyses just before the lease ends = %v; want none", analysisIDs(as))
		}
		again := claimAnalyses(t, s, now.Add(lease+time.Millisecond), 10)
		sameIDSet(t, "ClaimAnalyses after the lease expired", analysisIDs(again), callIDs(calls))
		check("claim after the lease expired", again, 2)
	})

	t.Run("Finish", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		w := mustWebhook(t, s, o.ID, evAnalysis)
		mustWebhook(t, s, o.ID, evEnded)
		wo := mustWebhook(t, s, other.ID, evAnalysis)
		ready := mustEndedCall(t, s, o.ID, at(time.Second))
		failed := mustEndedCall(t, s, o.ID, at(2*time.Second))
		as := claimAnalyses(t, s, at(time.Minute), 10)
		if len(as) != 2 {
			t.Fatalf("ClaimAnalyses = %v; want the analyses of %s and %s", analysisIDs(as), ready.ID, failed.ID)
		}
		claimed := map[string]store.Analysis{as[0].CallID: as[0], as[1].CallID: as[1]}

		// Refused, changing nothing and queueing nothing: another org's id,
		// an unknown call, an event that cannot be queued (its data is not
		// JSON: the analysis must not be stored without its event).
		a := claimed[ready.ID]
		a.State, a.Result, a.UpdatedAt = store.AnalysisReady, []byte(`{"summary":"ok"}`), at(2*time.Minute)
		ev := newEvent(evAnalysis, a.UpdatedAt)
		hijack := a
		hijack.OrgID = other.ID
		wantKind(t, "FinishAnalysis(analysis with the other org's id)", s.FinishAnalysis(ctx, hijack, ev), apperr.NotFound)
		unknown := a
		unknown.CallID = id.New(id.Call)
		wantKind(t, "FinishAnalysis(unknown call)", s.FinishAnalysis(ctx, unknown, ev), apperr.NotFound)
		bad := newEvent(evAnalysis, a.UpdatedAt)
		bad.Data = []byte(`{"summary":`)
		wantErr(t, "FinishAnalysis(with an event whose data is not JSON)", s.FinishAnalysis(ctx, a, bad))
		getAnalysis(t, s, "after refused FinishAnalysis calls", claimed[ready.ID])
		claimNone(t, s, "after refused FinishAnalysis calls", at(time.Hour))

		// Ready: stored with its event, in one transaction.
		must(t, "FinishAnalysis(ready)", s.FinishAnalysis(ctx, a, ev))
		getAnalysis(t, s, "after FinishAnalysis(ready)", a)
		m := claimOne(t, s, "after FinishAnalysis(ready)", a.UpdatedAt)
		wantMessage(t, "ClaimOutbox after FinishAnalysis(ready)", m, w, ev, 0)
		d := delivery(m, 1, 204, a.UpdatedAt)
		must(t, "RecordDelivery(delivered)", s.RecordDelivery(ctx, m, d, store.OutboxDelivered, d.At))
		_, err := s.GetAnalysis(ctx, other.ID, ready.ID)
		wantKind(t, "GetAnalysis(other org, ready analysis)", err, apperr.NotFound)

		// Failed, without an event.
		f := claimed[failed.ID]
		f.State, f.Error, f.UpdatedAt = store.AnalysisFailed, "model unavailable", at(3*time.Minute)
		must(t, "FinishAnalysis(failed)", s.FinishAnalysis(ctx, f))
		getAnalysis(t, s, "after FinishAnalysis(failed)", f)

		// Finished analyses are never claimed again, and finishing one
		// again (its lease expired, another node finished it) is NotFound
		// and queues nothing.
		if got := claimAnalyses(t, s, at(24*time.Hour), 10); len(got) != 0 {
			t.Errorf("ClaimAnalyses after both finished = %v; want none", analysisIDs(got))
		}
		again := a
		again.Result, again.UpdatedAt = []byte(`{"summary":"twice"}`), at(4*time.Minute)
		wantKind(t, "FinishAnalysis(already finished)", s.FinishAnalysis(ctx, again, newEvent(evAnalysis, again.UpdatedAt)), apperr.NotFound)
		getAnalysis(t, s, "after a second FinishAnalysis", a)
		if ms := claimOutbox(t, s, at(24*time.Hour), 10); len(ms) != 0 {
			t.Errorf("ClaimOutbox: messages for %v; want none (the other org's endpoint %s gets nothing either)", endpoints(ms), wo.ID)
		}
	})

	t.Run("ConcurrentClaims", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		claimAnalysesRace(t, s, s)
	})
}
