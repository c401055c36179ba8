package app

import (
	"strings"
	"testing"
	"time"
)

// TestLegacyTimezonesRefused: every field that takes a zone — a
// schedule's timezone, a contact's in a JSON list or a CSV file — refuses
// the zone database's legacy names (EST, accepted before as a fixed
// UTC−5, while PST was refused) with a 400 naming the field and the IANA
// name to use, and stores nothing. A contact stored with a legacy zone
// before this rule keeps it: it is read back and its schedule is
// accepted.
func TestLegacyTimezonesRefused(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		const est = "EST is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/New_York"
		wantField := func(what string, r resp, field, message string) {
			t.Helper()
			if r.Status != 400 || r.code() != "invalid_request" {
				t.Errorf("%s = %d %s; want 400 invalid_request", what, r.Status, r.Raw)
				return
			}
			e := r.Body["error"].(map[string]any)["fields"].([]any)
			if len(e) != 1 || e[0].(map[string]any)["field"] != field || e[0].(map[string]any)["message"] != message {
				t.Errorf("%s: error.fields = %v; want [{%s %q}]", what, e, field, message)
			}
		}
		sched := func(tz string) map[string]any {
			return map[string]any{"name": "tz", "contacts_id": f.contacts, "phone_id": f.purchase,
				"dates": []string{dueIn(time.Hour)}, "timezone": tz, "callingHours": allDay}
		}
		wantField("schedule-call with timezone EST", b.req("POST", "/v1/phone/schedule-call", b.key, sched("EST")), "timezone", est)
		wantField("schedule-call with timezone PST", b.req("POST", "/v1/phone/schedule-call", b.key, sched("PST")), "timezone",
			"PST is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/Los_Angeles")
		if n := len(b.must(200, "GET", "/v1/phone/schedules", nil).list()); n != 0 {
			t.Errorf("schedules after refused ones = %d, want 0", n)
		}
		wantField("contacts with timezone EST", b.req("POST", "/v1/phone/contacts/"+f.purchase, b.key, map[string]any{"contacts": []any{
			map[string]any{"phoneNumber": "+14155555678", "timezone": "America/Chicago"},
			map[string]any{"phoneNumber": "+14155555679", "timezone": "EST"},
		}}), "contacts[1].timezone", est)
		wantField("contacts CSV with timezone Japan", b.req("POST", "/v1/phone/contacts/"+f.purchase, b.key,
			"name,phoneNumber,timezone\nAda,+14155555678,America/Chicago\nBo,+14155555679,Japan\n", "Content-Type", "text/csv"),
			"rows[3].timezone", "Japan is a legacy alias, not an IANA time zone name: use the IANA name Asia/Tokyo")
		if n := len(b.must(200, "GET", "/v1/phone/contacts/"+f.purchase, nil).list()); n != 1 {
			t.Errorf("contacts after refused uploads = %d, want the fixture's 1", n)
		}

		// A zone stored before the rule keeps its meaning.
		b.execSQL("UPDATE contacts SET timezone = 'EST' WHERE id = '" + f.contacts[0] + "'")
		if c := b.must(200, "GET", "/v1/phone/contacts/"+f.purchase, nil).list()[0]; c["timezone"] != "EST" {
			t.Errorf("stored contact's timezone = %v, want EST as stored", c["timezone"])
		}
		r := b.must(201, "POST", "/v1/phone/schedule-call", sched("America/New_York"))
		if !strings.HasPrefix(r.Body["id"].(string), "sch_") {
			t.Errorf("schedule of a contact with a stored legacy zone = %s", r.Raw)
		}
	})
}
