package app

import (
	"testing"
	"time"
)

// TestScheduleOverChangesNothing: canceling, pausing or resuming a
// finished schedule, and pausing or resuming a canceled one, answer what
// happened — 200 with changed false, the state it is in, a message saying
// why — and change nothing: no pausedAt, no canceledAt, the same state.
func TestScheduleOverChangesNothing(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234")
		finished := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "done soon", "contacts_id": f.contacts, "phone_id": f.purchase,
			"dates": []string{dueIn(500 * time.Millisecond)}, "timezone": "UTC", "callingHours": allDay,
		}).Body["id"].(string)
		b.waitSchedule(finished, 15*time.Second, "finished", func(d map[string]any) bool { return d["state"] == "finished" })

		canceled := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "canceled", "contacts_id": f.contacts, "phone_id": f.purchase,
			"dates": []string{dueIn(time.Hour)}, "timezone": "UTC", "callingHours": allDay,
		}).Body["id"].(string)
		if d := b.must(200, "POST", "/v1/phone/schedules/"+canceled+"/cancel", nil).data(); d["canceledAttempts"] != 1.0 {
			t.Fatalf("cancel of a schedule with 1 pending = %v; want 1 canceled", d)
		} else if d["changed"] != true || d["state"] != "canceled" {
			t.Errorf("cancel of a schedule with 1 pending = %v; want changed, state canceled", d)
		}

		for _, tc := range []struct {
			id, action, state, message string
			data                       map[string]any
		}{
			{finished, "cancel", "finished", "schedule has finished: nothing to cancel; nothing changed", map[string]any{"canceledAttempts": 0.0, "changed": false, "state": "finished"}},
			{finished, "pause", "finished", "schedule has finished: nothing to pause; nothing changed", map[string]any{"paused": false, "changed": false, "state": "finished"}},
			{finished, "resume", "finished", "schedule has finished: nothing to resume; nothing changed", map[string]any{"paused": false, "changed": false, "state": "finished"}},
			{canceled, "cancel", "canceled", "schedule was already canceled; nothing changed", map[string]any{"canceledAttempts": 0.0, "changed": false, "state": "canceled"}},
			{canceled, "pause", "canceled", "schedule is canceled: nothing to pause; nothing changed", map[string]any{"paused": false, "changed": false, "state": "canceled"}},
			{canceled, "resume", "canceled", "schedule is canceled: nothing to resume; nothing changed", map[string]any{"paused": false, "changed": false, "state": "canceled"}},
		} {
			before := b.must(200, "GET", "/v1/phone/schedules/"+tc.id, nil).data()
			r := b.must(200, "POST", "/v1/phone/schedules/"+tc.id+"/"+tc.action, nil)
			if r.Body["message"] != tc.message || r.Body["id"] != tc.id || !sameJSON(r.data(), tc.data) {
				t.Errorf("%s of a %s schedule = %s; want message %q, id, data %v", tc.action, tc.state, r.Raw, tc.message, tc.data)
			}
			after := b.must(200, "GET", "/v1/phone/schedules/"+tc.id, nil).data()
			for _, k := range []string{"state", "pausedAt", "canceledAt"} {
				if after[k] != before[k] {
					t.Errorf("%s of a %s schedule changed %s from %v to %v; want it unchanged", tc.action, tc.state, k, before[k], after[k])
				}
			}
			if after["pausedAt"] != nil {
				t.Errorf("%s of a %s schedule: pausedAt = %v, want null", tc.action, tc.state, after["pausedAt"])
			}
		}
	})
}

// sameJSON reports whether two decoded JSON objects hold the same members.
func sameJSON(got, want map[string]any) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
