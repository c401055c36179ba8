package ui

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
	"switchboard/internal/webhook"
)

var secretShown = regexp.MustCompile(`<p class="secret" id="[a-z-]+">([^<]+)</p>`)

// TestAPIKeys: a key is created with the scopes ticked and shown once (a
// reload does not show it again, nor does another session); the listing
// never shows a secret; revoking needs the key to be the organization's.
func TestAPIKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.do(http.MethodPost, "/ui/keys", url.Values{"csrf": {token}, "name": {""}, "scopes": {"calls:fly"}})
	wantStatus(t, "create a key without a name, with a bad scope", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "is required: say what the key is for") || !strings.Contains(p.body, `unknown scope &#34;calls:fly&#34;`) {
		t.Errorf("refused key: want the errors on name and scopes")
	}
	p = br.do(http.MethodPost, "/ui/keys", url.Values{"csrf": {token}, "name": {"CRM"}, "scopes": {"calls:read", "assistants:write"}})
	wantStatus(t, "create a key", p, http.StatusSeeOther)
	loc := p.header.Get("Location")
	if strings.Contains(b.signedIn(b.opA).get(loc).body, `class="secret"`) {
		t.Errorf("another session of the same operator was shown the key")
	}
	page := br.get(loc)
	m := secretShown.FindStringSubmatch(page.body)
	if m == nil || !strings.HasPrefix(m[1], "sbk_") {
		t.Fatalf("after creating a key: no sbk_ secret shown")
	}
	if strings.Contains(br.get(loc).body, m[1]) || strings.Contains(br.get("/ui/keys").body, m[1]) {
		t.Errorf("the key's secret is shown again")
	}
	keys, _ := b.st.ListKeys(t.Context(), b.orgA)
	if len(keys) != 1 || strings.Join(keys[0].Scopes, ",") != "calls:read,assistants:write" || !keys[0].Matches(m[1]) {
		t.Fatalf("stored keys = %+v; want CRM with the two scopes, matching the secret shown", keys)
	}
	other := b.signedIn(b.opB)
	wantStatus(t, "B: revoke A's key", other.do(http.MethodPost, "/ui/keys/"+keys[0].ID+"/revoke", url.Values{"csrf": {other.csrf()}}), http.StatusNotFound)
	wantStatus(t, "revoke without a token", br.do(http.MethodPost, "/ui/keys/"+keys[0].ID+"/revoke", url.Values{}), http.StatusForbidden)
	wantStatus(t, "create without a token", br.do(http.MethodPost, "/ui/keys", url.Values{"name": {"x"}, "scopes": {"calls:read"}}), http.StatusForbidden)
	wantStatus(t, "revoke", br.do(http.MethodPost, "/ui/keys/"+keys[0].ID+"/revoke", url.Values{"csrf": {token}}), http.StatusSeeOther)
	if k, _ := b.st.GetKey(t.Context(), keys[0].ID); !k.Revoked() {
		t.Errorf("the key is not revoked")
	}
}

// TestWebhooks: an endpoint is created with the REST API's checks and its
// secret shown once; its deliveries are listed with their response code,
// and one is redelivered; another organization's endpoint is a 404.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Webhooks = webhook.Guard{AllowPrivate: true} })
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.do(http.MethodPost, "/ui/webhooks", url.Values{"csrf": {token}, "url": {"ftp://example.com/x"}, "events": {"call.flew"}})
	wantStatus(t, "create a bad endpoint", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `aria-invalid="true"><span class="field-error" role="alert">url must start with https://`) ||
		!strings.Contains(p.body, "unknown event &#34;call.flew&#34;") {
		t.Errorf("refused endpoint: want the errors on url and events\n%s", p.body)
	}
	p = br.do(http.MethodPost, "/ui/webhooks", url.Values{"csrf": {token}, "url": {"http://127.0.0.1:9/hook"}, "events": {event.CallEnded}})
	wantStatus(t, "create an endpoint", p, http.StatusSeeOther)
	page := br.get(p.header.Get("Location"))
	m := secretShown.FindStringSubmatch(page.body)
	if m == nil {
		t.Fatal("no signing secret shown after creating an endpoint")
	}
	ws, _ := b.st.ListWebhooks(t.Context(), b.orgA)
	if len(ws) != 1 || ws[0].Secrets[0] != html.UnescapeString(m[1]) {
		t.Fatalf("stored endpoints = %+v; want one whose secret was shown", ws)
	}
	if strings.Contains(br.get("/ui/webhooks").body, m[1]) || strings.Contains(br.get("/ui/webhooks/"+ws[0].ID).body, m[1]) {
		t.Errorf("the secret is shown again")
	}

	// A delivery that failed with 500.
	ctx := t.Context()
	if err := b.st.QueueEvent(ctx, b.orgA, event.Event{ID: "evt_1", Type: event.CallEnded, At: b.clock.now(), Data: []byte(`{}`)}, b.clock.now()); err != nil {
		t.Fatal(err)
	}
	msgs, err := b.st.ClaimOutbox(ctx, b.clock.now().Add(time.Second), time.Minute, 10)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("ClaimOutbox = %d, %v", len(msgs), err)
	}
	d := store.Delivery{ID: id.New("dlv"), MessageID: msgs[0].ID, WebhookID: ws[0].ID, OrgID: b.orgA, Type: event.CallEnded, Attempt: 1,
		Status: 500, Error: "500 Internal Server Error", Duration: 12 * time.Millisecond, At: b.clock.now()}
	if err := b.st.RecordDelivery(ctx, msgs[0], d, store.OutboxFailed, time.Time{}); err != nil {
		t.Fatal(err)
	}
	hook := "/ui/webhooks/" + ws[0].ID
	page = br.get(hook)
	if !strings.Contains(page.body, `<tr data-message="`+msgs[0].ID+`" class="failed">`) || !strings.Contains(page.body, "<td>500 <span") {
		t.Errorf("the endpoint's page does not list the failed delivery with its 500")
	}
	redeliver := hook + "/deliveries/" + msgs[0].ID + "/redeliver"
	wantStatus(t, "redeliver without a token", br.do(http.MethodPost, redeliver, url.Values{}), http.StatusForbidden)
	wantStatus(t, "redeliver", br.do(http.MethodPost, redeliver, url.Values{"csrf": {token}}), http.StatusSeeOther)
	if again, _ := b.st.ClaimOutbox(ctx, b.clock.now().Add(2*time.Second), time.Minute, 10); len(again) != 1 {
		t.Errorf("after redeliver the message is not queued again (%d claimed)", len(again))
	}

	other := b.signedIn(b.opB)
	ot := other.csrf()
	wantStatus(t, "B: GET A's endpoint", other.get(hook), http.StatusNotFound)
	wantStatus(t, "B: redeliver A's message", other.do(http.MethodPost, redeliver, url.Values{"csrf": {ot}}), http.StatusNotFound)
	wantStatus(t, "B: delete A's endpoint", other.do(http.MethodPost, hook+"/delete", url.Values{"csrf": {ot}}), http.StatusNotFound)
	wantStatus(t, "delete without a token", br.do(http.MethodPost, hook+"/delete", url.Values{}), http.StatusForbidden)
	wantStatus(t, "delete", br.do(http.MethodPost, hook+"/delete", url.Values{"csrf": {token}}), http.StatusSeeOther)
	if ws, _ := b.st.ListWebhooks(ctx, b.orgA); len(ws) != 0 {
		t.Errorf("endpoints after delete = %d", len(ws))
	}
}

// TestSchedules: a schedule's attempts are shown with their progress,
// and canceling it cancels the pending ones; another organization's is
// a 404.
func TestSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	pu := b.purchase(b.orgA, "+14155550100")
	cs, _, err := b.st.AddContacts(ctx, b.orgA, pu.ID, []phone.Contact{
		{ID: id.New(id.Contact), Name: "Ada", PhoneNumber: "+14155550111", Metadata: []byte("{}"), CreatedAt: b.clock.now()},
		{ID: id.New(id.Contact), Name: "Bob", PhoneNumber: "+14155550112", Metadata: []byte("{}"), CreatedAt: b.clock.now()}})
	if err != nil {
		t.Fatal(err)
	}
	due := b.clock.now().Add(time.Hour)
	sc := schedule.Schedule{ID: id.New(id.Schedule), OrgID: b.orgA, Name: "Reminders", PurchaseID: pu.ID, Dates: []time.Time{due},
		ContactIDs: []string{cs[0].ID, cs[1].ID}, CreatedAt: b.clock.now()}
	var attempts []schedule.Attempt
	for _, c := range cs {
		attempts = append(attempts, schedule.Attempt{ID: id.New("att"), OrgID: b.orgA, ScheduleID: sc.ID, ContactID: c.ID, DueAt: due,
			State: schedule.Pending, UpdatedAt: b.clock.now()})
	}
	if err := b.st.CreateSchedule(ctx, sc, attempts); err != nil {
		t.Fatal(err)
	}
	br := b.signedIn(b.opA)
	token := br.csrf()
	if p := br.get("/ui/schedules"); !strings.Contains(p.body, `href="/ui/schedules/`+sc.ID+`">Reminders</a>`) || !strings.Contains(p.body, "2 pending") {
		t.Errorf("the schedules listing lacks Reminders with 2 pending")
	}
	path := "/ui/schedules/" + sc.ID
	if p := br.get(path); strings.Count(p.body, `<span class="status progress-pending">pending</span>`) != 2 {
		t.Errorf("the schedule's page does not show its two pending calls")
	}
	other := b.signedIn(b.opB)
	wantStatus(t, "B: GET A's schedule", other.get(path), http.StatusNotFound)
	wantStatus(t, "B: cancel A's schedule", other.do(http.MethodPost, path+"/cancel", url.Values{"csrf": {other.csrf()}}), http.StatusNotFound)
	wantStatus(t, "cancel without a token", br.do(http.MethodPost, path+"/cancel", url.Values{}), http.StatusForbidden)
	p := br.do(http.MethodPost, path+"/cancel", url.Values{"csrf": {token}})
	wantStatus(t, "cancel", p, http.StatusSeeOther)
	if page := br.get(p.header.Get("Location")); !strings.Contains(page.body, "2 pending call(s) canceled.") || !strings.Contains(page.body, "2 canceled") {
		t.Errorf("after cancel: want the notice and 2 canceled")
	}
}

// TestEveryFormNeedsToken: every state-changing route of the table
// refuses a signed-in operator's form without its CSRF token, or from
// another site, before its handler runs; and every page is served with
// the security headers.
func TestEveryFormNeedsToken(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.signedIn(b.opA)
	evil := b.signedIn(b.opA)
	evilToken := evil.csrf()
	evil.origin = "https://evil.example"
	fill := strings.NewReplacer("{id}", "x_1", "{contact}", "x_2", "{message}", "x_3")
	n := 0
	for _, rt := range b.srv.routes() {
		method, path, _ := strings.Cut(rt.pattern, " ")
		if method != http.MethodPost || rt.public {
			continue
		}
		n++
		path = fill.Replace(path)
		wantStatus(t, "POST "+path+" without a token", br.do(http.MethodPost, path, url.Values{"name": {"x"}}), http.StatusForbidden)
		wantStatus(t, "POST "+path+" from another site, with its token", evil.do(http.MethodPost, path, url.Values{"csrf": {evilToken}}), http.StatusForbidden)
	}
	if n < 15 {
		t.Errorf("only %d POST routes checked; the table has lost some", n)
	}
	for _, path := range []string{"/ui/assistants", "/ui/assistants/new", "/ui/numbers", "/ui/contacts", "/ui/schedules", "/ui/webhooks", "/ui/keys"} {
		p := br.get(path)
		wantStatus(t, "GET "+path, p, http.StatusOK)
		if p.header.Get("Content-Security-Policy") != csp || strings.Contains(p.body, " style=") || strings.Contains(p.body, "<script>") {
			t.Errorf("GET %s: no CSP, or an inline style or script", path)
		}
	}
}

// TestWebhooksListener: a listener endpoint (no URL: a developer's
// `switchboard webhooks listen`) is named for what receives it in the list,
// its delete question and its own page, not shown as an empty link.
func TestWebhooksListener(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.signedIn(b.opA)
	wh := store.Webhook{ID: id.New(id.Webhook), OrgID: b.orgA, Kind: store.WebhookListener, Events: []string{event.CallEnded},
		Secrets: []string{"whsec_" + id.Random(16)}, CreatedAt: b.clock.now(), ExpiresAt: b.clock.now().Add(time.Hour)}
	if err := b.st.CreateWebhook(t.Context(), wh); err != nil {
		t.Fatal(err)
	}
	const name = "switchboard webhooks listen"
	list := br.get("/ui/webhooks").body
	if !strings.Contains(list, `<a href="/ui/webhooks/`+wh.ID+`">`+name) || !strings.Contains(list, "Delete the endpoint "+name) {
		t.Errorf("the webhooks page does not name the listener %q in its row and delete question:\n%s", name, list)
	}
	if page := br.get("/ui/webhooks/" + wh.ID).body; !strings.Contains(page, "<h1>"+name) {
		t.Errorf("the listener's page heading does not name it %q:\n%s", name, page)
	}
}
