package app

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
)

// dncNumbers lists the numbers of a do-not-call listing.
func dncNumbers(r resp) []string {
	var out []string
	for _, e := range r.list() {
		n, _ := e["number"].(string)
		out = append(out, n)
	}
	return out
}

// dncTotal is a listing's pagination.total.
func dncTotal(r resp) int {
	p, _ := r.Body["pagination"].(map[string]any)
	n, _ := p["total"].(float64)
	return int(n)
}

// TestDNCScheduledAttemptSuppressed: a number added to the do-not-call
// list between scheduling and the due time is never dialed: its attempt
// ends suppressed (final, no call, a schedule.attempt.suppressed webhook),
// while the other contact of the same schedule is called.
func TestDNCScheduledAttemptSuppressed(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		rec, srv := newReceiver(t, false)
		b.must(201, "POST", "/v1/webhooks", map[string]any{"url": srv.URL + "/hooks", "events": []string{"schedule.attempt.suppressed"}})
		listed, free := "+14155551234", "+14155555678"
		f := b.fixture(b.key, "+14155550100", listed, free)
		schedID := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "dnc", "contacts_id": f.contacts, "phone_id": f.purchase,
			"dates": []string{dueIn(2 * time.Second)}, "timezone": "UTC", "callingHours": allDay,
		}).Body["id"].(string)
		r := b.must(201, "POST", "/v1/phone/dnc", map[string]any{"numbers": []string{listed}, "reason": "asked by letter"})
		if added, _ := r.data()["added"].([]any); len(added) != 1 {
			t.Fatalf("POST /v1/phone/dnc = %s; want one number added", r.Raw)
		}

		attempts := func() map[string]map[string]any {
			out := map[string]map[string]any{}
			for _, a := range b.must(200, "GET", "/v1/phone/schedules/"+schedID, nil).data()["attempts"].([]any) {
				m := a.(map[string]any)
				out[m["contactId"].(string)] = m
			}
			return out
		}
		deadline := time.Now().Add(15 * time.Second)
		var as map[string]map[string]any
		for {
			as = attempts()
			if as[f.contacts[0]]["state"] == "suppressed" && as[f.contacts[1]]["callId"] != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("attempts 15 s after scheduling = %v; want the listed contact's suppressed and the other's dialed", as)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if a := as[f.contacts[0]]; a["callId"] != nil {
			t.Errorf("suppressed attempt = %v; want no call", a)
		}
		ev := rec.wait(t, "schedule.attempt.suppressed", 10*time.Second)
		var env struct {
			Data struct{ AttemptID, PhoneNumber, PhonePurchaseID, Reason string }
		}
		if err := json.Unmarshal(ev.body, &env); err != nil || env.Data.AttemptID != as[f.contacts[0]]["id"] || env.Data.PhoneNumber != listed ||
			env.Data.PhonePurchaseID != f.purchase || env.Data.Reason != "do-not-call" {
			t.Errorf("schedule.attempt.suppressed = %s (%v); want attempt %v, %s, %s, reason do-not-call", ev.body, err, as[f.contacts[0]]["id"], listed, f.purchase)
		}
		// Wait past any retry: still no call to the listed number, ever.
		time.Sleep(time.Second)
		for _, c := range b.must(200, "GET", "/v1/calls?pageSize=100", nil).list() {
			if c["to"] == listed {
				t.Errorf("a call to the listed %s exists: %v", listed, c)
			}
		}
		if a := attempts()[f.contacts[0]]; a["state"] != "suppressed" || a["callId"] != nil {
			t.Errorf("suppressed attempt a second later = %v; want still suppressed, no call", a)
		}
	})
}

// TestDNCAPI: the do-not-call list's REST API: adding (idempotent, the
// first entry stands), paging and searching, deleting (the number encoded
// or not), the 409 suppressed of a direct call naming phoneNumber,
// validation 400s naming the fields and changing nothing, scopes, and
// another organization's list invisible and not applied.
func TestDNCAPI(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100")
		listed := "+14155551234"

		// Add: 201, normalized, a repeat counted once.
		r := b.must(201, "POST", "/v1/phone/dnc", map[string]any{"numbers": []string{"+1 (415) 555-1234", listed}, "reason": "complaint"})
		added, _ := r.data()["added"].([]any)
		if len(added) != 1 {
			t.Fatalf("POST /v1/phone/dnc = %s; want one entry added", r.Raw)
		}
		e := added[0].(map[string]any)
		if e["number"] != listed || e["reason"] != "complaint" || e["source"] != "api" || e["callId"] != nil || e["createdAt"] == nil {
			t.Errorf("added entry = %v; want %s, complaint, api, callId null", e, listed)
		}
		// Again, with another reason: 200, nothing added, the first entry stands.
		r = b.must(200, "POST", "/v1/phone/dnc", map[string]any{"numbers": []string{listed}, "reason": "other"})
		if al, _ := r.data()["alreadyListed"].([]any); len(al) != 1 || al[0].(map[string]any)["field"] != "numbers[0]" {
			t.Errorf("adding a listed number again = %s; want it in alreadyListed as numbers[0]", r.Raw)
		}
		if l := b.must(200, "GET", "/v1/phone/dnc", nil).list(); len(l) != 1 || l[0]["reason"] != "complaint" {
			t.Errorf("list after re-adding = %v; want the first entry (reason complaint)", l)
		}

		// A direct call to the listed number: 409 suppressed naming phoneNumber, no call stored.
		calls := len(b.must(200, "GET", "/v1/calls", nil).list())
		r = b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+1 415 555 1234"})
		expectStatus(t, r, 409, "suppressed")
		expectFields(t, r, 409, "phoneNumber")
		if n := len(b.must(200, "GET", "/v1/calls", nil).list()); n != calls {
			t.Errorf("calls after a suppressed initiate = %d; want %d (nothing stored)", n, calls)
		}
		b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155557777"})

		// Validation: 400 naming the field, nothing changed.
		for _, c := range []struct {
			body  any
			field string
		}{
			{map[string]any{}, "numbers"},
			{map[string]any{"numbers": []string{}}, "numbers"},
			{map[string]any{"numbers": nil}, "numbers"},
			{map[string]any{"numbers": "+14155550001"}, "numbers"},
			{map[string]any{"numbers": []any{"+14155550011", 14155550012}}, "numbers[1]"},
			{map[string]any{"numbers": []string{"+14155550011", "4155550012"}}, "numbers[1]"},
			{map[string]any{"numbers": []string{"+14155550011", "+1415555001x"}}, "numbers[1]"},
			{map[string]any{"numbers": make([]string, 1001)}, "numbers"},
			{map[string]any{"numbers": []string{"+14155550011"}, "reason": strings.Repeat("x", 501)}, "reason"},
			{map[string]any{"numbers": []string{"+14155550011"}, "reason": 5}, "reason"},
			{map[string]any{"numbers": []string{"+14155550011"}, "source": "opt-out"}, "source"},
		} {
			expectFields(t, b.req("POST", "/v1/phone/dnc", b.key, c.body), 400, c.field)
		}
		if r := b.must(200, "GET", "/v1/phone/dnc", nil); dncTotal(r) != 1 {
			t.Errorf("list after refused adds = %s; want the one number", r.Raw)
		}
		for q, field := range map[string]string{"search=abc": "search", "search=1-415": "search", "pageSize=0": "pageSize", "page=0": "page", "bogus=1": "bogus"} {
			expectFields(t, b.req("GET", "/v1/phone/dnc?"+q, b.key, nil), 400, field)
		}

		// Paging and search, newest first.
		var more []string
		for i := range 24 {
			more = append(more, fmt.Sprintf("+1212555%04d", 1000+i))
		}
		r = b.must(201, "POST", "/v1/phone/dnc", map[string]any{"numbers": more})
		if added, _ := r.data()["added"].([]any); len(added) != 24 {
			t.Fatalf("adding 24 numbers = %s", r.Raw)
		}
		p1 := b.must(200, "GET", "/v1/phone/dnc?pageSize=10", nil)
		p3 := b.must(200, "GET", "/v1/phone/dnc?pageSize=10&page=3", nil)
		if dncTotal(p1) != 25 || len(p1.list()) != 10 || len(p3.list()) != 5 || dncNumbers(p3)[4] != listed {
			t.Errorf("pages of 10 = %v / %v (total %d); want 10 then 5 of 25, the oldest (%s) last", dncNumbers(p1), dncNumbers(p3), dncTotal(p1), listed)
		}
		for q, want := range map[string][]string{
			"search=" + url.QueryEscape("+1415"): {listed},
			"search=+1415":                       {listed}, // an unencoded plus (a space once decoded)
			"search=5551234":                     {listed},
			"search=2125551023":                  {"+12125551023"},
			"search=%2B44":                       nil,
		} {
			r := b.must(200, "GET", "/v1/phone/dnc?"+q, nil)
			if got := dncNumbers(r); !slices.Equal(got, want) || dncTotal(r) != len(want) {
				t.Errorf("GET /v1/phone/dnc?%s = %v (total %d); want %v", q, got, dncTotal(r), want)
			}
		}

		// Scopes.
		readOnly := b.newKey(b.org, auth.PhoneRead)
		expectStatus(t, b.req("POST", "/v1/phone/dnc", readOnly, map[string]any{"numbers": []string{"+14155550011"}}), 403, "permission_denied")
		expectStatus(t, b.req("DELETE", "/v1/phone/dnc/%2B12125551000", readOnly, nil), 403, "permission_denied")
		b.must(200, "GET", "/v1/phone/dnc", nil)
		expectStatus(t, b.req("GET", "/v1/phone/dnc", b.newKey(b.org, auth.CallsRead), nil), 403, "permission_denied")

		// Another organization sees nothing, deletes nothing, and dials the number.
		other := createOrg(t, b.m.DB(), "Other")
		otherKey := b.newKey(other, auth.AllScopes...)
		if r := b.req("GET", "/v1/phone/dnc", otherKey, nil); r.Status != 200 || len(r.list()) != 0 || dncTotal(r) != 0 {
			t.Errorf("another organization's GET /v1/phone/dnc = %s; want an empty list", r.Raw)
		}
		expectStatus(t, b.req("DELETE", "/v1/phone/dnc/%2B14155551234", otherKey, nil), 404, "not_found")
		of := b.fixture(otherKey, "+14155550101")
		if r := b.req("POST", "/v1/calls/phone/initiate", otherKey, map[string]any{"phone_purchase_id": of.purchase, "phoneNumber": listed}); r.Status != 201 {
			t.Errorf("another organization's call to %s = %d %s; want 201 (not on its list)", listed, r.Status, r.Raw)
		}

		// Delete: encoded, literal plus, not listed, malformed.
		b.must(200, "DELETE", "/v1/phone/dnc/%2B14155551234", nil)
		b.must(200, "DELETE", "/v1/phone/dnc/+12125551000", nil)
		expectStatus(t, b.req("DELETE", "/v1/phone/dnc/%2B14155551234", b.key, nil), 404, "not_found")
		expectStatus(t, b.req("DELETE", "/v1/phone/dnc/not-a-number", b.key, nil), 404, "not_found")
		if r := b.must(200, "GET", "/v1/phone/dnc", nil); dncTotal(r) != 23 {
			t.Errorf("total after two deletes = %d; want 23", dncTotal(r))
		}
		b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": listed})
	})
}

// TestDNCOptOutPhrase: a sandbox caller who says one of the assistant's
// opt-out phrases is put on the list with the call as evidence, once;
// dialing the number again is then suppressed. (Alex, the sandbox's
// default persona, answers "How can I help?" with "I'd like to book an
// appointment, please."; the assistant's own phrase is that.)
func TestDNCOptOutPhrase(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100")
		expectFields(t, b.req("PATCH", "/v1/assistants/"+f.assistant, b.key, map[string]any{"optOutPhrases": []string{"ok", "?!"}}), 400, "optOutPhrases[1]")
		a := b.must(200, "PATCH", "/v1/assistants/"+f.assistant, map[string]any{"optOutPhrases": []string{"Book an appointment!"}}).data()
		if ph, _ := a["optOutPhrases"].([]any); len(ph) != 1 {
			t.Fatalf("assistant after PATCH optOutPhrases = %v", a["optOutPhrases"])
		}
		caller := "+14155552222"
		callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": caller}).Body["callId"].(string)
		deadline := time.Now().Add(15 * time.Second)
		var l []map[string]any
		for len(l) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s not on the do-not-call list 15 s after the call started; transcript %s", caller, b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).Raw)
			}
			time.Sleep(50 * time.Millisecond)
			l = b.must(200, "GET", "/v1/phone/dnc?search=%2B14155552222", nil).list()
		}
		if e := l[0]; e["number"] != caller || e["source"] != "opt-out" || e["callId"] != callID || !strings.Contains(e["reason"].(string), "appointment") {
			t.Errorf("opt-out entry = %v; want %s, source opt-out, callId %s, the caller's words in the reason", e, caller, callID)
		}
		expectStatus(t, b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": caller}), 409, "suppressed")
		if n := dncTotal(b.must(200, "GET", "/v1/phone/dnc", nil)); n != 1 {
			t.Errorf("list after one opt-out call = %d numbers; want 1", n)
		}
	})
}
