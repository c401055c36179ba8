package app

import (
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Campaign settings of schedules (issue 12 §1): calling hours in each
// contact's zone, retries per outcome, caps, pause and resume.

// allDay are calling hours that never hold an attempt back.
var allDay = map[string]any{"start": "00:00", "end": "24:00"}

// addContacts adds contacts (number → timezone, "" for none) to a
// purchase and returns their ids in the order of numbers.
func (b *testBundle) addContacts(purchase string, numbers []string, zones map[string]string) []string {
	b.t.Helper()
	var cs []any
	for _, n := range numbers {
		c := map[string]any{"name": "Contact " + n, "phoneNumber": n}
		if z := zones[n]; z != "" {
			c["timezone"] = z
		}
		cs = append(cs, c)
	}
	created := b.must(201, "POST", "/v1/phone/contacts/"+purchase, map[string]any{"contacts": cs}).data()["created"].([]any)
	out := make([]string, len(created))
	for i, c := range created {
		switch c := c.(type) {
		case string:
			out[i] = c
		case map[string]any:
			out[i] = c["id"].(string)
		}
	}
	return out
}

// attempts reads a schedule's attempts by contact id.
func (b *testBundle) attemptsByContact(schedID string) (map[string]map[string]any, map[string]any) {
	b.t.Helper()
	d := b.must(200, "GET", "/v1/phone/schedules/"+schedID, nil).data()
	out := map[string]map[string]any{}
	for _, a := range d["attempts"].([]any) {
		m := a.(map[string]any)
		out[m["contactId"].(string)] = m
	}
	return out, d
}

// waitSchedule polls the schedule until cond holds.
func (b *testBundle) waitSchedule(schedID string, within time.Duration, what string, cond func(d map[string]any) bool) map[string]any {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for {
		d := b.must(200, "GET", "/v1/phone/schedules/"+schedID, nil).data()
		if cond(d) {
			return d
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("schedule %s: %s not within %s: %v", schedID, what, within, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled: no attempt waits or runs.
func settled(d map[string]any) bool {
	p := d["progress"].(map[string]any)
	return p["pending"] == 0.0 && p["dialing"] == 0.0
}

func parseTS(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return ts
}

// TestScheduleCallingHoursPerContactZone: one schedule, a contact in
// Asia/Kolkata and one in America/Los_Angeles (UTC+05:30 and UTC-8/-7:
// 12.5 to 13.5 hours apart). The window is an hour around Kolkata's wall
// clock now, so the Kolkata contact is called at once and the Los Angeles
// one waits for the window to open in Los Angeles; the scheduler's clock
// is then moved to that opening, and it is called. Each call is placed
// inside its own contact's hours, on the scheduler's clock.
func TestScheduleCallingHoursPerContactZone(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		kolkata, _ := time.LoadLocation("Asia/Kolkata")
		la, _ := time.LoadLocation("America/Los_Angeles")
		now := time.Now()
		if k := now.In(kolkata); k.Hour() == 23 && k.Minute() >= 55 {
			// The window must not cross Kolkata's midnight: wait for it.
			next := time.Date(k.Year(), k.Month(), k.Day()+1, 0, 0, 5, 0, kolkata)
			time.Sleep(time.Until(next))
			now = time.Now()
		}
		k := now.In(kolkata)
		minute := k.Hour()*60 + k.Minute()
		open, end := max(minute-30, 0), min(minute+30, 24*60)
		hm := func(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
		hours := map[string]any{"start": hm(open), "end": hm(end)}
		if l := now.In(la); l.Hour()*60+l.Minute() >= open && l.Hour()*60+l.Minute() < end {
			t.Fatalf("Los Angeles now (%s) inside Kolkata's window %v: zones moved?", l, hours)
		}

		var offset atomic.Int64
		cfg := testConfig(dbURL)
		cfg.Campaigns.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		b := start(t, cfg)
		f := b.fixture(b.key, "+14155550100")
		ids := b.addContacts(f.purchase, []string{"+14155551234", "+14155555678"}, map[string]string{"+14155551234": "Asia/Kolkata", "+14155555678": "America/Los_Angeles"})
		inKolkata, inLA := ids[0], ids[1]
		due := dueIn(time.Second)
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "two zones", "contacts_id": ids, "phone_id": f.purchase, "dates": []string{due},
			"timezone": "Europe/Berlin", "callingHours": hours,
		}).Body["id"].(string)

		as, d := b.attemptsByContact(sched)
		if d["callingHours"].(map[string]any)["start"] != hm(open) {
			t.Errorf("schedule callingHours = %v, want %v", d["callingHours"], hours)
		}
		ka, lo := as[inKolkata], as[inLA]
		if ka["requestedAt"] != due || ka["dueAt"] != due {
			t.Errorf("Kolkata attempt requestedAt %v dueAt %v; want both %s (inside its hours)", ka["requestedAt"], ka["dueAt"], due)
		}
		laDue := parseTS(t, lo["dueAt"])
		if lo["requestedAt"] != due || !laDue.After(now) || laDue.In(la).Format("15:04") != hm(open) || laDue.Sub(now) > 25*time.Hour {
			t.Fatalf("Los Angeles attempt requestedAt %v dueAt %v (%s there); want requested %s, due at the next %s in Los Angeles",
				lo["requestedAt"], lo["dueAt"], laDue.In(la).Format("Mon 15:04 MST"), due, hm(open))
		}

		b.waitSchedule(sched, 10*time.Second, "Kolkata contact called", func(d map[string]any) bool {
			as, _ := b.attemptsByContact(sched)
			return as[inKolkata]["callId"] != nil
		})
		as, _ = b.attemptsByContact(sched)
		call := b.waitCall(b.key, as[inKolkata]["callId"].(string), 10*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if w := parseTS(t, call["createdAt"]).In(kolkata); w.Hour()*60+w.Minute() < open || w.Hour()*60+w.Minute() >= end {
			t.Errorf("Kolkata call placed at %s there, outside %v", w.Format("15:04"), hours)
		}
		time.Sleep(time.Second) // the promoter runs 5 times a second: Los Angeles stays waiting
		if as, _ := b.attemptsByContact(sched); as[inLA]["callId"] != nil || as[inLA]["state"] != "pending" {
			t.Fatalf("Los Angeles attempt outside its hours = %v; want pending, no call", as[inLA])
		}

		// The scheduler's clock reaches the opening in Los Angeles.
		offset.Store(int64(time.Until(laDue) + 500*time.Millisecond))
		b.waitSchedule(sched, 10*time.Second, "Los Angeles contact called", func(d map[string]any) bool {
			as, _ := b.attemptsByContact(sched)
			return as[inLA]["callId"] != nil
		})
		as, _ = b.attemptsByContact(sched)
		call = b.waitCall(b.key, as[inLA]["callId"].(string), 10*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		onClock := parseTS(t, call["createdAt"]).Add(time.Duration(offset.Load())).In(la)
		if m := onClock.Hour()*60 + onClock.Minute(); m < open || m >= end {
			t.Errorf("Los Angeles call placed at %s there (scheduler's clock), outside %v", onClock.Format("15:04"), hours)
		}
		if tries := as[inLA]["tries"].([]any); len(tries) != 1 || tries[0].(map[string]any)["due"] != lo["dueAt"] {
			t.Errorf("Los Angeles attempt tries = %v; want one, due %v", tries, lo["dueAt"])
		}
	})
}

// TestScheduleRetriesPerOutcome: the sandbox's busy, no-answer, voicemail
// and failed numbers on one schedule whose retries come after 0.01
// minutes (0.6 s): each attempt is tried 1 + its outcome's maxAttempts
// times, each retry due no earlier than afterMinutes after the previous
// call's end, and every try is recorded.
func TestScheduleRetriesPerOutcome(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		rec, srv := newReceiver(t, false)
		b.must(201, "POST", "/v1/webhooks", map[string]any{"url": srv.URL,
			"events": []string{"schedule.attempt.completed", "schedule.attempt.retrying", "schedule.completed"}})
		f := b.fixture(b.key, "+14155550100")
		numbers := []string{"+14155550001", "+14155550002", "+14155550003", "+14155550004"}
		ids := b.addContacts(f.purchase, numbers, nil)
		retry := map[string]any{
			"busy":      map[string]any{"afterMinutes": 0.01, "maxAttempts": 2},
			"noAnswer":  map[string]any{"afterMinutes": 0.01, "maxAttempts": 1},
			"voicemail": map[string]any{"afterMinutes": 0.01, "maxAttempts": 1},
			"failed":    map[string]any{"afterMinutes": 0.01},
		}
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "retries", "contacts_id": ids, "phone_id": f.purchase, "dates": []string{dueIn(500 * time.Millisecond)},
			"timezone": "UTC", "callingHours": allDay, "retry": retry,
		}).Body["id"].(string)
		d := b.waitSchedule(sched, 45*time.Second, "every attempt final", settled)
		if r := d["retry"].(map[string]any)["failed"].(map[string]any); r["afterMinutes"] != 0.01 || r["maxAttempts"] != 2.0 {
			t.Errorf("retry.failed = %v; want afterMinutes 0.01 and the default maxAttempts 2", r)
		}
		as, _ := b.attemptsByContact(sched)
		want := []struct {
			outcome string
			tries   int
		}{{"busy", 3}, {"no-answer", 2}, {"voicemail", 2}, {"failed", 3}}
		for i, w := range want {
			a := as[ids[i]]
			tries := a["tries"].([]any)
			if len(tries) != w.tries || a["state"] != "completed" || a["outcome"] != w.outcome {
				t.Errorf("%s (%s): state %v outcome %v, %d tries; want completed %s after %d tries: %v", numbers[i], w.outcome, a["state"], a["outcome"], len(tries), w.outcome, w.tries, tries)
				continue
			}
			var prevEnd time.Time
			for j, tr := range tries {
				tr := tr.(map[string]any)
				if tr["outcome"] != w.outcome || tr["callId"] == nil {
					t.Errorf("%s try %d = %v; want outcome %s with a call", numbers[i], j+1, tr, w.outcome)
					continue
				}
				c := b.must(200, "GET", "/v1/calls/"+tr["callId"].(string), nil).data()
				due, dialed := parseTS(t, tr["due"]), parseTS(t, tr["dialedAt"])
				if j > 0 && due.Before(prevEnd.Add(600*time.Millisecond-time.Millisecond)) {
					t.Errorf("%s try %d due %s, less than 0.6 s after the previous call's end %s", numbers[i], j+1, due, prevEnd)
				}
				if dialed.Before(due) {
					t.Errorf("%s try %d dialed %s before its due time %s", numbers[i], j+1, dialed, due)
				}
				if c["scheduleAttemptId"] != a["id"] {
					t.Errorf("%s try %d call %v not linked to the attempt", numbers[i], j+1, c["id"])
				}
				prevEnd = parseTS(t, c["endedAt"])
			}
			if j := len(tries) - 1; a["callId"] != tries[j].(map[string]any)["callId"] {
				t.Errorf("%s callId %v; want the last try's", numbers[i], a["callId"])
			}
		}
		p := d["progress"].(map[string]any)["completed"].(map[string]any)
		if p["busy"] != 1.0 || p["no-answer"] != 1.0 || p["voicemail"] != 1.0 || p["failed"] != 1.0 {
			t.Errorf("progress.completed = %v; want one attempt of each outcome", p)
		}
		if n := len(b.must(200, "GET", "/v1/calls?pageSize=100", nil).list()); n != 10 {
			t.Errorf("calls placed = %d; want 10 (3 + 2 + 2 + 3)", n)
		}
		// Webhooks: schedule.attempt.completed for every try, retrying for
		// each retry (2 + 1 + 1 + 2), schedule.completed once.
		want6 := map[string]int{"schedule.attempt.completed": 10, "schedule.attempt.retrying": 6, "schedule.completed": 1}
		var got map[string]int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			got = map[string]int{}
			rec.mu.Lock()
			for _, g := range rec.got {
				got[g.typ]++
			}
			rec.mu.Unlock()
			if fmt.Sprint(got) == fmt.Sprint(want6) {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want6) {
			t.Errorf("webhook deliveries = %v; want %v", got, want6)
		}
		r := rec.wait(t, "schedule.attempt.retrying", time.Second)
		for _, part := range []string{`"scheduleId":"` + sched + `"`, `"attemptId":"att_`, `"try":`, `"requestedAt":"`, `"dueAt":"`, `"call":{`} {
			if !strings.Contains(string(r.body), part) {
				t.Errorf("schedule.attempt.retrying body %s lacks %s", r.body, part)
			}
		}
		r = rec.wait(t, "schedule.completed", time.Second)
		for _, part := range []string{`"scheduleId":"` + sched + `"`, `"at":"`, `"progress":{"pending":0,"dialing":0,"completed":{`, `"busy":1`, `"voicemail":1`} {
			if !strings.Contains(string(r.body), part) {
				t.Errorf("schedule.completed body %s lacks %s", r.body, part)
			}
		}
	})
}

// maxOverlap is the most of the calls that were live at once, from their
// createdAt and endedAt.
func maxOverlap(t *testing.T, calls []map[string]any) int {
	t.Helper()
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, c := range calls {
		es = append(es, edge{parseTS(t, c["createdAt"]), 1}, edge{parseTS(t, c["endedAt"]), -1})
	}
	sort.Slice(es, func(i, j int) bool {
		if !es[i].at.Equal(es[j].at) {
			return es[i].at.Before(es[j].at)
		}
		return es[i].delta < es[j].delta // an end at the same instant first
	})
	n, top := 0, 0
	for _, e := range es {
		n += e.delta
		top = max(top, n)
	}
	return top
}

// scheduledCalls waits for a schedule to settle and returns its calls.
func (b *testBundle) scheduledCalls(sched string, within time.Duration) []map[string]any {
	b.t.Helper()
	b.waitSchedule(sched, within, "every attempt final", settled)
	as, _ := b.attemptsByContact(sched)
	var out []map[string]any
	for _, a := range as {
		for _, tr := range a["tries"].([]any) {
			out = append(out, b.must(200, "GET", "/v1/calls/"+tr.(map[string]any)["callId"].(string), nil).data())
		}
	}
	return out
}

// TestScheduleCaps: attempts over a cap wait their turn and are dialed
// later; never more calls are live at once than the schedule's
// maxConcurrentCalls, the organization's cap or the server's per-number
// cap.
func TestScheduleCaps(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.Campaigns.Caps.PerNumber = 3
		b := start(t, cfg)
		schedule := func(f fixture, n int, extra map[string]any) (string, int) {
			var numbers []string
			for i := range n {
				numbers = append(numbers, fmt.Sprintf("+1415555%04d", 2000+i))
			}
			body := map[string]any{"name": "capped", "contacts_id": b.addContacts(f.purchase, numbers, nil), "phone_id": f.purchase,
				"dates": []string{dueIn(500 * time.Millisecond)}, "timezone": "UTC", "callingHours": allDay}
			for k, v := range extra {
				body[k] = v
			}
			return b.must(201, "POST", "/v1/phone/schedule-call", body).Body["id"].(string), n
		}
		check := func(name, sched string, n, limit int) {
			t.Helper()
			calls := b.scheduledCalls(sched, 60*time.Second)
			if len(calls) != n {
				t.Errorf("%s: %d calls placed; want %d (waiting attempts dialed later, none failed)", name, len(calls), n)
			}
			if top := maxOverlap(t, calls); top > limit || top == 0 {
				t.Errorf("%s: %d calls live at once; want at most %d", name, top, limit)
			}
			_, d := b.attemptsByContact(sched)
			if p := d["progress"].(map[string]any); p["failed"] != 0.0 || p["completed"].(map[string]any)["completed"] != float64(n) {
				t.Errorf("%s: progress = %v; want %d completed, none failed", name, p, n)
			}
		}

		// The schedule's own cap.
		f := b.fixture(b.key, "+14155550100")
		sched, n := schedule(f, 4, map[string]any{"maxConcurrentCalls": 2})
		check("maxConcurrentCalls 2", sched, n, 2)

		// The server's per-number cap (3), with no cap of the schedule.
		g := b.fixture(b.key, "+14155550101")
		sched, n = schedule(g, 5, nil)
		check("server cap 3 per number", sched, n, 3)

		// The organization's own cap lowers the server's.
		org := b.must(200, "PATCH", "/v1/organization", map[string]any{"maxConcurrentCalls": 1}).data()
		eff := org["effectiveCaps"].(map[string]any)
		if org["maxConcurrentCalls"] != 1.0 || eff["maxConcurrentCalls"] != 1.0 || eff["maxConcurrentCallsPerNumber"] != 3.0 {
			t.Errorf("PATCH /v1/organization = %v; want own 1, effective 1 per org and 3 per number", org)
		}
		h := b.fixture(b.key, "+14155550102")
		sched, n = schedule(h, 3, nil)
		check("organization cap 1", sched, n, 1)
		if got := b.must(200, "GET", "/v1/organization", nil).data(); got["maxConcurrentCalls"] != 1.0 || got["serverCaps"].(map[string]any)["maxConcurrentCallsPerNumber"] != 3.0 {
			t.Errorf("GET /v1/organization = %v", got)
		}
		expectFields(t, b.req("PATCH", "/v1/organization", b.key, map[string]any{"maxConcurrentCalls": -1, "maxConcurrentCallsPerNumber": "2", "x": 1}), 400,
			"maxConcurrentCalls", "maxConcurrentCallsPerNumber", "x")
		if got := b.must(200, "GET", "/v1/organization", nil).data(); got["maxConcurrentCalls"] != 1.0 || got["maxConcurrentCallsPerNumber"] != 0.0 {
			t.Errorf("GET /v1/organization after a refused PATCH = %v; want it unchanged", got)
		}
	})
}

// TestSchedulePauseResume: a paused schedule's due attempts are not
// dialed; resumed, they are, within 2 s.
func TestSchedulePauseResume(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.fixture(b.key, "+14155550100", "+14155551234", "+14155555678")
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "pause me", "contacts_id": f.contacts, "phone_id": f.purchase, "dates": []string{dueIn(1500 * time.Millisecond)},
			"timezone": "UTC", "callingHours": allDay,
		}).Body["id"].(string)
		path := "/v1/phone/schedules/" + sched
		r := b.must(200, "POST", path+"/pause", nil).data()
		if r["paused"] != true || r["changed"] != true {
			t.Errorf("pause = %v; want paused, changed", r)
		}
		if r := b.must(200, "POST", path+"/pause", map[string]any{}).data(); r["changed"] != false {
			t.Errorf("pause again = %v; want changed false", r)
		}
		expectFields(t, b.req("POST", path+"/pause", b.key, map[string]any{"now": true}), 400, "now")
		expectStatus(t, b.req("POST", "/v1/phone/schedules/sch_aaaaaaaaaaaaaaaaaaaaaaaaaa/pause", b.key, nil), 404, "not_found")
		d := b.must(200, "GET", path, nil).data()
		if d["state"] != "paused" || d["pausedAt"] == nil {
			t.Errorf("schedule after pause: state %v pausedAt %v; want paused", d["state"], d["pausedAt"])
		}
		time.Sleep(2500 * time.Millisecond)
		if n := len(b.must(200, "GET", "/v1/calls", nil).list()); n != 0 {
			t.Fatalf("calls of a paused schedule past its due time = %d; want 0", n)
		}
		resumed := time.Now()
		if r := b.must(200, "POST", path+"/resume", nil).data(); r["paused"] != false || r["changed"] != true {
			t.Errorf("resume = %v", r)
		}
		b.waitSchedule(sched, 2*time.Second, "both attempts dialed after resume", func(d map[string]any) bool {
			for _, a := range d["attempts"].([]any) {
				if a.(map[string]any)["callId"] == nil {
					return false
				}
			}
			return true
		})
		t.Logf("dialed within %s of resume", time.Since(resumed).Round(time.Millisecond))
		d = b.waitSchedule(sched, 10*time.Second, "finished", func(d map[string]any) bool { return d["state"] == "finished" })
		if d["pausedAt"] != nil {
			t.Errorf("pausedAt after resume = %v; want null", d["pausedAt"])
		}
	})
}

// TestScheduleCampaignValidation: every bad campaign field is a 400
// naming it, and nothing is stored.
func TestScheduleCampaignValidation(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/s.db"))
	f := b.fixture(b.key, "+14155550100", "+14155551234")
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase, "dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		extra  map[string]any
		fields []string
	}{
		{map[string]any{"callingHours": map[string]any{"start": "21:00", "end": "08:00"}}, []string{"callingHours.end"}},
		{map[string]any{"callingHours": map[string]any{"start": "8", "end": "25:00", "days": []any{"mon", "funday", "mon"}, "tz": "x"}},
			[]string{"callingHours.start", "callingHours.end", "callingHours.days[1]", "callingHours.days[2]", "callingHours.tz"}},
		{map[string]any{"callingHours": map[string]any{"days": []any{}}}, []string{"callingHours.days"}},
		{map[string]any{"callingHours": "9-5"}, []string{"callingHours"}},
		{map[string]any{"retry": map[string]any{"busy": map[string]any{"afterMinutes": -1, "maxAttempts": 11}, "noAnswer": map[string]any{"maxAttempts": 1.5}, "voicemail": "no", "other": 1}},
			[]string{"retry.busy.afterMinutes", "retry.busy.maxAttempts", "retry.noAnswer.maxAttempts", "retry.voicemail", "retry.other"}},
		{map[string]any{"retry": map[string]any{"failed": map[string]any{"afterMinutes": "5"}}}, []string{"retry.failed.afterMinutes"}},
		{map[string]any{"maxConcurrentCalls": -1}, []string{"maxConcurrentCalls"}},
		{map[string]any{"maxConcurrentCalls": "2"}, []string{"maxConcurrentCalls"}},
	}
	for _, tt := range tests {
		r := b.req("POST", "/v1/phone/schedule-call", b.key, base(tt.extra))
		expectFields(t, r, 400, tt.fields...)
	}
	if n := len(b.must(200, "GET", "/v1/phone/schedules", nil).list()); n != 0 {
		t.Errorf("schedules stored after refused requests = %d; want 0", n)
	}
	// Defaults when none is sent; fields left out take their default.
	sched := b.must(201, "POST", "/v1/phone/schedule-call", base(map[string]any{"callingHours": map[string]any{"end": "20:00"}, "retry": map[string]any{"busy": map[string]any{"maxAttempts": 5}}})).Body["id"].(string)
	d := b.must(200, "GET", "/v1/phone/schedules/"+sched, nil).data()
	h, rt := d["callingHours"].(map[string]any), d["retry"].(map[string]any)
	if h["start"] != "08:00" || h["end"] != "20:00" || len(h["days"].([]any)) != 7 {
		t.Errorf("callingHours = %v; want 08:00 (default) to 20:00 every day", h)
	}
	busy, noAnswer, voicemail := rt["busy"].(map[string]any), rt["noAnswer"].(map[string]any), rt["voicemail"].(map[string]any)
	if busy["afterMinutes"] != 15.0 || busy["maxAttempts"] != 5.0 || noAnswer["afterMinutes"] != 60.0 || noAnswer["maxAttempts"] != 2.0 || voicemail["maxAttempts"] != 0.0 {
		t.Errorf("retry = %v; want busy 15 min ×5, no-answer 60 min ×2, voicemail none", rt)
	}
	if d["maxConcurrentCalls"] != 0.0 || d["pausedAt"] != nil || !strings.Contains(fmt.Sprint(d["progress"]), "pending:1") {
		t.Errorf("schedule = maxConcurrentCalls %v pausedAt %v progress %v; want 0, null, 1 pending", d["maxConcurrentCalls"], d["pausedAt"], d["progress"])
	}
}
