package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// TestTestCall: "Place a test call" places a phone call from one of the
// organization's numbers (through Config.PlacePhoneCall, callctl's) or
// starts a browser call of one of its assistants, and lands on the
// call's page; only the session that started a browser call gets the
// widget that joins it, once; another organization's number or
// assistant is refused, and the forms need their token.
func TestTestCall(t *testing.T) {
	t.Parallel()
	type placed struct{ org, purchase, to string }
	var got []placed
	b := setup(t, func(c *Config) {
		c.PublicURL = "http://dash.example"
		c.PlacePhoneCall = func(ctx context.Context, orgID, purchaseID, to string) (call.Call, error) {
			got = append(got, placed{orgID, purchaseID, to})
			p, err := c.Store.GetPurchase(ctx, orgID, purchaseID)
			if err != nil {
				return call.Call{}, err
			}
			now := time.Now()
			cl := call.Call{ID: id.New(id.Call), OrgID: orgID, Type: call.Phone, Status: call.Queued, AssistantID: p.OutboundAssistantID,
				PurchaseID: p.ID, From: p.Number, To: to, Direction: call.Outbound, CreatedAt: now, UpdatedAt: now}
			return cl, c.Store.CreateCall(ctx, cl)
		}
		c.StartWebCall = func(ctx context.Context, orgID, assistantID string) (call.Call, error) {
			if _, err := c.Store.GetAssistant(ctx, orgID, assistantID); err != nil {
				return call.Call{}, apperr.Invalidf("assistantId", "assistant %s not found", assistantID)
			}
			now := time.Now()
			cl := call.Call{ID: id.New(id.Call), OrgID: orgID, Type: call.Web, Status: call.Queued, AssistantID: assistantID, CreatedAt: now, UpdatedAt: now}
			return cl, c.Store.CreateCall(ctx, cl)
		}
	})
	sales := b.assistant(b.orgA, "Sales line")
	pu := b.purchase(b.orgA, "+14155550100")
	pu.OutboundAssistantID = sales.ID
	if _, err := b.st.AllocateAssistants(t.Context(), store.Allocation{OrgID: b.orgA, PurchaseID: pu.ID, OutboundID: sales.ID, At: b.clock.now()}); err != nil {
		t.Fatal(err)
	}
	theirs := b.purchase(b.orgB, "+14155550199")
	theirAsst := b.assistant(b.orgB, "Theirs")
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.get("/ui/test-call?number=" + pu.ID)
	wantStatus(t, "GET /ui/test-call", p, 200)
	for _, want := range []string{`<option value="` + pu.ID + `" selected>&#43;14155550100 (sandbox) · Sales line</option>`, "Sales line", `value="&#43;14155550123"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("GET /ui/test-call lacks %q", want)
		}
	}
	if strings.Contains(p.body, theirs.ID) || strings.Contains(p.body, "Theirs") {
		t.Error("GET /ui/test-call offers another organization's number or assistant")
	}
	if n := br.get("/ui/numbers"); !strings.Contains(n.body, `href="/ui/test-call?number=`+pu.ID+`"`) {
		t.Error("the numbers page does not link a test call from the number")
	}
	desk := b.assistant(b.orgA, "Front desk")
	if p := br.get("/ui/test-call?assistant=" + desk.ID); !strings.Contains(p.body, `<option value="`+desk.ID+`" selected>`) {
		t.Error("GET /ui/test-call?assistant= does not preselect the assistant (the assistant page links it)")
	}

	// A phone call: placed through PlacePhoneCall, then its page.
	p = br.do(http.MethodPost, "/ui/test-call/phone", url.Values{"csrf": {token}, "number": {pu.ID}, "to": {"+1 415 555 0123"}})
	wantStatus(t, "place a test phone call", p, http.StatusSeeOther)
	if len(got) != 1 || got[0] != (placed{b.orgA, pu.ID, "+14155550123"}) {
		t.Fatalf("PlacePhoneCall calls = %+v; want one from A's number to +14155550123", got)
	}
	if loc := p.header.Get("Location"); !strings.HasPrefix(loc, "/ui/calls/call_") {
		t.Errorf("after the phone call: Location %q; want the call's page", loc)
	} else if page := br.get(loc); !strings.Contains(page.body, `data-events="/ui/events?call=`) || strings.Contains(page.body, `id="talk-widget"`) {
		t.Error("the phone call's page: want its live updates and no widget")
	}
	for _, tc := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"number": {pu.ID}, "to": {"12"}}, "To"},
		{url.Values{"number": {theirs.ID}, "to": {"+14155550123"}}, "choose one of the organization's numbers"},
		{url.Values{"number": {"nope"}, "to": {"+14155550123"}}, "choose one of the organization's numbers"},
	} {
		tc.form.Set("csrf", token)
		p := br.do(http.MethodPost, "/ui/test-call/phone", tc.form)
		wantStatus(t, "refused phone call "+tc.form.Encode(), p, http.StatusBadRequest)
		if !strings.Contains(p.body, tc.field) && !strings.Contains(p.body, "field-error") {
			t.Errorf("refused phone call %v: the page does not say what is wrong", tc.form)
		}
	}
	if len(got) != 2 { // the other organization's number reached PlacePhoneCall, which refused it
		t.Errorf("PlacePhoneCall calls = %d; want 2 (the bad inputs are refused before it)", len(got))
	}
	wantStatus(t, "phone call without a token", br.do(http.MethodPost, "/ui/test-call/phone", url.Values{"number": {pu.ID}, "to": {"+14155550123"}}), http.StatusForbidden)

	// A browser call: its page carries the widget once, for this session.
	p = br.do(http.MethodPost, "/ui/test-call/web", url.Values{"csrf": {token}, "assistant": {sales.ID}})
	wantStatus(t, "start a test web call", p, http.StatusSeeOther)
	loc := p.header.Get("Location")
	if !strings.Contains(loc, "?talk=") {
		t.Fatalf("after the web call: Location %q; want the call's page with its talk token", loc)
	}
	callID := strings.TrimPrefix(strings.Split(loc, "?")[0], "/ui/calls/")
	page := br.get(loc)
	for _, want := range []string{`id="talk-widget" data-gateway="ws://dash.example/new-web-call/connection?assistant_id=` + sales.ID + `&amp;call_id=` + callID + `"`,
		`<script src="/widget.js"></script>`, `id="talk-text"`, `data-events="/ui/events?call=` + callID + `"`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the browser call's page lacks %q", want)
		}
	}
	if again := br.get(loc); strings.Contains(again.body, `id="talk-widget"`) {
		t.Error("the widget is offered again on reload")
	}
	other := b.signedIn(b.opB)
	wantStatus(t, "B opens A's call", other.get(loc), http.StatusNotFound)
	p = br.do(http.MethodPost, "/ui/test-call/web", url.Values{"csrf": {token}, "assistant": {theirAsst.ID}})
	wantStatus(t, "web call of another org's assistant", p, http.StatusBadRequest)
	wantStatus(t, "web call without a token", br.do(http.MethodPost, "/ui/test-call/web", url.Values{"assistant": {sales.ID}}), http.StatusForbidden)
	if _, total, _ := b.st.ListCalls(t.Context(), b.orgB, store.CallFilter{Page: store.Page{Page: 1, PageSize: 25}}); total != 1 {
		t.Errorf("B's calls = %d; want its one (nothing created for A's requests)", total)
	}
}
