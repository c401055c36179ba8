package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
)

// TestContractStatuses produces, through real HTTP, every status the
// contract lists for every endpoint (500 is in TestServerErrors).
func TestContractStatuses(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234", "+14155557777")
		noScope := b.newKey(b.org, auth.AssistantsRead) // a valid key that holds none of the contract's scopes
		missingPurchase := "pn_aaaaaaaaaaaaaaaaaaaaaaaaaa"

		// 4.1 GET /v1/calls: 200, 403.
		r := b.must(200, "GET", "/v1/calls", nil)
		if r.Body["status"] != true || r.Body["message"] == "" || r.Body["data"] == nil {
			t.Errorf("GET /v1/calls envelope = %s", r.Raw)
		}
		expectStatus(t, b.req("GET", "/v1/calls", noScope, nil), 403, "permission_denied")

		// 4.2 POST /v1/calls/initiate: 201, 400, 403.
		r = b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant, "type": "web"})
		callID, _ := r.Body["callId"].(string)
		gw, _ := r.Body["gateway"].(map[string]any)
		wantURL := "ws://" + b.m.Addr() + "/new-web-call/connection?assistant_id=" + f.assistant + "&call_id=" + callID
		if gw["transport"] != "websocket" || gw["path"] != "/new-web-call/connection" || gw["url"] != wantURL {
			t.Errorf("initiate gateway = %v, want transport websocket, path /new-web-call/connection, url %s", gw, wantURL)
		}
		if !strings.HasPrefix(callID, "call_") || len(callID) < 5+26 {
			t.Errorf("callId = %q, want call_ + 26 base32 chars (128 bits)", callID)
		}
		expectFields(t, b.req("POST", "/v1/calls/initiate", b.key, map[string]any{"assistantId": f.assistant, "type": "phone"}), 400, "type")
		expectFields(t, b.req("POST", "/v1/calls/initiate", b.key, map[string]any{"type": "web"}), 400, "assistantId")
		expectFields(t, b.req("POST", "/v1/calls/initiate", b.key, map[string]any{"assistantId": "asst_nope", "type": "web"}), 400, "assistantId")
		expectStatus(t, b.req("POST", "/v1/calls/initiate", noScope, map[string]any{"assistantId": f.assistant}), 403, "permission_denied")

		// 4.3 POST /v1/calls/phone/initiate: 201, 400, 403, 404.
		r = b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234", "provider": "sandbox"})
		phoneCall, _ := r.Body["callId"].(string)
		if r.data()["from"] != f.number || r.data()["to"] != "+14155551234" || r.data()["provider"] != "sandbox" {
			t.Errorf("phone initiate data = %v", r.data())
		}
		expectFields(t, b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "4155551234"}), 400, "phoneNumber")
		expectFields(t, b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234", "provider": "carrier-pigeon"}), 400, "provider")
		expectFields(t, b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phoneNumber": 14155551234}), 400, "phone_purchase_id", "phoneNumber")
		expectStatus(t, b.req("POST", "/v1/calls/phone/initiate", noScope, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"}), 403, "permission_denied")
		expectStatus(t, b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": missingPurchase, "phoneNumber": "+14155551234"}), 404, "not_found")

		// 4.4 GET /v1/calls/{id}, /transcripts, /analysis: 200, 403, 404.
		for _, suffix := range []string{"", "/transcripts", "/analysis"} {
			b.must(200, "GET", "/v1/calls/"+phoneCall+suffix, nil)
			expectStatus(t, b.req("GET", "/v1/calls/"+phoneCall+suffix, noScope, nil), 403, "permission_denied")
			expectStatus(t, b.req("GET", "/v1/calls/call_aaaaaaaaaaaaaaaaaaaaaaaaaa"+suffix, b.key, nil), 404, "not_found")
			expectStatus(t, b.req("GET", "/v1/calls/garbage"+suffix, b.key, nil), 404, "not_found")
		}

		// 4.5 / 4.6 numbers and purchases: 200, 403.
		r = b.must(200, "GET", "/v1/phone/numbers", nil)
		for _, n := range r.list() {
			if n["number"] == f.number {
				t.Errorf("GET /v1/phone/numbers still lists purchased %s", f.number)
			}
		}
		if len(r.list()) != 299 {
			t.Errorf("GET /v1/phone/numbers lists %d numbers, want 299 (300 sandbox numbers, 1 bought)", len(r.list()))
		}
		expectStatus(t, b.req("GET", "/v1/phone/numbers", noScope, nil), 403, "permission_denied")
		r = b.must(200, "GET", "/v1/phone/purchases", nil)
		if len(r.list()) != 1 || r.list()[0]["id"] != f.purchase || r.list()[0]["outboundAssistantId"] != f.assistant {
			t.Errorf("GET /v1/phone/purchases = %s", r.Raw)
		}
		expectStatus(t, b.req("GET", "/v1/phone/purchases", noScope, nil), 403, "permission_denied")

		// 4.7 contacts listing: 200, 403, 404 (+400 paging).
		r = b.must(200, "GET", "/v1/phone/contacts/"+f.purchase+"?page=1&pageSize=1", nil)
		if p, _ := r.Body["pagination"].(map[string]any); p["total"] != 2.0 || p["pageSize"] != 1.0 || len(r.list()) != 1 {
			t.Errorf("contacts page = %s", r.Raw)
		}
		expectStatus(t, b.req("GET", "/v1/phone/contacts/"+f.purchase, noScope, nil), 403, "permission_denied")
		expectStatus(t, b.req("GET", "/v1/phone/contacts/"+missingPurchase, b.key, nil), 404, "not_found")
		expectFields(t, b.req("GET", "/v1/phone/contacts/"+f.purchase+"?pageSize=101", b.key, nil), 400, "pageSize")

		// 4.8 allocate-assistant: 200, 400, 403, 404.
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": f.purchase, "inboundAssistantId": f.assistant, "outboundAssistantId": f.assistant, "message": "Hello"})
		expectFields(t, b.req("POST", "/v1/phone/allocate-assistant", b.key, map[string]any{"inboundAssistantId": 5}), 400, "id", "inboundAssistantId")
		expectStatus(t, b.req("POST", "/v1/phone/allocate-assistant", noScope, map[string]any{"id": f.purchase, "message": "x"}), 403, "permission_denied")
		expectStatus(t, b.req("POST", "/v1/phone/allocate-assistant", b.key, map[string]any{"id": missingPurchase, "message": "x"}), 404, "not_found")
		r = b.req("POST", "/v1/phone/allocate-assistant", b.key, map[string]any{"id": f.purchase, "outboundAssistantId": "asst_aaaaaaaaaaaaaaaaaaaaaaaaaa"})
		expectFields(t, r, 404, "outboundAssistantId")

		// 4.9 schedule-call: 201, 400, 403, 404.
		sched := map[string]any{"name": "Follow-ups", "contacts_id": f.contacts, "phone_id": f.purchase, "message": "Hi", "dates": []string{dueIn(time.Hour)}, "timezone": "America/New_York"}
		r = b.must(201, "POST", "/v1/phone/schedule-call", sched)
		if id, _ := r.Body["id"].(string); !strings.HasPrefix(id, "sch_") {
			t.Errorf("schedule-call id = %v", r.Body["id"])
		}
		bad := clone(sched)
		bad["dates"] = []string{"2026-12-01 15:04", dueIn(-time.Hour)}
		bad["timezone"] = "Mars/Olympus"
		expectFields(t, b.req("POST", "/v1/phone/schedule-call", b.key, bad), 400, "dates[0]", "dates[1]", "timezone")
		expectStatus(t, b.req("POST", "/v1/phone/schedule-call", noScope, sched), 403, "permission_denied")
		missing := clone(sched)
		missing["phone_id"] = missingPurchase
		expectStatus(t, b.req("POST", "/v1/phone/schedule-call", b.key, missing), 404, "not_found")
		missing = clone(sched)
		missing["contacts_id"] = []string{f.contacts[0], "ct_aaaaaaaaaaaaaaaaaaaaaaaaaa"}
		expectFields(t, b.req("POST", "/v1/phone/schedule-call", b.key, missing), 404, "contacts_id[1]")
	})
}

// TestAuthentication: missing, unknown and revoked keys are 401; scopes are 403.
func TestAuthentication(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		expectStatus(t, b.req("GET", "/v1/calls", "", nil), 401, "unauthenticated")
		expectStatus(t, b.req("GET", "/v1/calls", "sbk_aaaaaaaaaaaaaaaa_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", nil), 401, "unauthenticated")
		expectStatus(t, b.req("GET", "/v1/calls", "not-a-key", nil), 401, "unauthenticated")
		// A key with the right id but a wrong secret.
		forged := b.key[:len(b.key)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(b.key, "a")]
		expectStatus(t, b.req("GET", "/v1/calls", forged, nil), 401, "unauthenticated")

		k := b.newKey(b.org, auth.CallsRead)
		b.req("GET", "/v1/calls", k, nil)
		expectStatus(t, b.req("GET", "/v1/calls", k, nil), 200, "")
		expectStatus(t, b.req("GET", "/v1/phone/numbers", k, nil), 403, "permission_denied")
		keys, err := b.m.DB().ListKeys(t.Context(), b.org)
		if err != nil {
			t.Fatal(err)
		}
		var kid string
		for _, kk := range keys {
			if kk.Name == "test" {
				kid = kk.ID
			}
		}
		if err := b.m.DB().RevokeKey(t.Context(), kid, time.Now()); err != nil {
			t.Fatal(err)
		}
		expectStatus(t, b.req("GET", "/v1/calls", k, nil), 401, "unauthenticated")
	})
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// expectStatus checks status and error code ("" for a success).
func expectStatus(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("status = %d, want %d; body %s", r.Status, status, r.Raw)
		return
	}
	if code == "" {
		return
	}
	if r.Body["status"] != false || r.code() != code || r.Body["message"] == "" || r.Body["requestId"] == "" {
		t.Errorf("error body = %s, want status false, code %q, message and requestId", r.Raw, code)
	}
}

// expectFields checks the status and that every named field is in error.fields.
func expectFields(t *testing.T, r resp, status int, fields ...string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("status = %d, want %d; body %s", r.Status, status, r.Raw)
		return
	}
	got := r.fieldNames()
	for _, f := range fields {
		if !slices.Contains(got, f) {
			t.Errorf("error fields = %v, want %q among them; body %s", got, f, r.Raw)
		}
	}
}
