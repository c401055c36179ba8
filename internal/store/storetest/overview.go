package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// endCall ends a stored queued call with the outcome and reason, the
// conversation having lasted talk (none when 0), through UpdateCall.
func endCall(t *testing.T, s store.Store, c call.Call, outcome call.Outcome, reason string, talk time.Duration) call.Call {
	t.Helper()
	c.Status, c.Outcome, c.EndedReason = call.Ended, outcome, reason
	c.UpdatedAt = c.CreatedAt.Add(talk + time.Second)
	c.EndedAt = c.UpdatedAt
	if talk > 0 {
		c.StartedAt = c.EndedAt.Add(-talk)
	}
	must(t, fmt.Sprintf("UpdateCall(%s → ended %s)", c.ID, outcome), s.UpdateCall(t.Context(), c, call.Queued))
	return c
}

// finish stores the call's analysis as the worker does, with success
// (nil: not evaluated).
func finish(t *testing.T, s store.Store, c call.Call, success *bool) {
	t.Helper()
	res, _ := json.Marshal(map[string]any{"summary": "s", "sentiment": map[string]any{"label": "neutral", "score": 0}, "successEvaluation": success})
	a := store.Analysis{CallID: c.ID, OrgID: c.OrgID, State: store.AnalysisReady, Result: res, UpdatedAt: c.EndedAt.Add(time.Second)}
	must(t, fmt.Sprintf("FinishAnalysis(%s)", c.ID), s.FinishAnalysis(t.Context(), a))
}

// overview reads the organization's overview, failing on an error.
func overview(t *testing.T, s store.Store, orgID string, f store.OverviewFilter) store.Overview {
	t.Helper()
	o, err := s.Overview(t.Context(), orgID, f)
	must(t, fmt.Sprintf("Overview(%s, %+v)", orgID, f), err)
	return o
}

// hist is a histogram of the latencies given.
func hist(ds ...time.Duration) store.Histogram {
	var h store.Histogram
	for _, d := range ds {
		h.Add(store.LatencyBucket(d.Microseconds()), 1)
	}
	return h
}

func testOverview(t *testing.T, open Opener) {
	yes, no := true, false
	day0 := t0.Truncate(24 * time.Hour)
	t.Run("CallsByDay", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a1, a2 := mustAssistant(t, s, o.ID, "Sales", t0), mustAssistant(t, s, o.ID, "Support", t0)
		mk := func(orgID, assistantID string, created time.Time) call.Call {
			c := newCall(orgID, call.Phone, created)
			c.AssistantID = assistantID
			return mustCall(t, s, c)
		}
		// Day 0: two completed calls of Sales (90 s, 30 s) and one busy of
		// Support; a live call, which is not counted.
		c1 := endCall(t, s, mk(o.ID, a1.ID, day0.Add(time.Hour)), call.Completed, call.ReasonCustomerEnded, 90*time.Second)
		c2 := endCall(t, s, mk(o.ID, a1.ID, day0.Add(2*time.Hour)), call.Completed, call.ReasonCustomerEnded, 30*time.Second+250*time.Millisecond)
		c3 := endCall(t, s, mk(o.ID, a2.ID, day0.Add(3*time.Hour)), call.Busy, "customer-busy", 0)
		mk(o.ID, a1.ID, day0.Add(4*time.Hour))
		// Day 1, just after midnight UTC: a batch of ends (UpdateCalls),
		// one no-answer and one completed.
		b1, b2 := mk(o.ID, a1.ID, day0.Add(24*time.Hour+time.Millisecond)), mk(o.ID, a2.ID, day0.Add(25*time.Hour))
		var us []store.CallUpdate
		for _, x := range []struct {
			c       call.Call
			outcome call.Outcome
			reason  string
			talk    time.Duration
		}{{b1, call.NoAnswer, "customer-did-not-answer", 0}, {b2, call.Completed, "assistant-ended-call", 10 * time.Second}} {
			c := x.c
			c.Status, c.Outcome, c.EndedReason, c.UpdatedAt = call.Ended, x.outcome, x.reason, c.CreatedAt.Add(time.Minute)
			c.EndedAt = c.UpdatedAt
			if x.talk > 0 {
				c.StartedAt = c.EndedAt.Add(-x.talk)
			}
			us = append(us, store.CallUpdate{Call: c, Prev: call.Queued})
		}
		errs, err := s.UpdateCalls(ctx, us)
		must(t, "UpdateCalls(two ends)", err)
		for i, e := range errs {
			must(t, fmt.Sprintf("UpdateCalls: call %d", i), e)
		}
		// The other organization's call on day 0 is not Acme's.
		finish(t, s, endCall(t, s, mk(other.ID, id.New(id.Assistant), day0.Add(time.Hour)), call.Completed, call.ReasonCustomerEnded, time.Minute), nil)
		// An ended call is counted once its analysis has run.
		d1 := day0.AddDate(0, 0, 1)
		equal(t, "Overview before any analysis.Days", overview(t, s, o.ID, store.OverviewFilter{From: day0, To: d1}).Days, []store.DayCount{})
		// Analyses: c1 succeeded, c2 did not, c3 not evaluated; b1's
		// failed (the call counts, no success), b2's evaluated nothing.
		finish(t, s, c1, &yes)
		finish(t, s, c2, &no)
		finish(t, s, c3, nil)
		must(t, "FinishAnalysis(b1, failed)", s.FinishAnalysis(ctx, store.Analysis{CallID: b1.ID, OrgID: o.ID, State: store.AnalysisFailed,
			Error: "model failed", UpdatedAt: at(time.Hour)}))
		finish(t, s, us[1].Call, nil)
		// A second finish of the same analysis is refused and counts nothing.
		wantKind(t, "FinishAnalysis(c1 again)", s.FinishAnalysis(ctx, store.Analysis{CallID: c1.ID, OrgID: o.ID, State: store.AnalysisReady,
			Result: []byte(`{}`), UpdatedAt: at(time.Hour)}), apperr.NotFound)

		want := []store.DayCount{
			{Day: day0, Outcome: call.Busy, EndedReason: "customer-busy", Calls: 1},
			{Day: day0, Outcome: call.Completed, EndedReason: call.ReasonCustomerEnded, Calls: 2, Duration: 120*time.Second + 250*time.Millisecond, Evaluated: 2, Succeeded: 1},
			{Day: d1, Outcome: call.Completed, EndedReason: "assistant-ended-call", Calls: 1, Duration: 10 * time.Second},
			{Day: d1, Outcome: call.NoAnswer, EndedReason: "customer-did-not-answer", Calls: 1},
		}
		got := overview(t, s, o.ID, store.OverviewFilter{From: day0, To: d1.Add(5 * time.Hour)})
		equal(t, "Overview(days 0-1).Days", got.Days, want)
		got = overview(t, s, o.ID, store.OverviewFilter{From: d1, To: d1})
		equal(t, "Overview(day 1).Days", got.Days, want[2:])
		got = overview(t, s, o.ID, store.OverviewFilter{From: day0, To: d1, AssistantID: a1.ID})
		equal(t, "Overview(days 0-1, Sales).Days", got.Days, []store.DayCount{want[1], {Day: d1, Outcome: call.NoAnswer, EndedReason: "customer-did-not-answer", Calls: 1}})
		got = overview(t, s, o.ID, store.OverviewFilter{From: day0.AddDate(0, 0, 2), To: day0.AddDate(0, 0, 9)})
		equal(t, "Overview(days 2-9).Days", got.Days, []store.DayCount{})
		got = overview(t, s, other.ID, store.OverviewFilter{From: day0, To: day0, AssistantID: a1.ID})
		equal(t, "Overview(other org, Acme's assistant).Days", got.Days, []store.DayCount{})
		got = overview(t, s, other.ID, store.OverviewFilter{From: day0, To: day0})
		if len(got.Days) != 1 || got.Days[0].Calls != 1 || got.Days[0].Duration != time.Minute {
			t.Errorf("Overview(other org, day 0).Days = %+v; want its one call of a minute", got.Days)
		}
	})

	t.Run("Latency", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a1 := mustAssistant(t, s, o.ID, "Sales", t0)
		c := newCall(o.ID, call.Web, day0.Add(time.Hour))
		c.AssistantID = a1.ID
		c = mustCall(t, s, c)
		voice := newTurn(c, 2, call.RoleAssistant, "Tuesday it is.", at(4*time.Second))
		b := breakdown(0)
		voice.Breakdown, voice.Latency = &b, b.Total
		text := newTurn(c, 3, call.RoleAssistant, "Anything else?", at(6*time.Second))
		text.Latency = 48 * time.Microsecond
		first := newTurn(c, 1, call.RoleAssistant, "Hello!", at(time.Second)) // no latency: not counted
		user := newTurn(c, 4, call.RoleUser, "No.", at(8*time.Second))
		mustTurns(t, s, first, voice, text, user)
		c = endCall(t, s, c, call.Completed, call.ReasonCustomerEnded, 10*time.Second)
		// Before the analysis, the turns are not counted: the histograms
		// are written with it, once.
		if got := overview(t, s, o.ID, store.OverviewFilter{From: day0, To: day0}); len(got.Latency) != 0 {
			t.Errorf("Overview before the analysis: Latency = %v; want none", got.Latency)
		}
		finish(t, s, c, &yes)
		want := map[string]store.Histogram{
			"endpointing": hist(b.Endpointing), "transcriber": hist(b.Transcriber), "model": hist(b.Model),
			"voice": hist(b.Voice), "platform": hist(b.Platform), "total": hist(b.Total, text.Latency),
		}
		got := overview(t, s, o.ID, store.OverviewFilter{From: day0, To: day0})
		equal(t, "Overview.Latency", got.Latency, want)
		if q, ok := got.Latency["total"].Quantile(0.95); !ok || q < b.Total*91/100 || q > b.Total*109/100 {
			t.Errorf("Overview.Latency[total].Quantile(0.95) = %v, %v; want within 9%% of %v", q, ok, b.Total)
		}
		got = overview(t, s, o.ID, store.OverviewFilter{From: day0, To: day0, AssistantID: a1.ID})
		equal(t, "Overview(its assistant).Latency", got.Latency, want)
		got = overview(t, s, o.ID, store.OverviewFilter{From: day0, To: day0, AssistantID: id.New(id.Assistant)})
		equal(t, "Overview(another assistant).Latency", got.Latency, map[string]store.Histogram{})
		got = overview(t, s, other.ID, store.OverviewFilter{From: day0, To: day0})
		equal(t, "Overview(other org).Latency", got.Latency, map[string]store.Histogram{})
	})

	t.Run("AssistantNames", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a1, a2 := mustAssistant(t, s, o.ID, "Sales", t0), mustAssistant(t, s, o.ID, "Support", t0)
		theirs := mustAssistant(t, s, other.ID, "Theirs", t0)
		got, err := s.AssistantNames(ctx, o.ID, []string{a1.ID, a2.ID, a1.ID, theirs.ID, id.New(id.Assistant)})
		must(t, "AssistantNames", err)
		equal(t, "AssistantNames(own twice, another org's, unknown)", got, map[string]string{a1.ID: "Sales", a2.ID: "Support"})
		got, err = s.AssistantNames(ctx, o.ID, nil)
		must(t, "AssistantNames(none)", err)
		equal(t, "AssistantNames(none)", got, map[string]string{})
	})

	t.Run("Search", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		out := newCall(o.ID, call.Phone, at(time.Second))
		out.To = "+33611111111"
		out = mustCall(t, s, out)
		in := newCall(o.ID, call.Phone, at(2*time.Second))
		in.From, in.To, in.Direction = "+33611111111", "+15550100", call.Inbound
		in = mustCall(t, s, in)
		loop := newCall(o.ID, call.Phone, at(2500*time.Millisecond)) // the number on both sides: listed and counted once
		loop.From, loop.To = "+33622222222", "+33622222222"
		loop = mustCall(t, s, loop)
		web := mustCall(t, s, newCall(o.ID, call.Web, at(3*time.Second)))
		theirs := newCall(other.ID, call.Phone, at(4*time.Second))
		theirs.To = "+33611111111"
		theirs = mustCall(t, s, theirs)
		page := store.Page{Page: 1, PageSize: 10}
		for _, tc := range []struct {
			name  string
			f     store.CallFilter
			want  []string
			total int // when more than want
		}{
			{"number, either party", store.CallFilter{Number: "+33611111111", Page: page}, []string{in.ID, out.ID}, 0},
			{"our number", store.CallFilter{Number: "+15550100", Page: page}, []string{in.ID, out.ID}, 0},
			{"both sides", store.CallFilter{Number: "+33622222222", Page: page}, []string{loop.ID}, 0},
			{"number, page 2 of 1", store.CallFilter{Number: "+33611111111", Page: store.Page{Page: 2, PageSize: 1}}, []string{out.ID}, 2},
			{"number and direction", store.CallFilter{Number: "+33611111111", Direction: call.Inbound, Page: page}, []string{in.ID}, 0},
			{"no such number", store.CallFilter{Number: "+33699999999", Page: page}, []string{}, 0},
			{"call id", store.CallFilter{CallID: web.ID, Page: page}, []string{web.ID}, 0},
			{"another org's call id", store.CallFilter{CallID: theirs.ID, Page: page}, []string{}, 0},
		} {
			cs, total, err := s.ListCalls(ctx, o.ID, tc.f)
			desc := fmt.Sprintf("ListCalls(%s)", tc.name)
			must(t, desc, err)
			equal(t, desc, ids(cs, func(c call.Call) string { return c.ID }), tc.want)
			if want := max(len(tc.want), tc.total); total != want {
				t.Errorf("%s: total = %d; want %d", desc, total, want)
			}
		}
	})
}
