package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// transcriptText is a call's transcript as "role: text" lines.
func (b *testBundle) transcriptText(callID string) string {
	b.t.Helper()
	var lines []string
	for _, m := range b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list() {
		role, _ := m["role"].(string)
		text, _ := m["text"].(string)
		lines = append(lines, role+": "+text)
	}
	return strings.Join(lines, "\n")
}

// dateIn is today's date in zone, read twice around f so that a test
// running across midnight accepts either day.
func datesIn(t *testing.T, zone string) []string {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	return []string{time.Now().In(loc).Format(time.DateOnly), time.Now().Add(time.Minute).In(loc).Format(time.DateOnly)}
}

// TestVariablesScheduledCampaign: one assistant, whose first message is a
// template, greets two scheduled contacts by name, in their own zones,
// and says the schedule's message; the calls keep the variables they ran
// with; a contact without a zone runs in the schedule's.
func TestVariablesScheduledCampaign(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		asst := b.must(201, "POST", "/v1/assistants", map[string]any{
			"name":         "Renewals",
			"firstMessage": "Hi {{contact.firstName | there}}, it is {{date}} in {{timezone}}. {{message}}",
		}).data()["id"].(string)
		num := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100", "provider": "sandbox"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": num, "outboundAssistantId": asst, "message": "the allocation's message"})
		created := b.must(201, "POST", "/v1/phone/contacts/"+num, map[string]any{"contacts": []any{
			map[string]any{"name": "Ada Lovelace", "phoneNumber": "+14155551234", "timezone": "Pacific/Kiritimati", "metadata": map[string]any{"plan": "gold"}},
			map[string]any{"name": "Grace Hopper", "phoneNumber": "+14155551235", "timezone": "Pacific/Pago_Pago"},
			map[string]any{"name": "", "phoneNumber": "+14155551236"},
		}}).data()["created"].([]any)
		var ids []string
		for _, c := range created {
			ids = append(ids, c.(string))
		}
		due := time.Now().Add(time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		sched := b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{
			"name": "renewals", "contacts_id": ids, "phone_id": num, "message": "Your plan renews soon.",
			"dates": []string{due}, "timezone": "Asia/Tokyo", "callingHours": allDay,
		}).Body["id"].(string)
		calls := b.scheduledCalls(sched, 30*time.Second)
		if len(calls) != 3 {
			t.Fatalf("schedule placed %d calls, want 3", len(calls))
		}
		want := map[string]struct{ greeting, zone, name string }{
			"+14155551234": {"Hi Ada, it is", "Pacific/Kiritimati", "Ada Lovelace"},
			"+14155551235": {"Hi Grace, it is", "Pacific/Pago_Pago", "Grace Hopper"},
			"+14155551236": {"Hi there, it is", "Asia/Tokyo", ""},
		}
		for _, c := range calls {
			to := c["to"].(string)
			w := want[to]
			text := b.transcriptText(c["id"].(string))
			first := strings.SplitN(text, "\n", 2)[0]
			dates := datesIn(t, w.zone)
			if !strings.HasPrefix(first, "assistant: "+w.greeting) || !strings.Contains(first, " in "+w.zone+". Your plan renews soon.") ||
				(!strings.Contains(first, dates[0]) && !strings.Contains(first, dates[1])) {
				t.Errorf("call to %s opened %q; want %q…, the date in %s (%v) and the schedule's message", to, first, w.greeting, w.zone, dates)
			}
			v, _ := c["variables"].(map[string]any)
			ct, _ := v["contact"].(map[string]any)
			cl, _ := v["call"].(map[string]any)
			if v["message"] != "Your plan renews soon." || v["timezone"] != w.zone || cl["id"] != c["id"] || cl["direction"] != "outbound" || cl["to"] != to {
				t.Errorf("call to %s variables = %v", to, v)
			}
			if ct["name"] != w.name || ct["phoneNumber"] != to {
				t.Errorf("call to %s variables.contact = %v, want %s", to, ct, w.name)
			}
			if to == "+14155551234" {
				if m, _ := ct["metadata"].(map[string]any); m["plan"] != "gold" {
					t.Errorf("variables.contact.metadata = %v, want the contact's", ct["metadata"])
				}
			}
			if _, ok := v["today"]; ok {
				t.Errorf("variables hold the clock (%v): it is not stored", v["today"])
			}
		}
	})
}

// TestVariablesOnRequest: a web call's and a direct phone call's own
// variables render in the first message and are kept on the call; the
// seed's message opens an outbound call whose assistant has none; bad
// variables and bad templates are 400s naming the field and change
// nothing.
func TestVariablesOnRequest(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		asst := b.must(201, "POST", "/v1/assistants", map[string]any{
			"name": "Plans", "firstMessage": "Your {{plan | basic}} plan, order {{order.id}}.",
		}).data()["id"].(string)

		// A web call: typed, so the first message is the first frame's answer.
		r := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst, "variables": map[string]any{"plan": "gold", "order": map[string]any{"id": "A-1042"}}})
		web := r.Body["callId"].(string)
		got := b.must(200, "GET", "/v1/calls/"+web, nil).data()["variables"].(map[string]any)
		if got["plan"] != "gold" || got["timezone"] != "UTC" || got["call"].(map[string]any)["type"] != "web" {
			t.Errorf("web call variables = %v", got)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		conn, _, err := websocket.Dial(ctx, r.Body["gateway"].(map[string]any)["url"].(string), nil)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		ws := &wsClient{t: t, conn: conn}
		if first := turnText(t, ws.until(isTurnDone)); first != "Your gold plan, order A-1042." {
			t.Errorf("web call's first message = %q, want the rendered template", first)
		}
		conn.CloseNow()

		// A direct phone call to a contact: the contact's variables too,
		// and the allocation's message opens it (its assistant has no
		// first message).
		quiet := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Quiet"}).data()["id"].(string)
		num := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100", "provider": "sandbox"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": num, "outboundAssistantId": quiet, "message": "Hello from the front desk."})
		b.must(201, "POST", "/v1/phone/contacts/"+num, map[string]any{"contacts": []any{map[string]any{"name": "Ada Lovelace", "phoneNumber": "+14155551234", "timezone": "Europe/London"}}})
		pc := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": num, "phoneNumber": "+14155551234", "variables": map[string]any{"plan": "silver"}}).Body["callId"].(string)
		b.waitCall(b.key, pc, 20*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		pv := b.must(200, "GET", "/v1/calls/"+pc, nil).data()["variables"].(map[string]any)
		if pv["plan"] != "silver" || pv["message"] != "Hello from the front desk." || pv["timezone"] != "Europe/London" || pv["contact"].(map[string]any)["firstName"] != "Ada" {
			t.Errorf("direct phone call variables = %v", pv)
		}
		if text := b.transcriptText(pc); !strings.HasPrefix(text, "assistant: Hello from the front desk.") {
			t.Errorf("direct call transcript = %q, want the allocation's message first", text)
		}

		// Refusals name the field and change nothing.
		before := b.must(200, "GET", "/v1/calls?pageSize=100", nil).Body["pagination"].(map[string]any)["total"]
		for _, tc := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"assistantId": asst, "variables": map[string]any{"call": "x"}}, "variables.call"},
			{map[string]any{"assistantId": asst, "variables": map[string]any{"first-name": "x"}}, "variables.first-name"},
			{map[string]any{"assistantId": asst, "variables": []any{1}}, "variables"},
			{map[string]any{"assistantId": asst, "variables": map[string]any{"big": strings.Repeat("x", 9000)}}, "variables"},
		} {
			r := b.req("POST", "/v1/calls/initiate", b.key, tc.body)
			if r.Status != 400 || !strings.Contains(string(r.Raw), `"field":"`+tc.field+`"`) {
				t.Errorf("initiate with %v = %d %s, want 400 naming %s", tc.body["variables"], r.Status, r.Raw, tc.field)
			}
		}
		r = b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": num, "phoneNumber": "+14155551234", "variables": map[string]any{"contact": 1}})
		if r.Status != 400 || !strings.Contains(string(r.Raw), `"field":"variables.contact"`) {
			t.Errorf("phone initiate with a reserved variable = %d %s, want 400 naming variables.contact", r.Status, r.Raw)
		}
		if after := b.must(200, "GET", "/v1/calls?pageSize=100", nil).Body["pagination"].(map[string]any)["total"]; after != before {
			t.Errorf("refused requests changed the calls: total %v → %v", before, after)
		}
		for field, body := range map[string]map[string]any{
			"firstMessage":                     {"name": "x", "firstMessage": "Hi {{contact.name"},
			"systemPrompt":                     {"name": "x", "systemPrompt": "Be {{ }}", "model": map[string]any{"provider": "flow"}},
			"transfer.destinations[0].message": {"name": "x", "transfer": map[string]any{"destinations": []any{map[string]any{"destination": "+14155550199", "message": "{{1x}}"}}}},
			"voicemail.message":                {"name": "x", "voicemail": map[string]any{"detect": true, "action": "leaveMessage", "message": "Hi {{a..b}}"}},
		} {
			r := b.req("POST", "/v1/assistants", b.key, body)
			if r.Status != 400 || !strings.Contains(string(r.Raw), `"field":"`+field+`"`) || !strings.Contains(string(r.Raw), "template byte") {
				t.Errorf("assistant with a bad template in %s = %d %s, want 400 naming it", field, r.Status, r.Raw)
			}
		}
	})
}
