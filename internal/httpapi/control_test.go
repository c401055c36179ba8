package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/secret"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
)

// fakeLive records what live control asked for; err, when set, is answered.
type fakeLive struct {
	mu    sync.Mutex
	asked []string
	err   error
}

// End: the fake runs no conversation, so the API ends calls itself.
func (f *fakeLive) End(context.Context, string, string) (bool, error) { return false, nil }

func (f *fakeLive) Say(_ context.Context, orgID, callID, text string, interrupt bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf("say %s %s %q %v", orgID, callID, text, interrupt))
	return f.err
}

func (f *fakeLive) Transfer(_ context.Context, orgID, callID, destination string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, fmt.Sprintf("transfer %s %s %s", orgID, callID, destination))
	return f.err
}

func (f *fakeLive) take() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.asked
	f.asked = nil
	return out
}

// newControlAPI is a Server with every scope's key, a call service, a
// secret key and live control (nil live: none).
func newControlAPI(t *testing.T, live LiveCalls) *apiBundle {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "api.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	org := auth.Org{ID: id.New(id.Org), Name: "Acme", CreatedAt: time.Now()}
	if err := db.CreateOrg(t.Context(), org); err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	k, key := auth.NewKey(org.ID, "test", auth.AllScopes, time.Now())
	if err := db.CreateKey(t.Context(), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	sealer, err := secret.New(secret.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	s := New(Config{PublicURL: "http://api.test", Providers: assistant.DefaultProviders(), Secrets: sealer, Live: live},
		db, callctl.New(callctl.Config{Store: db, Log: log}), nil, log, nil)
	t.Cleanup(s.Close)
	return &apiBundle{t: t, s: s, db: db, org: org.ID, key: key}
}

// storeCall stores a call of the bundle's organization in a status.
func (b *apiBundle) storeCall(typ call.Type, st call.Status) call.Call {
	b.t.Helper()
	now := time.Now().UTC()
	c := call.Call{ID: id.New(id.Call), OrgID: b.org, Type: typ, Status: st, AssistantID: id.New(id.Assistant), CreatedAt: now, UpdatedAt: now}
	if typ == call.Phone {
		c.PurchaseID, c.From, c.To, c.Provider, c.Direction, c.ProviderCallID = id.New(id.Purchase), "+16175550100", "+14155550123", "sip", call.Inbound, "a84b4c76e66710@pc33"
	}
	switch st {
	case call.InProgress:
		c.StartedAt = now
	case call.Ended:
		c.StartedAt, c.EndedAt, c.Outcome, c.EndedReason = now, now, call.Completed, call.ReasonCustomerEnded
	}
	if err := b.db.CreateCall(b.t.Context(), c); err != nil {
		b.t.Fatalf("CreateCall: %v", err)
	}
	return c
}

// TestLiveControl: say and transfer check their body, the call and the
// runtime, in that order, and hand the runtime the normalized request.
func TestLiveControl(t *testing.T) {
	live := &fakeLive{}
	b := newControlAPI(t, live)
	inProgress := b.storeCall(call.Phone, call.InProgress)
	queued := b.storeCall(call.Web, call.Queued)
	ended := b.storeCall(call.Phone, call.Ended)
	sayPath := func(c call.Call) string { return "/v1/calls/" + c.ID + "/say" }
	transferPath := func(c call.Call) string { return "/v1/calls/" + c.ID + "/transfer" }

	st, raw := b.raw("POST", sayPath(inProgress), `{"text":"One moment, please.","interrupt":true}`)
	if st != 200 {
		t.Fatalf("POST say = %d: %s", st, raw)
	}
	conformsTo(t, "CallActionResponse", raw)
	st, raw = b.raw("POST", transferPath(inProgress), `{"destination":"+1 (415) 555-0199"}`)
	if st != 200 {
		t.Fatalf("POST transfer = %d: %s", st, raw)
	}
	conformsTo(t, "CallActionResponse", raw)
	b.must(200, "POST", transferPath(inProgress), `{"destination":"SIP:FrontDesk@PBX.example.com;transport=tcp"}`)
	b.must(200, "POST", sayPath(inProgress), `{"text":"`+strings.Repeat("é", MaxSayText)+`"}`)
	want := []string{
		fmt.Sprintf("say %s %s %q true", b.org, inProgress.ID, "One moment, please."),
		fmt.Sprintf("transfer %s %s +14155550199", b.org, inProgress.ID),
		fmt.Sprintf("transfer %s %s sip:FrontDesk@pbx.example.com;transport=tcp", b.org, inProgress.ID),
		fmt.Sprintf("say %s %s %q false", b.org, inProgress.ID, strings.Repeat("é", MaxSayText)),
	}
	if got := live.take(); !slices.Equal(got, want) {
		t.Errorf("live control asked\n got  %q\n want %q", got, want)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		field      string
	}{
		{sayPath(inProgress), `{}`, 400, "text"},
		{sayPath(inProgress), `{"text":"   "}`, 400, "text"},
		{sayPath(inProgress), `{"text":"` + strings.Repeat("a", MaxSayText+1) + `"}`, 400, "text"},
		{sayPath(inProgress), `{"text":"hi","interrupt":"yes"}`, 400, "interrupt"},
		{sayPath(inProgress), `{"text":"hi","voice":"x"}`, 400, "voice"},
		{transferPath(inProgress), `{}`, 400, "destination"},
		{transferPath(inProgress), `{"destination":"4155550199"}`, 400, "destination"},
		{transferPath(inProgress), `{"destination":"sip:alice@host?Replaces=x"}`, 400, "destination"},
		{transferPath(inProgress), `{"destination":"tel:+14155550199"}`, 400, "destination"},
		{sayPath(queued), `{"text":"hi"}`, 409, ""},
		{sayPath(ended), `{"text":"hi"}`, 409, ""},
		{transferPath(ended), `{"destination":"+14155550199"}`, 409, ""},
		{"/v1/calls/" + id.New(id.Call) + "/say", `{"text":"hi"}`, 404, ""},
		{"/v1/calls/" + id.New(id.Call) + "/transfer", `{"destination":"+14155550199"}`, 404, ""},
	} {
		st, out := b.do("POST", tc.path, tc.body)
		if st != tc.status {
			t.Errorf("POST %s %s = %d, want %d; %v", tc.path, tc.body, st, tc.status, out)
			continue
		}
		if tc.field != "" {
			if _, ok := fieldErrors(out)[tc.field]; !ok || len(fieldErrors(out)) != 1 {
				t.Errorf("POST %s %s: error fields %v, want only %s", tc.path, tc.body, fieldErrors(out), tc.field)
			}
		}
	}
	if got := live.take(); len(got) != 0 {
		t.Errorf("refused requests reached live control: %q", got)
	}

	live.err = fmt.Errorf("sip: REFER answered 603: %w", telephony.ErrTransferRefused)
	st, out := b.do("POST", transferPath(inProgress), `{"destination":"+14155550199"}`)
	if e, _ := out["error"].(map[string]any); st != 409 || e["code"] != "transfer_refused" {
		t.Errorf("POST transfer refused by the far side = %d %v, want 409 transfer_refused", st, out)
	}
	live.err = apperr.NotFoundf("call %s is not live on this server", inProgress.ID)
	if st, out := b.do("POST", sayPath(inProgress), `{"text":"hi"}`); st != 404 {
		t.Errorf("POST say, runtime answers NotFound = %d %v, want 404", st, out)
	}

	none := newControlAPI(t, nil)
	c := none.storeCall(call.Phone, call.InProgress)
	st, out = none.do("POST", sayPath(c), `{"text":"hi"}`)
	if st != 503 || !strings.Contains(fmt.Sprint(out["message"]), "call runtime is unavailable") {
		t.Errorf("POST say without a call runtime = %d %v, want 503 naming the call runtime", st, out)
	}
	if st, _ := none.do("POST", transferPath(c), `{"destination":"+14155550199"}`); st != 503 {
		t.Errorf("POST transfer without a call runtime = %d, want 503", st)
	}
}

// TestEndCallView: POST /v1/calls/{id}/end answers the ended call as the
// document says, with its direction and provider call id.
func TestEndCallView(t *testing.T) {
	b := newControlAPI(t, nil)
	c := b.storeCall(call.Web, call.InProgress)
	st, raw := b.raw("POST", "/v1/calls/"+c.ID+"/end", "")
	if st != 200 {
		t.Fatalf("POST end = %d: %s", st, raw)
	}
	conformsTo(t, "CallActionResponse", raw)
	b.must(409, "POST", "/v1/calls/"+c.ID+"/end", "")
	ph := b.storeCall(call.Phone, call.Queued)
	got := b.must(200, "POST", "/v1/calls/"+ph.ID+"/end", "")
	if got["outcome"] != "canceled" || got["endedReason"] != call.ReasonAPIEnded || got["direction"] != "inbound" || got["providerCallId"] != ph.ProviderCallID {
		t.Errorf("POST end (queued inbound call) = %v, want canceled, api-ended-call, direction inbound, its providerCallId", got)
	}
}

// TestConnectionViews: the connection, number and purchase answers
// conform to openapi.json and never hold the password.
func TestConnectionViews(t *testing.T) {
	b := newControlAPI(t, nil)
	const password = "Tr0ub4dor&3-horse"
	body := `{"provider":"sip","name":"Main trunk","sip":{"address":"sip.example.com","username":"acme","password":"` + password + `",
		"numbers":["+1 617 555 0100","+16175550101"],"inboundSources":["203.0.113.0/24"]}}`
	for _, step := range []struct {
		method, path, body, schema string
		status                     int
	}{
		{"POST", "/v1/phone/connections", body, "ConnectionResponse", 201},
		{"GET", "/v1/phone/connections", "", "ConnectionListResponse", 200},
		{"GET", "/v1/phone/numbers?provider=sip", "", "NumberListResponse", 200},
		{"POST", "/v1/phone/purchases", `{"number":"+16175550100","provider":"sip"}`, "PurchaseResponse", 201},
		{"GET", "/v1/phone/purchases", "", "PurchaseListResponse", 200},
	} {
		st, raw := b.raw(step.method, step.path, step.body)
		if st != step.status {
			t.Fatalf("%s %s = %d, want %d: %s", step.method, step.path, st, step.status, raw)
		}
		conformsTo(t, step.schema, raw)
		if strings.Contains(string(raw), password) || strings.Contains(strings.ToLower(string(raw)), `"password"`) {
			t.Errorf("%s %s shows the password: %s", step.method, step.path, raw)
		}
	}
}
