package app

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
)

// TestAssistants: create, read, list, update, delete, with validation.
func TestAssistants(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.OpenAIBaseURL = "http://127.0.0.1:9/v1" // a model provider for the prompt; no call reaches it
		b := start(t, cfg)
		r := b.must(201, "POST", "/v1/assistants", map[string]any{
			"name": "Receptionist", "firstMessage": "Hi!", "systemPrompt": "Be brief.", "language": "en-GB",
			"voice": map[string]any{"provider": "local", "voiceId": "en-gb"}, "model": map[string]any{"provider": "openai", "model": "llama3.2"},
			"endCallPhrases": []string{"goodbye"}, "maxDurationSeconds": 120, "silenceTimeoutSeconds": 10,
			"analysisPlan": map[string]any{"summaryPrompt": "Summarize", "structuredDataSchema": map[string]any{"type": "object"}},
		})
		a := r.data()
		aid := a["id"].(string)
		if a["language"] != "en-GB" || a["maxDurationSeconds"] != 120.0 || a["voice"].(map[string]any)["voiceId"] != "en-gb" {
			t.Errorf("created assistant = %v", a)
		}
		got := b.must(200, "GET", "/v1/assistants/"+aid, nil).data()
		if got["name"] != "Receptionist" || got["createdAt"] != a["createdAt"] {
			t.Errorf("GET assistant = %v, want what POST returned %v", got, a)
		}
		u := b.must(200, "PATCH", "/v1/assistants/"+aid, map[string]any{"name": "Front desk", "maxDurationSeconds": nil}).data()
		if u["name"] != "Front desk" || u["maxDurationSeconds"] != 600.0 || u["systemPrompt"] != "Be brief." {
			t.Errorf("PATCH = %v, want new name, maxDuration reset to 600, prompt kept", u)
		}
		expectFields(t, b.req("PATCH", "/v1/assistants/"+aid, b.key, map[string]any{"silenceTimeoutSeconds": 1}), 400, "silenceTimeoutSeconds")
		if n := b.must(200, "GET", "/v1/assistants", nil).Body["pagination"].(map[string]any)["total"]; n != 1.0 {
			t.Errorf("assistants total = %v, want 1", n)
		}
		// An allocated assistant cannot be deleted.
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550101"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "inboundAssistantId": aid})
		expectStatus(t, b.req("DELETE", "/v1/assistants/"+aid, b.key, nil), 409, "conflict")
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "inboundAssistantId": ""})
		b.must(200, "DELETE", "/v1/assistants/"+aid, nil)
		expectStatus(t, b.req("GET", "/v1/assistants/"+aid, b.key, nil), 404, "not_found")
		// Scopes.
		ro := b.newKey(b.org, auth.AssistantsRead)
		expectStatus(t, b.req("POST", "/v1/assistants", ro, map[string]any{"name": "x"}), 403, "permission_denied")
		expectStatus(t, b.req("GET", "/v1/assistants", ro, nil), 200, "")
	})
}

// TestPurchasesAndContacts: buying, 409 on a taken number, contacts in JSON
// and CSV with duplicates reported, deletion and release.
func TestPurchasesAndContacts(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+1 (415) 555-0142", "provider": "sandbox"}).data()
		if p["number"] != "+14155550142" || p["provider"] != "sandbox" || p["inboundAssistantId"] != "" {
			t.Errorf("purchase = %v", p)
		}
		pid := p["id"].(string)
		expectStatus(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+14155550142"}), 409, "number_taken")
		other := b.newKey(createOrg(t, b.m.DB(), "o2"), auth.AllScopes...)
		expectStatus(t, b.req("POST", "/v1/phone/purchases", other, map[string]any{"number": "+14155550142"}), 409, "number_taken")
		expectFields(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+14155559999"}), 400, "number")
		expectFields(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+14155550143", "provider": "twilio"}), 400, "provider")

		r := b.must(201, "POST", "/v1/phone/contacts/"+pid, map[string]any{"contacts": []any{
			map[string]any{"name": "Ada", "phoneNumber": "+14155551234", "timezone": "America/Los_Angeles", "metadata": map[string]any{"tier": "gold"}},
			map[string]any{"name": "Ada again", "phoneNumber": "+1 415 555 1234"},
		}})
		added := r.data()
		if len(added["created"].([]any)) != 1 || len(added["duplicates"].([]any)) != 1 {
			t.Errorf("add with an in-batch duplicate = %s, want 1 created 1 duplicate", r.Raw)
		}
		csv := "Name,Phone Number,Timezone,Company\nBob,+12125559876,America/New_York,Acme\nAda,+14155551234,,X\n"
		r = b.req("POST", "/v1/phone/contacts/"+pid, b.key, csv, "Content-Type", "text/csv; charset=utf-8")
		if r.Status != 201 || len(r.data()["created"].([]any)) != 1 || r.data()["duplicates"].([]any)[0].(map[string]any)["field"] != "rows[3].phoneNumber" {
			t.Fatalf("CSV add = %d %s, want 1 created and rows[3] duplicate", r.Status, r.Raw)
		}
		bob := r.data()["created"].([]any)[0].(string)
		l := b.must(200, "GET", "/v1/phone/contacts/"+pid, nil)
		if len(l.list()) != 2 || l.list()[1]["name"] != "Bob" || l.list()[1]["metadata"].(map[string]any)["Company"] != "Acme" {
			t.Errorf("contacts = %s", l.Raw)
		}
		b.must(200, "DELETE", "/v1/phone/contacts/"+pid+"/"+bob, nil)
		expectStatus(t, b.req("DELETE", "/v1/phone/contacts/"+pid+"/"+bob, b.key, nil), 404, "not_found")

		// Releasing makes the number available again and removes its contacts.
		b.must(200, "DELETE", "/v1/phone/purchases/"+pid, nil)
		expectStatus(t, b.req("GET", "/v1/phone/contacts/"+pid, b.key, nil), 404, "not_found")
		found := false
		for _, n := range b.must(200, "GET", "/v1/phone/numbers", nil).list() {
			found = found || n["number"] == "+14155550142"
		}
		if !found {
			t.Errorf("released number not listed as available again")
		}
		b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550142"})
	})
}

// TestOperations: health, readiness, metrics and the OpenAPI document.
func TestOperations(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/ops.db"))
	b.must(200, "GET", "/v1/calls", nil)
	expectStatus(t, b.req("GET", "/healthz", "", nil), 200, "")
	expectStatus(t, b.req("GET", "/readyz", "", nil), 200, "")
	m := resp{Raw: b.metrics()}
	for _, want := range []string{`switchboard_http_requests_total{method="GET",route="/v1/calls",status="200"} 1`, "switchboard_http_request_duration_seconds_bucket", `switchboard_calls{status="ended"}`} {
		if !strings.Contains(m.Raw, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	o := b.req("GET", "/v1/openapi.json", "", nil)
	if o.Status != 200 || !strings.HasPrefix(o.Body["openapi"].(string), "3.1") {
		t.Errorf("GET /v1/openapi.json = %d, openapi %v", o.Status, o.Body["openapi"])
	}
	if strings.Contains(m.Raw, b.key) {
		t.Errorf("/metrics contains the API key")
	}
}

// TestKeyUsageTracked: lastUsedAt is recorded (batched) after use.
func TestKeyUsageTracked(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/u.db"))
	b.must(200, "GET", "/v1/calls", nil)
	deadline := time.Now().Add(15 * time.Second) // housekeeping flushes every second; generous for loaded machines
	for time.Now().Before(deadline) {
		keys, err := b.m.DB().ListKeys(t.Context(), b.org)
		if err != nil {
			t.Fatal(err)
		}
		if !keys[0].LastUsedAt.IsZero() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("lastUsedAt not recorded within 15s of use")
}
