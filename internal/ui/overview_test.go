package ui

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// endedCall stores an ended call of the organization's assistant created
// at created, talking for talk, with its analysis (success nil: not
// evaluated) and one text turn of latency lat.
func (b *testBundle) endedCall(orgID, assistantID string, created time.Time, outcome call.Outcome, reason string, talk time.Duration, success *bool, lat time.Duration) call.Call {
	b.t.Helper()
	ctx := b.t.Context()
	c := call.Call{ID: id.New(id.Call), OrgID: orgID, Type: call.Phone, Status: call.Queued, AssistantID: assistantID,
		From: "+14155550100", To: "+14155551234", Direction: call.Outbound, CreatedAt: created, UpdatedAt: created}
	if err := b.st.CreateCall(ctx, c); err != nil {
		b.t.Fatal(err)
	}
	if lat > 0 {
		if err := b.st.AppendTurn(ctx, call.Turn{ID: id.New("turn"), OrgID: orgID, CallID: c.ID, Seq: 1, Role: call.RoleAssistant, Text: "Hello",
			StartedAt: created, EndedAt: created, Latency: lat}); err != nil {
			b.t.Fatal(err)
		}
	}
	c.Status, c.Outcome, c.EndedReason = call.Ended, outcome, reason
	c.EndedAt = created.Add(talk + time.Second)
	c.UpdatedAt = c.EndedAt
	if talk > 0 {
		c.StartedAt = created.Add(time.Second)
	}
	if err := b.st.UpdateCall(ctx, c, call.Queued); err != nil {
		b.t.Fatal(err)
	}
	res, _ := json.Marshal(map[string]any{"summary": "", "sentiment": map[string]any{"label": "neutral", "score": 0}, "successEvaluation": success})
	if err := b.st.FinishAnalysis(ctx, store.Analysis{CallID: c.ID, OrgID: orgID, State: store.AnalysisReady, Result: res, UpdatedAt: c.EndedAt}); err != nil {
		b.t.Fatal(err)
	}
	return c
}

func (b *testBundle) assistant(orgID, name string) assistant.Assistant {
	b.t.Helper()
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), orgID, name, b.clock.now(), b.clock.now()
	if err := b.st.CreateAssistant(b.t.Context(), a); err != nil {
		b.t.Fatal(err)
	}
	return a
}

// stat reads one of the overview's figures.
func stat(t *testing.T, body, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `data-stat="`+name+`">`)
	if !ok {
		t.Fatalf("the overview has no %s figure", name)
	}
	v, _, _ := strings.Cut(rest, "<")
	return v
}

// TestOverview: the figures and charts of the operator's organization
// for the period and assistant asked, from the rollups; another
// organization's calls and assistants are not there.
func TestOverview(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	yes, no := true, false
	today := b.clock.now().Truncate(24 * time.Hour)
	sales, support := b.assistant(b.orgA, "Sales line"), b.assistant(b.orgA, "Support line")
	theirs := b.assistant(b.orgB, "Theirs")
	b.endedCall(b.orgA, sales.ID, today.Add(time.Hour), call.Completed, call.ReasonCustomerEnded, 2*time.Minute, &yes, 800*time.Millisecond)
	b.endedCall(b.orgA, sales.ID, today.AddDate(0, 0, -2), call.Completed, "assistant-ended-call", time.Minute, &no, 1200*time.Millisecond)
	b.endedCall(b.orgA, support.ID, today.AddDate(0, 0, -1), call.Busy, "customer-busy", 0, nil, 0)
	b.endedCall(b.orgA, support.ID, today.AddDate(0, 0, -40), call.Completed, call.ReasonCustomerEnded, time.Hour, &yes, time.Second) // before the default period
	for range 5 {
		b.endedCall(b.orgB, theirs.ID, today, call.Failed, "provider-failed", 0, nil, 0)
	}
	br := b.signedIn(b.opA)

	p := br.get("/ui/overview")
	wantStatus(t, "GET /ui/overview", p, 200)
	for name, want := range map[string]string{"calls": "3", "minutes": "3.0", "success": "50%"} {
		if got := stat(t, p.body, name); got != want {
			t.Errorf("GET /ui/overview: %s = %q; want %q", name, got, want)
		}
	}
	for _, want := range []string{`id="chart-outcomes"`, `id="chart-minutes"`, `id="chart-success"`, `id="chart-latency"`, `id="chart-reasons"`,
		"Sales line", "Support line", "customer-busy: 1 calls", today.Format("2 Jan") + ": 1 calls, completed 1",
		`href="/ui/calls?from=` + today.Format(time.DateOnly) + `&amp;to=` + today.Format(time.DateOnly) + `"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("GET /ui/overview lacks %q", want)
		}
	}
	if strings.Contains(p.body, "provider-failed") || strings.Contains(p.body, "Theirs") {
		t.Error("GET /ui/overview shows another organization's calls or assistants")
	}

	p = br.get("/ui/overview?assistant=" + sales.ID)
	wantStatus(t, "GET /ui/overview?assistant=Sales", p, 200)
	if got := stat(t, p.body, "calls"); got != "2" {
		t.Errorf("GET /ui/overview?assistant=Sales: calls = %s; want 2", got)
	}
	if strings.Contains(p.body, "customer-busy") {
		t.Error("GET /ui/overview?assistant=Sales shows Support's busy call")
	}
	from := today.AddDate(0, 0, -45).Format(time.DateOnly)
	p = br.get("/ui/overview?from=" + from + "&to=" + today.AddDate(0, 0, -30).Format(time.DateOnly))
	if got := stat(t, p.body, "calls"); got != "1" {
		t.Errorf("GET /ui/overview (days -45 to -30): calls = %s; want the one of day -40", got)
	}
	if got := stat(t, p.body, "minutes"); got != "60.0" {
		t.Errorf("GET /ui/overview (days -45 to -30): minutes = %s; want 60.0", got)
	}

	for q, want := range map[string]string{
		"assistant=" + theirs.ID:                            "Assistant must be one of the organization",
		"assistant=nope":                                    "Assistant must be one of the organization",
		"from=yesterday":                                    "From must be a date",
		"from=2026-02-10&to=2026-02-01":                     "From must not be after To",
		"from=2025-01-01&to=" + today.Format(time.DateOnly): "at most 92 days",
	} {
		p := br.get("/ui/overview?" + q)
		wantStatus(t, "GET /ui/overview?"+q, p, 400)
		if !strings.Contains(p.body, want) {
			t.Errorf("GET /ui/overview?%s lacks %q", q, want)
		}
	}
	// Another organization's assistant shows nothing of it.
	if p := br.get("/ui/overview?assistant=" + url.QueryEscape(theirs.ID)); strings.Contains(p.body, "Theirs") || stat(t, p.body, "calls") != "3" {
		t.Errorf("GET /ui/overview?assistant=(another org's): want the organization's own overview, no name of theirs")
	}

	// B's operator sees B's calls only.
	pb := b.signedIn(b.opB).get("/ui/overview")
	if got := stat(t, pb.body, "calls"); got != "5" {
		t.Errorf("B's overview: calls = %s; want 5", got)
	}
	// An empty organization: no charts, a pointer to a test call.
	if p := br.get("/ui/overview?from=2020-01-01&to=2020-01-31"); !strings.Contains(p.body, `id="no-calls"`) || strings.Contains(p.body, "<svg") {
		t.Error("an empty period: want the no-calls notice and no chart")
	}
}
