package app

import (
	"encoding/json"
	"fmt"

	"regexp"
	"slices"
	"strings"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/webhook"
	"testing"
	"time"
)

// bookingFlow greets, asks for a date, confirms it and says goodbye.
const bookingFlow = `{
  "start": "greet",
  "nodes": {
    "greet": {"type": "say", "text": "Hi! I can book your appointment.", "next": "ask_date"},
    "ask_date": {"type": "ask", "text": "What day would suit you?",
      "branches": [{"match": {"kind": "date"}, "capture": "date", "next": "confirm"}],
      "noMatch": {"text": "Sorry, which day? For example, next Tuesday.", "maxRetries": 2, "next": "fail"}},
    "confirm": {"type": "ask", "text": "So {{date}}, is that right?",
      "branches": [{"match": {"kind": "yesno", "value": true}, "next": "bye"},
                   {"match": {"kind": "yesno", "value": false}, "next": "ask_date"}]},
    "bye": {"type": "end", "text": "You're booked for {{date}}. Goodbye!", "success": true},
    "fail": {"type": "end", "text": "Sorry, I couldn't book that. Goodbye.", "success": false}
  }
}`

// bookingAssistant creates the booking flow assistant and returns its id.
func (b *testBundle) bookingAssistant(key string) string {
	b.t.Helper()
	var flow any
	if err := json.Unmarshal([]byte(bookingFlow), &flow); err != nil {
		b.t.Fatal(err)
	}
	r := b.req("POST", "/v1/assistants", key, map[string]any{
		"name": "Booker", "model": map[string]any{"provider": "flow"}, "flow": flow,
		"analysisPlan": map[string]any{"structuredDataSchema": map[string]any{
			"type": "object", "properties": map[string]any{"date": map[string]any{"type": "string", "format": "date"}}, "required": []string{"date"}}},
	})
	if r.Status != 201 {
		b.t.Fatalf("create booking assistant = %d: %s", r.Status, r.Raw)
	}
	return r.data()["id"].(string)
}

// waitAnalysis polls a call's analysis until it is no longer pending.
func (b *testBundle) waitAnalysis(callID string, within time.Duration) map[string]any {
	b.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		a := b.must(200, "GET", "/v1/calls/"+callID+"/analysis", nil).data()
		if a["state"] != "pending" {
			return a
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("analysis of %s still pending after %s", callID, within)
	return nil
}

var isoDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// checkBookingCall asserts what a user would check after a booked call:
// the call ended completed, a two-sided transcript in order, and an
// analysis whose summary mentions the date, with the date in its data and
// success true.
func (b *testBundle) checkBookingCall(callID string) { b.checkBooked(callID, false) }

// checkBooked is checkBookingCall; a spoken call's transcript may hold
// more turns than the five of a text one (the assistant asked again for
// words the recognizer lost or misheard): it must still be gapless, open
// with the question and end with the goodbye, with the confirmation
// between.
func (b *testBundle) checkBooked(callID string, spoken bool) {
	t := b.t
	t.Helper()
	c := b.waitCall(b.key, callID, 15*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if c["outcome"] != "completed" || c["endedReason"] != "assistant-ended-call" {
		t.Errorf("call = %v/%v, want completed/assistant-ended-call", c["outcome"], c["endedReason"])
	}
	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	checkSeq(t, turns)
	var roles, texts []string
	for _, tr := range turns {
		roles = append(roles, tr["role"].(string))
		texts = append(texts, tr["text"].(string))
	}
	if !spoken && strings.Join(roles, ",") != "assistant,user,assistant,user,assistant" {
		t.Fatalf("transcript roles = %v, want assistant,user,assistant,user,assistant; texts %q", roles, texts)
	}
	n := len(texts)
	if n < 5 || !strings.Contains(texts[0], "What day would suit you?") || roles[n-1] != "assistant" || !strings.Contains(texts[n-1], "Goodbye") ||
		!slices.ContainsFunc(texts[1:n-1], func(s string) bool { return strings.Contains(s, "is that right?") }) {
		t.Fatalf("transcript %q (roles %v): want the question first, the confirmation, the goodbye last", texts, roles)
	}
	a := b.waitAnalysis(callID, 10*time.Second)
	t.Logf("transcript %q; analysis %v", texts, a)
	if a["state"] != "ready" {
		t.Fatalf("analysis = %v, want ready", a)
	}
	data, _ := a["structuredData"].(map[string]any)
	date, _ := data["date"].(string)
	if !isoDate.MatchString(date) {
		t.Fatalf("analysis structuredData = %v, want an ISO date", a["structuredData"])
	}
	when, _ := time.Parse("2006-01-02", date)
	summary, _ := a["summary"].(string)
	if !strings.Contains(summary, when.Format("January")) && !strings.Contains(summary, "Tuesday") {
		t.Errorf("analysis summary %q does not mention the date %s", summary, date)
	}
	if a["successEvaluation"] != true {
		t.Errorf("analysis successEvaluation = %v, want true", a["successEvaluation"])
	}
	if s, _ := a["sentiment"].(map[string]any); s["label"] == nil {
		t.Errorf("analysis sentiment = %v, want a label", a["sentiment"])
	}
}

// TestSandboxConversation: an outbound sandbox call and a scheduled one,
// to the default persona, each end with a two-sided transcript and a ready
// analysis; the analysis is announced by webhook.
func TestSandboxConversation(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		rec, srv := newReceiver(t, false)
		secret := b.must(201, "POST", "/v1/webhooks", map[string]any{"url": srv.URL, "events": []string{"call.analysis.ready"}}).data()["secret"].(string)
		asst := b.bookingAssistant(b.key)
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})

		direct := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": p, "phoneNumber": "+14155551234"}).Body["callId"].(string)
		b.checkBookingCall(direct)

		ct := b.must(201, "POST", "/v1/phone/contacts/"+p, map[string]any{"contacts": []any{map[string]any{"name": "Ada", "phoneNumber": "+14155552222"}}}).data()["created"].([]any)[0]
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": []any{ct}, "phone_id": p, "dates": []string{dueIn(time.Second)}, "timezone": "UTC", "callingHours": allDay}).Body["id"].(string)
		a, _ := b.waitDialed(sched, 10*time.Second)
		b.checkBookingCall(a["callId"].(string))

		got := rec.wait(t, "call.analysis.ready", 10*time.Second)
		if !strings.Contains(string(got.body), `"structuredData"`) {
			t.Errorf("call.analysis.ready body = %s, want the analysis", got.body)
		}
		if err := webhook.Verify([]string{secret}, got.header, got.body, time.Now(), 0); err != nil {
			t.Errorf("call.analysis.ready signature: %v", err)
		}
	})
}

// TestAnalysisSurvivesRestart: an analysis queued when a call ended is run
// by the next server even if the first one stopped before running it.
func TestAnalysisSurvivesRestart(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/ar.db")
	cfg.AnalysisEvery = time.Hour // this server never gets to it
	b := start(t, cfg)
	asst := b.bookingAssistant(b.key)
	callID, ws := b.dialWebCall(asst)
	ws.until(isTurnDone)
	ws.send(protocol.UserText{Text: "next tuesday"})
	ws.until(isTurnDone)
	ws.send(protocol.UserText{Text: "yes"})
	ws.until(isEnded)
	b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
	if a := b.must(200, "GET", "/v1/calls/"+callID+"/analysis", nil).data(); a["state"] != "pending" {
		t.Fatalf("analysis before restart = %v, want pending", a["state"])
	}
	b.cfg.AnalysisEvery = 100 * time.Millisecond
	b.restart()
	a := b.waitAnalysis(callID, 10*time.Second)
	if a["state"] != "ready" || a["successEvaluation"] != true {
		t.Errorf("analysis after restart = %v, want ready and successful", a)
	}
}

// TestFlowValidation: a broken flow is refused naming the node.
func TestFlowValidation(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+t.TempDir()+"/fv.db"))
	bad := map[string]any{"start": "greet", "nodes": map[string]any{
		"greet": map[string]any{"type": "say", "text": "Hi", "next": "ask"},
		"ask":   map[string]any{"type": "ask", "text": "Day?", "branches": []any{map[string]any{"match": map[string]any{"kind": "regex", "pattern": "("}, "next": "nowhere"}}},
		"lost":  map[string]any{"type": "end", "text": "Bye", "success": true},
	}}
	r := b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Broken", "model": map[string]any{"provider": "flow"}, "flow": bad})
	expectFields(t, r, 400, "flow.nodes.ask.branches[0].next", "flow.nodes.ask.branches[0].match.pattern", "flow.nodes.lost")
}

// checkSeq: a stored transcript's seq is 1, 2, 3 … without a gap
// (docs/api.md), every turn that reached the line being kept.
func checkSeq(t *testing.T, turns []map[string]any) {
	t.Helper()
	for i, tr := range turns {
		if seq, _ := tr["seq"].(float64); int(seq) != i+1 {
			var got []string
			for _, tr := range turns {
				got = append(got, fmt.Sprintf("%v %v %q interrupted=%v", tr["seq"], tr["role"], tr["text"], tr["interrupted"]))
			}
			t.Errorf("transcript seq has a gap at %d (want %d):\n%s", int(seq), i+1, strings.Join(got, "\n"))
			return
		}
	}
}
