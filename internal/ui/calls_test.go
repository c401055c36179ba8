package ui

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
)

// TestCallsConsole: the listing names each call's assistant and its
// ended reason, searches by phone number or call id within the
// organization, and exports what it lists as CSV.
func TestCallsConsole(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	yes := true
	now := b.clock.now()
	sales := b.assistant(b.orgA, "=HYPERLINK(\"x\") Sales")
	ada := b.endedCall(b.orgA, sales.ID, now.Add(-time.Hour), call.Completed, call.ReasonCustomerEnded, 90*time.Second, &yes, 0)
	other := b.endedCall(b.orgA, sales.ID, now.Add(-2*time.Hour), call.Busy, "customer-busy", 0, nil, 0)
	inbound := call.Call{ID: id.New(id.Call), OrgID: b.orgA, Type: call.Phone, Status: call.Queued, AssistantID: sales.ID,
		From: "+33612345678", To: "+14155550100", Direction: call.Inbound, CreatedAt: now, UpdatedAt: now,
		Variables: []byte(`{"contact":{"firstName":"Ada"},"tier":"gold"}`), Routing: []byte(`{"source":"fallback","reason":"timeout"}`)}
	if err := b.st.CreateCall(t.Context(), inbound); err != nil {
		t.Fatal(err)
	}
	theirs := b.endedCall(b.orgB, b.assistant(b.orgB, "Theirs").ID, now, call.Completed, call.ReasonCustomerEnded, time.Minute, nil, 0)
	br := b.signedIn(b.opA)

	p := br.get("/ui/calls")
	wantStatus(t, "GET /ui/calls", p, 200)
	for _, want := range []string{"=HYPERLINK(&#34;x&#34;) Sales", `data-field="endedReason" class="reason">customer-busy<`, `<span>&#43;14155550100</span> <span class="sub">→ &#43;14155551234</span>`,
		`href="/ui/calls.csv"`, `href="/ui/test-call"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("GET /ui/calls lacks %q", want)
		}
	}

	for _, tc := range []struct {
		q    string
		want []string
		not  []string
	}{
		{"+33612345678", []string{inbound.ID}, []string{ada.ID, other.ID}},
		{"+33 6 12 34 56 78", []string{inbound.ID}, []string{ada.ID}},
		{"+14155550100", []string{inbound.ID, ada.ID, other.ID}, []string{theirs.ID}},
		{ada.ID, []string{ada.ID}, []string{other.ID, inbound.ID}},
		{theirs.ID, nil, []string{theirs.ID, ada.ID}},
	} {
		p := br.get("/ui/calls?q=" + url.QueryEscape(tc.q))
		wantStatus(t, "GET /ui/calls?q="+tc.q, p, 200)
		for _, w := range tc.want {
			if !strings.Contains(p.body, `data-call-id="`+w+`"`) {
				t.Errorf("search %q: %s not listed", tc.q, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(p.body, `data-call-id="`+n+`"`) {
				t.Errorf("search %q: %s listed", tc.q, n)
			}
		}
	}
	for _, q := range []string{"hello", "call_nope"} {
		p := br.get("/ui/calls?q=" + url.QueryEscape(q))
		wantStatus(t, "GET /ui/calls?q="+q, p, http.StatusBadRequest)
		if !strings.Contains(p.body, "Search") {
			t.Errorf("search %q: the page does not say what is wrong", q)
		}
	}

	// The export: the filtered list, its header, names kept from being
	// formulas, org-scoped.
	p = br.get("/ui/calls.csv?q=%2B14155550100&outcome=completed")
	wantStatus(t, "GET /ui/calls.csv", p, 200)
	if ct := p.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" || !strings.HasPrefix(p.header.Get("Content-Disposition"), "attachment;") {
		t.Errorf("GET /ui/calls.csv: Content-Type %q, Content-Disposition %q; want a CSV attachment", ct, p.header.Get("Content-Disposition"))
	}
	rows, err := csv.NewReader(strings.NewReader(p.body)).ReadAll()
	if err != nil {
		t.Fatalf("GET /ui/calls.csv: not CSV: %v\n%s", err, p.body)
	}
	if len(rows) != 2 || strings.Join(rows[0], ",") != strings.Join(exportHeader, ",") {
		t.Fatalf("GET /ui/calls.csv?q=+14155550100&outcome=completed = %q; want the header and the one completed call", rows)
	}
	got := map[string]string{}
	for i, h := range rows[0] {
		got[h] = rows[1][i]
	}
	for k, want := range map[string]string{"id": ada.ID, "assistant": "'=HYPERLINK(\"x\") Sales", "outcome": "completed",
		"endedReason": call.ReasonCustomerEnded, "durationSeconds": "90", "from": "+14155550100", "status": "ended"} {
		if got[k] != want {
			t.Errorf("GET /ui/calls.csv: %s = %q; want %q", k, got[k], want)
		}
	}
	all := br.get("/ui/calls.csv")
	if n := strings.Count(all.body, "\n"); n != 5 { // header, 3 calls and the setup's one
		t.Errorf("GET /ui/calls.csv: %d lines; want the header and 4 calls\n%s", n, all.body)
	}
	if strings.Contains(all.body, theirs.ID) || strings.Contains(all.body, b.callB.ID) {
		t.Error("GET /ui/calls.csv lists another organization's calls")
	}
	wantStatus(t, "GET /ui/calls.csv?type=fax", br.get("/ui/calls.csv?type=fax"), http.StatusBadRequest)
	wantStatus(t, "GET /ui/calls.csv signed out", b.browser().get("/ui/calls.csv"), http.StatusSeeOther)

	// An inbound call's page says how it was routed and what variables it ran with.
	p = br.get("/ui/calls/" + inbound.ID)
	for _, want := range []string{`data-field="routing">the number&#39;s inbound assistant (your endpoint did not decide: timeout)<`, `&#34;tier&#34;: &#34;gold&#34;`, `&#34;firstName&#34;: &#34;Ada&#34;`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the inbound call's page lacks %q", want)
		}
	}
	// The call's page names its assistant.
	if p := br.get("/ui/calls/" + ada.ID); !strings.Contains(p.body, `<a href="/ui/assistants/`+sales.ID+`" data-field="assistant">`) {
		t.Error("the call's page does not name its assistant with a link")
	}
}
