package ui

import (
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/id"
	"switchboard/internal/numbers"
	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/sandbox"
	"switchboard/internal/webhook"
)

// providerSet is the providers of a test server: the sandbox.
type providerSet map[string]telephony.Network

func (p providerSet) Provider(name string) (telephony.Network, bool) { v, ok := p[name]; return v, ok }
func (p providerSet) ProviderNames() []string {
	var out []string
	for n := range p {
		out = append(out, n)
	}
	return out
}

// withNumbers gives the dashboard a numbers service over a sandbox of
// three numbers.
func withNumbers(t *testing.T) func(*Config) {
	sb := sandbox.New(sandbox.Config{Numbers: []telephony.Number{
		{Number: "+14155550101", Provider: "sandbox", Region: "US", Locality: "San Francisco"},
		{Number: "+14155550102", Provider: "sandbox", Region: "US", Locality: "San Francisco"},
	}}, slog.New(slog.DiscardHandler))
	t.Cleanup(func() { _ = sb.Close() })
	sealer, err := secret.New(secret.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		c.Numbers = &numbers.Service{Store: c.Store, Providers: providerSet{"sandbox": sb}, Secrets: sealer,
			Log: slog.New(slog.DiscardHandler), Now: time.Now}
	}
}

// TestNumbers: a sandbox number is bought and given assistants, a SIP
// trunk is added (its password never shown back) and one of its numbers
// taken, numbers are released, and connections deleted; errors land on
// their form; another organization's number and connection are 404s.
func TestNumbers(t *testing.T) {
	t.Parallel()
	b := setup(t, withNumbers(t))
	ctx := t.Context()
	br := b.signedIn(b.opA)
	post := br.poster()

	if p := br.get("/ui/numbers"); !strings.Contains(p.body, "&#43;14155550101") || !strings.Contains(p.body, "San Francisco") {
		t.Errorf("/ui/numbers does not offer the sandbox's numbers")
	}
	wantStatus(t, "buy without a token", br.do(http.MethodPost, "/ui/numbers/buy", url.Values{"number": {"+14155550101"}}), http.StatusForbidden)
	wantStatus(t, "buy", post("/ui/numbers/buy", url.Values{"provider": {"sandbox"}, "number": {"+1 415 555 0101"}}), http.StatusSeeOther)
	p := post("/ui/numbers/buy", url.Values{"provider": {"sandbox"}, "number": {"+14155550101"}})
	wantStatus(t, "buy it again", p, http.StatusConflict)
	if !strings.Contains(p.body, `<div class="error" role="alert" id="form-errors"><p>number &#43;14155550101 is already purchased`) {
		t.Errorf("buying a taken number: the page does not say why\n%s", p.body)
	}
	ps, _ := b.st.ListPurchases(ctx, b.orgA)
	if len(ps) != 1 || ps[0].Number != "+14155550101" {
		t.Fatalf("purchases = %+v; want +14155550101", ps)
	}
	pu := ps[0]

	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), b.orgA, "Receptionist", time.Now(), time.Now()
	if err := b.st.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "allocate", post("/ui/numbers/"+pu.ID+"/allocate", url.Values{"inboundAssistantId": {a.ID}, "message": {"Hello"}}), http.StatusSeeOther)
	if got, _ := b.st.GetPurchase(ctx, b.orgA, pu.ID); got.InboundAssistantID != a.ID || got.Message != "Hello" {
		t.Errorf("after allocate: %+v", got)
	}
	if page := br.get("/ui/numbers"); !strings.Contains(page.body, `<option value="`+a.ID+`" selected>Receptionist</option>`) {
		t.Errorf("the number's form does not show its inbound assistant")
	}

	p = post("/ui/connections", url.Values{"provider": {"sip"}, "name": {"Trunk"}, "sip.address": {"sip.example.com:5060"}, "sip.transport": {"udp"},
		"sip.username": {"alice"}, "sip.password": {"s3cret-password"}, "sip.numbers": {"+16175550100\nnot-a-number"}})
	wantStatus(t, "add a trunk with a bad number", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `<span class="field-error" role="alert">line 2: `) || strings.Contains(p.body, "s3cret-password") {
		t.Errorf("refused trunk: want the error on line 2 of the numbers, and the password not shown back\n%s", p.body)
	}
	p = post("/ui/connections", url.Values{"provider": {"sip"}, "name": {"Trunk"}, "sip.address": {"sip.example.com:5060"}, "sip.transport": {"udp"},
		"sip.username": {"alice"}, "sip.password": {"s3cret-password"}, "sip.numbers": {"+16175550100"}})
	wantStatus(t, "add a trunk", p, http.StatusSeeOther)
	page := br.get("/ui/numbers")
	if strings.Contains(page.body, "s3cret-password") || !strings.Contains(page.body, "password kept") {
		t.Errorf("the connections list shows the password, or not that one is kept")
	}
	wantStatus(t, "take a trunk number", post("/ui/numbers/buy", url.Values{"provider": {"sip"}, "number": {"+16175550100"}}), http.StatusSeeOther)
	ps, _ = b.st.ListPurchases(ctx, b.orgA)
	cs, _, _ := b.st.ListConnections(ctx, b.orgA, pageOne)
	if len(ps) != 2 || len(cs) != 1 {
		t.Fatalf("after taking a trunk number: %d purchases, %d connections; want 2 and 1", len(ps), len(cs))
	}
	p = post("/ui/connections/"+cs[0].ID+"/delete", url.Values{})
	wantStatus(t, "delete a trunk whose number is held", p, http.StatusConflict)

	other := b.signedIn(b.opB)
	ot := other.csrf()
	for _, path := range []string{"/ui/numbers/" + pu.ID + "/allocate", "/ui/numbers/" + pu.ID + "/release", "/ui/connections/" + cs[0].ID + "/delete"} {
		wantStatus(t, "B: POST "+path, other.do(http.MethodPost, path, url.Values{"csrf": {ot}}), http.StatusNotFound)
	}
	p = other.do(http.MethodPost, "/ui/numbers/buy", url.Values{"csrf": {ot}, "provider": {"sip"}, "number": {"+16175550100"}})
	wantStatus(t, "B: take A's trunk number", p, http.StatusBadRequest)

	for _, x := range ps {
		wantStatus(t, "release "+x.Number, post("/ui/numbers/"+x.ID+"/release", url.Values{}), http.StatusSeeOther)
	}
	wantStatus(t, "delete the trunk", post("/ui/connections/"+cs[0].ID+"/delete", url.Values{}), http.StatusSeeOther)
	if ps, _ := b.st.ListPurchases(ctx, b.orgA); len(ps) != 0 {
		t.Errorf("purchases after release = %d", len(ps))
	}
}

// TestDeleteAssistantInUse: an assistant a number uses is not deleted,
// and its page says why.
func TestDeleteAssistantInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	pu := b.purchase(b.orgA, "+14155550100")
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), b.orgA, "Receptionist", time.Now(), time.Now()
	if err := b.st.CreateAssistant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := b.st.AllocateAssistants(ctx, store.Allocation{OrgID: b.orgA, PurchaseID: pu.ID, InboundID: a.ID, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	br := b.signedIn(b.opA)
	p := br.do(http.MethodPost, "/ui/assistants/"+a.ID+"/delete", url.Values{"csrf": {br.csrf()}})
	wantStatus(t, "delete an assistant in use", p, http.StatusConflict)
	if !strings.Contains(p.body, "Receptionist is used by a purchased number") || !strings.Contains(p.body, `name="name" value="Receptionist"`) {
		t.Errorf("the refused delete does not say why on the assistant's page")
	}
}

// TestInboundRoutingForm: the numbers page sets the organization's routing
// endpoint (its secret shown once), refuses a bad one naming the field
// with nothing changed, and removes it.
func TestInboundRoutingForm(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Webhooks = webhook.Guard{AllowPrivate: true} })
	ctx := t.Context()
	br := b.signedIn(b.opA)
	post := br.poster()
	p := post("/ui/routing", url.Values{"url": {"ftp://route.example.com"}, "timeoutMs": {"9000"}})
	wantStatus(t, "a bad endpoint", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "<code>timeoutMs</code>: must be an integer from 200 to 5000") || !strings.Contains(p.body, "<code>url</code>:") {
		t.Errorf("a bad endpoint: the page does not say what is wrong\n%s", p.body)
	}
	if _, err := b.st.GetAssistantRequest(ctx, b.orgA); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("a refused endpoint was stored: %v", err)
	}
	p = post("/ui/routing", url.Values{"url": {"http://127.0.0.1:9/in"}, "timeoutMs": {"800"}})
	wantStatus(t, "set the endpoint", p, http.StatusSeeOther)
	ep, err := b.st.GetAssistantRequest(ctx, b.orgA)
	if err != nil || ep.URL != "http://127.0.0.1:9/in" || ep.Timeout != 800*time.Millisecond || !strings.HasPrefix(ep.Secret, "whsec_") {
		t.Fatalf("endpoint = %+v, %v", ep, err)
	}
	first := br.get(p.header.Get("Location"))
	// The secret is base64: '+' comes escaped (&#43;) in the page.
	shown := regexp.MustCompile(`<code id="routing-secret">([^<]+)</code>`).FindStringSubmatch(first.body)
	if shown == nil || html.UnescapeString(shown[1]) != ep.Secret || !strings.Contains(first.body, `data-field="routing-url">http://127.0.0.1:9/in<`) {
		t.Errorf("after saving, the page does not show the secret once and the endpoint\n%s", first.body)
	}
	if again := br.get("/ui/numbers"); strings.Contains(again.body, `id="routing-secret"`) {
		t.Error("the secret is shown again")
	}
	if _, err := b.st.GetAssistantRequest(ctx, b.orgB); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("another organization got the endpoint: %v", err)
	}
	wantStatus(t, "remove", post("/ui/routing/remove", url.Values{}), http.StatusSeeOther)
	if _, err := b.st.GetAssistantRequest(ctx, b.orgA); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("after remove: %v", err)
	}
}
