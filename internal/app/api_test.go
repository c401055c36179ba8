package app

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/auth"
)

// TestCrossOrgIsolation: a second organization's key gets 404 on every
// id-bearing route of the first, exactly as for an id that does not exist,
// and its listings do not show the first organization's data.
func TestCrossOrgIsolation(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		web := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant}).Body["callId"].(string)
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase,
			"dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}).Body["id"].(string)

		conn := b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Main trunk",
			"sip": map[string]any{"address": "sip.example.com", "numbers": []string{"+16175550100"}}}).data()["id"].(string)
		other := createOrg(t, b.m.DB(), "other")
		ok := b.newKey(other, auth.AllScopes...)
		of := b.fixture(ok, "+12125550100")

		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/calls/" + web, nil},
			{"GET", "/v1/calls/" + web + "/transcripts", nil},
			{"GET", "/v1/calls/" + web + "/analysis", nil},
			{"POST", "/v1/calls/" + web + "/end", nil},
			{"POST", "/v1/calls/" + web + "/say", map[string]any{"text": "hello"}},
			{"POST", "/v1/calls/" + web + "/transfer", map[string]any{"destination": "+14155550123"}},
			{"GET", "/v1/phone/connections/" + conn, nil},
			{"DELETE", "/v1/phone/connections/" + conn, nil},
			{"POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"}},
			{"GET", "/v1/phone/contacts/" + f.purchase, nil},
			{"POST", "/v1/phone/contacts/" + f.purchase, map[string]any{"contacts": []any{map[string]any{"phoneNumber": "+14155559999"}}}},
			{"DELETE", "/v1/phone/contacts/" + f.purchase + "/" + f.contacts[0], nil},
			{"DELETE", "/v1/phone/purchases/" + f.purchase, nil},
			{"POST", "/v1/phone/allocate-assistant", map[string]any{"id": f.purchase, "message": "mine now"}},
			{"POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase, "dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}},
			{"GET", "/v1/phone/schedules/" + sched, nil},
			{"POST", "/v1/phone/schedules/" + sched + "/cancel", nil},
			{"GET", "/v1/assistants/" + f.assistant, nil},
			{"PATCH", "/v1/assistants/" + f.assistant, map[string]any{"name": "stolen"}},
			{"DELETE", "/v1/assistants/" + f.assistant, nil},
			// The other org's own number with the first org's contacts and assistant.
			{"POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": of.purchase, "dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}},
		}
		for _, rt := range routes {
			r := b.req(rt.method, rt.path, ok, rt.body)
			if r.Status != 404 {
				t.Errorf("other org %s %s = %d, want 404; body %s", rt.method, rt.path, r.Status, r.Raw)
			}
		}
		r := b.req("POST", "/v1/phone/allocate-assistant", ok, map[string]any{"id": of.purchase, "outboundAssistantId": f.assistant})
		expectFields(t, r, 404, "outboundAssistantId")

		// Listings show only the caller's data.
		for _, path := range []string{"/v1/calls", "/v1/phone/purchases", "/v1/assistants", "/v1/phone/schedules", "/v1/phone/connections"} {
			for _, item := range b.req("GET", path, ok, nil).list() {
				for _, mine := range []string{web, f.purchase, f.assistant, sched, conn} {
					if item["id"] == mine {
						t.Errorf("other org GET %s lists %s of the first org", path, mine)
					}
				}
			}
		}
		// Nothing changed for the first organization.
		if got := b.must(200, "GET", "/v1/phone/contacts/"+f.purchase, nil).list(); len(got) != 1 {
			t.Errorf("first org contacts after other org's attempts = %d, want 1", len(got))
		}
		if got := b.must(200, "GET", "/v1/assistants/"+f.assistant, nil).data()["name"]; got != "Booker" {
			t.Errorf("assistant name after other org's PATCH = %v, want Booker", got)
		}
		if got := b.must(200, "GET", "/v1/phone/schedules/"+sched, nil).data()["state"]; got != "active" {
			t.Errorf("schedule state after other org's cancel = %v, want active", got)
		}
	})
}

// TestBadInput: malformed, oversized, wrong-typed and unknown input is a
// clear 4xx naming the field, and nothing is written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		before := b.snapshot(f)

		expectFields(t, b.req("POST", "/v1/assistants", b.key, `{"name": "x",`), 400, "body")
		expectFields(t, b.req("POST", "/v1/assistants", b.key, `[1,2]`), 400, "body")
		expectFields(t, b.req("POST", "/v1/assistants", b.key, `{"name": "x"} {"name": "y"}`), 400, "body")
		expectFields(t, b.req("POST", "/v1/assistants", b.key, map[string]any{"name": 5, "maxDurationSeconds": "long", "colour": "red"}), 400, "name", "maxDurationSeconds", "colour")
		expectFields(t, b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "x", "maxDurationSeconds": 5, "model": map[string]any{"provider": "skynet"}, "voice": map[string]any{"provider": "hal"}}), 400,
			"maxDurationSeconds", "model.provider", "voice.provider")
		expectFields(t, b.req("POST", "/v1/phone/contacts/"+f.purchase, b.key, map[string]any{"contacts": []any{
			map[string]any{"phoneNumber": "+14155552222"}, map[string]any{"phoneNumber": "12"}, map[string]any{"phoneNumber": "+14155553333", "timezone": "Nowhere/City", "extra": 1}}}), 400,
			"contacts[1].phoneNumber", "contacts[2].timezone", "contacts[2].extra")
		r := b.req("POST", "/v1/phone/contacts/"+f.purchase, b.key, "name,phoneNumber\nA,+14155552222\nB,not-a-number\n", "Content-Type", "text/csv")
		expectFields(t, r, 400, "rows[3].phoneNumber")
		expectFields(t, b.req("POST", "/v1/phone/schedule-call", b.key, map[string]any{"name": "s", "contacts_id": "all", "phone_id": f.purchase, "dates": []any{1}, "timezone": "UTC", "when": "now"}), 400,
			"contacts_id", "dates[0]", "when")
		expectFields(t, b.req("GET", "/v1/calls?page=0&pageSize=1000&status=done&type=fax&createdAfter=yesterday&colour=red", b.key, nil), 400,
			"page", "pageSize", "status", "type", "createdAfter", "colour")

		// 413, 415, 405, unknown path.
		big := `{"name": "` + strings.Repeat("x", 1<<20) + `"}`
		expectStatus(t, b.req("POST", "/v1/assistants", b.key, big), 413, "payload_too_large")
		expectStatus(t, b.req("POST", "/v1/assistants", b.key, `name=x`, "Content-Type", "application/x-www-form-urlencoded"), 415, "unsupported_media_type")
		expectStatus(t, b.req("POST", "/v1/assistants", b.key, `{"name":"x"}`, "Content-Type", ""), 415, "unsupported_media_type")
		r = b.req("DELETE", "/v1/calls", b.key, nil)
		expectStatus(t, r, 405, "method_not_allowed")
		if r.Header.Get("Allow") != "GET" {
			t.Errorf("405 Allow = %q, want GET", r.Header.Get("Allow"))
		}
		expectStatus(t, b.req("GET", "/v1/nothing-here", b.key, nil), 404, "not_found")

		if after := b.snapshot(f); after != before {
			t.Errorf("state changed by rejected requests:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// snapshot summarizes what an organization has, to check nothing changed.
func (b *testBundle) snapshot(f fixture) string {
	b.t.Helper()
	var sb strings.Builder
	for _, path := range []string{"/v1/assistants", "/v1/phone/purchases", "/v1/phone/contacts/" + f.purchase, "/v1/calls", "/v1/phone/schedules"} {
		r := b.must(200, "GET", path, nil)
		fmt.Fprintf(&sb, "%s:%d:%v;", path, len(r.list()), r.Body["pagination"])
	}
	return sb.String()
}

// TestIdempotency: the same key and body replays; another body is 409.
func TestIdempotency(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		body := map[string]any{"name": "Once"}
		r1 := b.req("POST", "/v1/assistants", b.key, body, "Idempotency-Key", "abc-1")
		r2 := b.req("POST", "/v1/assistants", b.key, body, "Idempotency-Key", "abc-1")
		if r1.Status != 201 || r2.Status != 201 || r1.Raw != r2.Raw {
			t.Fatalf("replay: first %d %s, second %d %s; want the same 201 body", r1.Status, r1.Raw, r2.Status, r2.Raw)
		}
		if r2.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay header Idempotent-Replayed = %q, want true", r2.Header.Get("Idempotent-Replayed"))
		}
		expectStatus(t, b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Twice"}, "Idempotency-Key", "abc-1"), 409, "idempotency_key_reused")
		if n := len(b.must(200, "GET", "/v1/assistants", nil).list()); n != 1 {
			t.Errorf("assistants after replays = %d, want 1", n)
		}
		// Concurrent duplicates create one resource.
		var wg sync.WaitGroup
		statuses := make([]int, 8)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Race"}, "Idempotency-Key", "race").Status
			}()
		}
		wg.Wait()
		if n := len(b.must(200, "GET", "/v1/assistants", nil).list()); n != 2 {
			t.Errorf("assistants after 8 concurrent same-key requests = %d, want 2; statuses %v", n, statuses)
		}
		// Keys are per organization.
		other := b.newKey(createOrg(t, b.m.DB(), "o2"), auth.AllScopes...)
		if r := b.req("POST", "/v1/assistants", other, map[string]any{"name": "Other"}, "Idempotency-Key", "abc-1"); r.Status != 201 || r.data()["name"] != "Other" {
			t.Errorf("same key in another org = %d %s, want a new 201", r.Status, r.Raw)
		}
	})
}

// TestRateLimit: past the burst a key gets 429 with Retry-After, having
// been admitted no more than the burst and the rate allow for the time
// taken; other keys are unaffected. The requests go on until three were
// refused, however slowly a loaded machine answers them.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	const rate, burst = 5.0, 10.0
	cfg := testConfig("sqlite:" + t.TempDir() + "/rl.db")
	cfg.RateLimit = rate
	b := start(t, cfg)
	limited, admitted := 0, 0
	var last resp
	begin := time.Now()
	for limited < 3 && time.Since(begin) < time.Minute {
		r := b.req("GET", "/v1/assistants", b.key, nil)
		switch r.Status {
		case 429:
			limited++
			last = r
		case 200:
			admitted++
		default:
			t.Fatalf("GET /v1/assistants = %d %s, want 200 or 429", r.Status, r.Raw)
		}
	}
	elapsed := time.Since(begin).Seconds()
	if limited < 3 {
		t.Fatalf("429s in %.0fs of requests (%d admitted) with rate %g/s burst %g = %d, want 3", elapsed, admitted, rate, burst, limited)
	}
	if bound := burst + rate*elapsed + 1; float64(admitted) > bound {
		t.Errorf("admitted %d requests of one key in %.2fs, over burst + rate·T = %.0f", admitted, elapsed, bound)
	}
	expectStatus(t, last, 429, "rate_limited")
	if last.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	other := b.newKey(b.org, auth.AssistantsRead)
	expectStatus(t, b.req("GET", "/v1/assistants", other, nil), 200, "")
}
