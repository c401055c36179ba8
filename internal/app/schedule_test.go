package app

import (
	"testing"
	"time"
)

// scheduledAttempt returns the schedule's first attempt.
func (b *testBundle) firstAttempt(schedID string) map[string]any {
	b.t.Helper()
	d := b.must(200, "GET", "/v1/phone/schedules/"+schedID, nil).data()
	as, _ := d["attempts"].([]any)
	if len(as) == 0 {
		b.t.Fatalf("schedule %s has no attempts: %v", schedID, d)
	}
	return as[0].(map[string]any)
}

// waitDialed polls until the attempt has a call and returns when it was seen.
func (b *testBundle) waitDialed(schedID string, within time.Duration) (map[string]any, time.Time) {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		a := b.firstAttempt(schedID)
		if a["callId"] != nil {
			return a, time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.t.Fatalf("schedule %s: attempt not dialed within %s: %v", schedID, within, b.firstAttempt(schedID))
	return nil, time.Time{}
}

// TestScheduleDialsOnTime: an attempt 3 s ahead is dialed through the
// sandbox within 2 s of its due time, also when the server is stopped and
// started again between scheduling and the due time.
func TestScheduleDialsOnTime(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		name := "steady"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			eachDB(t, func(t *testing.T, dbURL string) {
				b := start(t, testConfig(dbURL))
				f := b.fixture(b.key, "+14155550100", "+14155551234")
				due := time.Now().Add(3 * time.Second).UTC().Truncate(time.Millisecond)
				id := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
					"name": "on time", "contacts_id": f.contacts, "phone_id": f.purchase, "message": "Your appointment",
					"dates": []string{due.Format("2006-01-02T15:04:05.000Z")}, "timezone": "America/New_York", "callingHours": allDay,
				}).Body["id"].(string)
				if a := b.firstAttempt(id); a["state"] != "pending" || a["callId"] != nil {
					t.Fatalf("attempt before due = %v, want pending without call", a)
				}
				if restart {
					b.stop()
					time.Sleep(500 * time.Millisecond)
					b.restart()
				}
				a, seen := b.waitDialed(id, 10*time.Second)
				late := seen.Sub(due)
				t.Logf("dialed %.3fs after due (observed by polling)", late.Seconds())
				if late > 2*time.Second {
					t.Errorf("attempt dialed %s after its due time, want within 2s", late)
				}
				if late < 0 {
					t.Errorf("attempt dialed %s before its due time", -late)
				}
				call := b.waitCall(b.key, a["callId"].(string), 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
				if call["outcome"] != "completed" || call["to"] != "+14155551234" || call["from"] != f.number || call["scheduleAttemptId"] != a["id"] {
					t.Errorf("scheduled call = %v, want completed from %s to +14155551234 linked to %v", call, f.number, a["id"])
				}
				created, _ := time.Parse(time.RFC3339, call["createdAt"].(string))
				if created.Before(due) {
					t.Errorf("call createdAt %s before due %s", created, due)
				}
				d := b.must(200, "GET", "/v1/phone/schedules/"+id, nil).data()
				if d["state"] != "finished" {
					t.Errorf("schedule state after its only call ended = %v, want finished", d["state"])
				}
				if a := b.firstAttempt(id); a["state"] != "completed" || a["outcome"] != "completed" {
					t.Errorf("attempt after call = %v, want completed/completed", a)
				} else if tries := a["tries"].([]any); a["requestedAt"] != a["dueAt"] || len(tries) != 1 || tries[0].(map[string]any)["callId"] != a["callId"] {
					t.Errorf("attempt after call = %v, want requestedAt = dueAt and one try, its call", a)
				}
			})
		})
	}
}

// TestScheduleCancel: canceled attempts are never dialed.
func TestScheduleCancel(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234", "+14155555678")
		id := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "cancel me", "contacts_id": f.contacts, "phone_id": f.purchase,
			"dates": []string{dueIn(1500 * time.Millisecond), dueIn(time.Hour)}, "timezone": "UTC", "callingHours": allDay,
		}).Body["id"].(string)
		r := b.must(200, "POST", "/v1/phone/schedules/"+id+"/cancel", nil)
		if r.data()["canceledAttempts"] != 4.0 {
			t.Errorf("cancel = %s, want 4 canceled attempts", r.Raw)
		}
		time.Sleep(2500 * time.Millisecond)
		if n := len(b.must(200, "GET", "/v1/calls", nil).list()); n != 0 {
			t.Errorf("calls after canceling before due = %d, want 0", n)
		}
		d := b.must(200, "GET", "/v1/phone/schedules/"+id, nil).data()
		if d["state"] != "canceled" || d["canceledAt"] == nil {
			t.Errorf("schedule after cancel = state %v canceledAt %v", d["state"], d["canceledAt"])
		}
		for _, a := range d["attempts"].([]any) {
			if a.(map[string]any)["state"] != "canceled" {
				t.Errorf("attempt after cancel = %v", a)
			}
		}
		// Listing.
		l := b.must(200, "GET", "/v1/phone/schedules", nil)
		if len(l.list()) != 1 || l.list()[0]["state"] != "canceled" {
			t.Errorf("GET /v1/phone/schedules = %s", l.Raw)
		}
		expectStatus(t, b.req("GET", "/v1/phone/schedules/sch_aaaaaaaaaaaaaaaaaaaaaaaaaa", b.key, nil), 404, "not_found")
	})
}

// TestScheduleNeedsOutboundAssistant: a number without an outbound
// assistant can neither place nor schedule calls.
func TestScheduleNeedsOutboundAssistant(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/s.db"))
	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+13125550150", "provider": "sandbox"}).data()["id"].(string)
	c := b.must(201, "POST", "/v1/phone/contacts/"+p, map[string]any{"contacts": []any{map[string]any{"phoneNumber": "+14155551234"}}}).data()["created"].([]any)[0]
	r := b.req("POST", "/v1/phone/schedule-call", b.key, map[string]any{"name": "s", "contacts_id": []any{c}, "phone_id": p, "dates": []string{dueIn(time.Hour)}, "timezone": "UTC"})
	expectFields(t, r, 400, "phone_id")
	r = b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"})
	expectFields(t, r, 400, "phone_purchase_id")
}
