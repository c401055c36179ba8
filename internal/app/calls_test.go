package app

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestServerErrors: when the database fails under a request, every contract
// endpoint answers 500 with the error shape and no internal detail.
func TestServerErrors(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		web := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant}).Body["callId"].(string)
		// Break the tables behind the endpoints; keys keep working, so the
		// failure happens inside each handler.
		for _, table := range []string{"calls", "purchases", "contacts", "assistants", "schedules", "call_counts"} {
			b.execSQL("ALTER TABLE " + table + " RENAME TO " + table + "_broken")
		}
		routes := []struct {
			method, path string
			body         any
		}{
			{"GET", "/v1/calls", nil},
			{"POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant, "type": "web"}},
			{"POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"}},
			{"GET", "/v1/calls/" + web, nil},
			{"GET", "/v1/calls/" + web + "/transcripts", nil},
			{"GET", "/v1/calls/" + web + "/analysis", nil},
			{"GET", "/v1/phone/numbers", nil},
			{"GET", "/v1/phone/purchases", nil},
			{"GET", "/v1/phone/contacts/" + f.purchase, nil},
			{"POST", "/v1/phone/allocate-assistant", map[string]any{"id": f.purchase, "message": "x"}},
			{"POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase, "dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}},
		}
		for _, rt := range routes {
			r := b.req(rt.method, rt.path, b.key, rt.body)
			if r.Status != 500 {
				t.Errorf("%s %s with broken tables = %d, want 500; body %s", rt.method, rt.path, r.Status, r.Raw)
				continue
			}
			expectStatus(t, r, 500, "internal_error")
			msg := strings.ToLower(r.Body["message"].(string))
			if strings.Contains(msg, "sql") || strings.Contains(msg, "_broken") || strings.Contains(msg, "table") {
				t.Errorf("%s %s 500 body leaks internals: %s", rt.method, rt.path, r.Raw)
			}
		}
		for _, table := range []string{"calls", "purchases", "contacts", "assistants", "schedules", "call_counts"} {
			b.execSQL("ALTER TABLE " + table + "_broken RENAME TO " + table)
		}
	})
}

func (b *testBundle) execSQL(q string) {
	b.t.Helper()
	var err error
	db := b.m.DB()
	if db.lite != nil {
		_, err = db.lite.Writer.ExecContext(context.Background(), q)
	} else {
		_, err = db.pg.Pool.Exec(context.Background(), q)
	}
	if err != nil {
		b.t.Fatalf("exec %q: %v", q, err)
	}
}

// TestSandboxOutcomes: the destination's last four digits choose the outcome.
func TestSandboxOutcomes(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/o.db"))
	f := b.fixture(b.key, "+14155550100")
	tests := []struct {
		to, outcome, reason string
		answered            bool
	}{
		{"+14155550001", "busy", "customer-busy", false},
		{"+14155550002", "no-answer", "customer-did-not-answer", false},
		{"+14155550003", "voicemail", "customer-voicemail", true},
		{"+14155550004", "failed", "provider-failed", false},
		// Answered: a conversation with the default persona; the fixture's
		// assistant (no flow) takes one message and ends the call.
		{"+14155551234", "completed", "assistant-ended-call", true},
	}
	ids := make([]string, len(tests))
	for i, tt := range tests {
		ids[i] = b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": tt.to}).Body["callId"].(string)
	}
	for i, tt := range tests {
		c := b.waitCall(b.key, ids[i], 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if c["outcome"] != tt.outcome || c["endedReason"] != tt.reason || c["statusText"] != "ended" {
			t.Errorf("call to %s = outcome %v reason %v, want %s %s", tt.to, c["outcome"], c["endedReason"], tt.outcome, tt.reason)
		}
		if (c["startedAt"] != nil) != tt.answered {
			t.Errorf("call to %s startedAt = %v, want answered=%v", tt.to, c["startedAt"], tt.answered)
		}
		if tt.outcome == "completed" && c["durationSeconds"].(float64) <= 0 {
			t.Errorf("completed call duration = %v, want > 0", c["durationSeconds"])
		}
		if c["endedAt"] == nil || c["assistantId"] != f.assistant {
			t.Errorf("call to %s = %v", tt.to, c)
		}
	}
}

// TestListCalls: newest first, paging, filters and totals.
func TestListCalls(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100")
		var web []string
		for range 3 {
			web = append(web, b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": f.assistant}).Body["callId"].(string))
			time.Sleep(5 * time.Millisecond)
		}
		mid := time.Now().UTC()
		time.Sleep(5 * time.Millisecond)
		ph := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155550001"}).Body["callId"].(string)
		b.waitCall(b.key, ph, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })

		all := b.must(200, "GET", "/v1/calls", nil)
		ids := []string{}
		for _, c := range all.list() {
			ids = append(ids, c["id"].(string))
		}
		want := []string{ph, web[2], web[1], web[0]}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("GET /v1/calls order = %v, want newest first %v", ids, want)
		}
		if p := all.Body["pagination"].(map[string]any); p["page"] != 1.0 || p["pageSize"] != 20.0 || p["total"] != 4.0 {
			t.Errorf("default pagination = %v, want page 1, pageSize 20, total 4", p)
		}
		page2 := b.must(200, "GET", "/v1/calls?page=2&pageSize=3", nil)
		if len(page2.list()) != 1 || page2.list()[0]["id"] != web[0] {
			t.Errorf("page 2 of 3 = %s", page2.Raw)
		}
		checks := []struct {
			query string
			want  int
		}{
			{"type=web", 3}, {"type=phone", 1}, {"status=3", 1}, {"status=ended", 1}, {"status=0", 3},
			{"type=phone&status=0", 0}, {"createdAfter=" + mid.Format(time.RFC3339Nano), 1}, {"createdBefore=" + mid.Format(time.RFC3339Nano), 3},
			{"page=9", 4},
		}
		for _, c := range checks {
			r := b.must(200, "GET", "/v1/calls?"+c.query, nil)
			total := r.Body["pagination"].(map[string]any)["total"]
			if total != float64(c.want) {
				t.Errorf("GET /v1/calls?%s total = %v, want %d", c.query, total, c.want)
			}
			for _, item := range r.list() {
				if item["type"] == "web" && (item["phonePurchaseId"] != nil || item["from"] != nil) {
					t.Errorf("web call shows phone fields: %v", item)
				}
			}
		}
	})
}
