package app

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/gateway/protocol"
	"switchboard/internal/id"
)

// hostileIDs are path ids no id of the service can be: PostgreSQL refuses NUL
// and invalid UTF-8 in a query, SQLite stores them; both must answer 404
// before any query.
var hostileIDs = map[string]string{
	"NUL":               "x\x00y",
	"invalid UTF-8":     "\xff\xfe",
	"UTF-8 surrogate":   "\xed\xa0\x80",
	"prefix and NUL":    "asst_" + strings.Repeat("a", 25) + "\x00",
	"too short":         "asst_abc",
	"upper case":        "ASST_" + strings.Repeat("A", 26),
	"non-base32 digits": "call_" + strings.Repeat("1", 26),
}

// hostileFixture is an organization with every kind of resource an id route names.
type hostileFixture struct {
	fixture
	schedule, webhook string
}

func (b *testBundle) hostileFixture() hostileFixture {
	b.t.Helper()
	f := hostileFixture{fixture: b.fixture(b.key, "+14155550100", "+14155551234", "+14155551235")}
	f.schedule = b.must(201, "POST", "/v1/phone/schedule-call", map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": f.purchase,
		"dates": []string{dueIn(time.Hour)}, "timezone": "UTC"}).Body["id"].(string)
	f.webhook = b.must(201, "POST", "/v1/webhooks", map[string]any{"url": "http://127.0.0.1:9/hooks", "events": []string{"call.ended"}}).data()["id"].(string)
	return f
}

// state is everything the organization has, as the API shows it, to check
// that a rejected request changed nothing.
func (b *testBundle) state(f hostileFixture) string {
	b.t.Helper()
	var sb strings.Builder
	for _, path := range []string{"/v1/assistants", "/v1/assistants/" + f.assistant, "/v1/phone/purchases", "/v1/phone/contacts/" + f.purchase + "?pageSize=100",
		"/v1/calls", "/v1/phone/schedules", "/v1/phone/schedules/" + f.schedule, "/v1/webhooks", "/v1/webhooks/" + f.webhook + "/deliveries"} {
		r := b.must(200, "GET", path, nil)
		d, _ := json.Marshal(r.Body["data"])
		fmt.Fprintf(&sb, "%s: %s %v\n", path, d, r.Body["pagination"])
	}
	return sb.String()
}

// expectRejected checks a 4xx error body: status, code, a request id, and
// error.fields exactly fields (in any order).
func expectRejected(t *testing.T, what string, r resp, status int, code string, fields ...string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s = %d, want %d; body %s", what, r.Status, status, r.Raw)
		return
	}
	if r.code() != code || r.Body["status"] != false || r.Body["requestId"] == "" || r.Body["requestId"] == nil {
		t.Errorf("%s: body %s, want status false, code %s and a requestId", what, r.Raw, code)
	}
	got := r.fieldNames()
	if len(got) != len(fields) {
		t.Errorf("%s: error.fields = %q, want %q; body %s", what, got, fields, r.Raw)
		return
	}
	for _, f := range fields {
		found := false
		for _, g := range got {
			found = found || g == f
		}
		if !found {
			t.Errorf("%s: error.fields = %q, want %q; body %s", what, got, fields, r.Raw)
		}
	}
}

// TestHostilePathIDs: on every id route, a path id that cannot be an id is
// the same 404 as an unknown id, on both stores, and changes nothing. That
// no query is made for it (SQLite would answer the same 404 after one) is
// httpapi's TestMalformedIDsCostNoQuery.
func TestHostilePathIDs(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.hostileFixture()
		before := b.state(f)

		contactsJSON := map[string]any{"contacts": []any{map[string]any{"phoneNumber": "+14155559999"}}}
		routes := []struct {
			method string
			path   func(bad string) string
			prefix string // of the id the bad value replaces
			body   any
			csv    bool
		}{
			{"GET", func(x string) string { return "/v1/calls/" + x }, id.Call, nil, false},
			{"GET", func(x string) string { return "/v1/calls/" + x + "/transcripts" }, id.Call, nil, false},
			{"GET", func(x string) string { return "/v1/calls/" + x + "/analysis" }, id.Call, nil, false},
			{"POST", func(x string) string { return "/v1/calls/" + x + "/end" }, id.Call, nil, false},
			{"POST", func(x string) string { return "/v1/calls/" + x + "/say" }, id.Call, map[string]any{"text": "hello"}, false},
			{"POST", func(x string) string { return "/v1/calls/" + x + "/transfer" }, id.Call, map[string]any{"destination": "+14155550123"}, false},
			{"GET", func(x string) string { return "/v1/phone/connections/" + x }, id.Connection, nil, false},
			{"DELETE", func(x string) string { return "/v1/phone/connections/" + x }, id.Connection, nil, false},
			{"DELETE", func(x string) string { return "/v1/phone/purchases/" + x }, id.Purchase, nil, false},
			{"GET", func(x string) string { return "/v1/phone/contacts/" + x }, id.Purchase, nil, false},
			{"POST", func(x string) string { return "/v1/phone/contacts/" + x }, id.Purchase, contactsJSON, false},
			{"POST", func(x string) string { return "/v1/phone/contacts/" + x }, id.Purchase, "name,phoneNumber\nA,+14155559999\n", true},
			{"DELETE", func(x string) string { return "/v1/phone/contacts/" + x + "/" + f.contacts[0] }, id.Purchase, nil, false},
			{"DELETE", func(x string) string { return "/v1/phone/contacts/" + f.purchase + "/" + x }, id.Contact, nil, false},
			{"GET", func(x string) string { return "/v1/phone/schedules/" + x }, id.Schedule, nil, false},
			{"POST", func(x string) string { return "/v1/phone/schedules/" + x + "/cancel" }, id.Schedule, nil, false},
			{"GET", func(x string) string { return "/v1/assistants/" + x }, id.Assistant, nil, false},
			{"PATCH", func(x string) string { return "/v1/assistants/" + x }, id.Assistant, map[string]any{"name": "renamed"}, false},
			{"DELETE", func(x string) string { return "/v1/assistants/" + x }, id.Assistant, nil, false},
			{"DELETE", func(x string) string { return "/v1/webhooks/" + x }, id.Webhook, nil, false},
			{"POST", func(x string) string { return "/v1/webhooks/" + x + "/rotate-secret" }, id.Webhook, nil, false},
			{"GET", func(x string) string { return "/v1/webhooks/" + x + "/deliveries" }, id.Webhook, nil, false},
			{"POST", func(x string) string { return "/v1/webhooks/" + x + "/deliveries/" + id.New("msg") + "/redeliver" }, id.Webhook, nil, false},
			{"POST", func(x string) string { return "/v1/webhooks/" + f.webhook + "/deliveries/" + x + "/redeliver" }, "msg", nil, false},
		}
		for _, rt := range routes {
			send := func(path string) resp {
				if rt.csv {
					return b.req(rt.method, path, b.key, rt.body, "Content-Type", "text/csv")
				}
				return b.req(rt.method, path, b.key, rt.body)
			}
			unknown := send(rt.path(id.New(rt.prefix)))
			expectRejected(t, rt.method+" "+rt.path("<unknown "+rt.prefix+" id>"), unknown, 404, "not_found")
			for name, bad := range hostileIDs {
				what := rt.method + " " + rt.path("<"+name+">")
				r := send(rt.path(url.PathEscape(bad)))
				expectRejected(t, what, r, 404, "not_found")
				if r.Status == 404 && r.Body["message"] != unknown.Body["message"] {
					t.Errorf("%s: message %q, want the unknown id's %q", what, r.Body["message"], unknown.Body["message"])
				}
			}
		}
		if after := b.state(f); after != before {
			t.Errorf("state changed by rejected requests:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// TestHostileBodyIDs: an id in a body that names nothing of the
// organization, well-formed or not, is a 404 naming the field.
func TestHostileBodyIDs(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.hostileFixture()
		before := b.state(f)
		due := dueIn(time.Hour)
		for _, unknown := range []struct{ what, purchase, assistant, contact string }{
			{"unknown", id.New(id.Purchase), id.New(id.Assistant), id.New(id.Contact)},
			{"malformed", "pn_nope", "asst-" + strings.Repeat("a", 26), "ct_" + strings.Repeat("a", 27)},
		} {
			r := b.req("POST", "/v1/calls/phone/initiate", b.key, map[string]any{"phone_purchase_id": unknown.purchase, "phoneNumber": "+14155551234"})
			expectRejected(t, unknown.what+" phone_purchase_id", r, 404, "not_found", "phone_purchase_id")

			r = b.req("POST", "/v1/phone/schedule-call", b.key, map[string]any{"name": "s", "contacts_id": f.contacts, "phone_id": unknown.purchase, "dates": []string{due}, "timezone": "UTC"})
			expectRejected(t, unknown.what+" phone_id", r, 404, "not_found", "phone_id")
			r = b.req("POST", "/v1/phone/schedule-call", b.key, map[string]any{"name": "s", "contacts_id": []string{f.contacts[0], unknown.contact}, "phone_id": f.purchase, "dates": []string{due}, "timezone": "UTC"})
			expectRejected(t, unknown.what+" contacts_id", r, 404, "not_found", "contacts_id[1]")

			r = b.req("POST", "/v1/phone/allocate-assistant", b.key, map[string]any{"id": unknown.purchase, "message": "hi"})
			expectRejected(t, unknown.what+" allocation id", r, 404, "not_found", "id")
			r = b.req("POST", "/v1/phone/allocate-assistant", b.key, map[string]any{"id": f.purchase, "inboundAssistantId": unknown.assistant, "outboundAssistantId": unknown.assistant})
			expectRejected(t, unknown.what+" allocated assistants", r, 404, "not_found", "inboundAssistantId", "outboundAssistantId")

			// The contract lists no 404 for web call initiation: an unknown
			// assistant is a 400 on assistantId (docs/api.md).
			r = b.req("POST", "/v1/calls/initiate", b.key, map[string]any{"assistantId": unknown.assistant})
			expectRejected(t, unknown.what+" assistantId", r, 400, "invalid_request", "assistantId")
		}
		if after := b.state(f); after != before {
			t.Errorf("state changed by rejected requests:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// TestHostileText: text the store cannot keep as sent (NUL, invalid UTF-8,
// lone surrogates), duplicate keys and numbers that are not E.164 are a 400
// naming the field, on both stores, and change nothing.
func TestHostileText(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		f := b.hostileFixture()
		before := b.state(f)
		contacts := "/v1/phone/contacts/" + f.purchase
		flow := func(text string) string {
			return `{"name":"F","model":{"provider":"flow"},"flow":{"start":"greet","nodes":{"greet":{"type":"end","text":"` + text + `","success":true}}}}`
		}
		cases := []struct {
			what, method, path, body string
			csv                      bool
			fields                   []string
		}{
			{"escaped NUL", "POST", "/v1/assistants", `{"name":"a\u0000b"}`, false, []string{"name"}},
			{"raw NUL", "POST", "/v1/assistants", "{\"name\":\"a\x00b\"}", false, []string{"name"}},
			{"invalid UTF-8", "POST", "/v1/assistants", "{\"name\":\"a\xffb\"}", false, []string{"name"}},
			{"UTF-8 encoded surrogate", "POST", "/v1/assistants", "{\"name\":\"a\xed\xa0\x80b\"}", false, []string{"name"}},
			{"lone high surrogate", "POST", "/v1/assistants", `{"name":"\ud800"}`, false, []string{"name"}},
			{"lone low surrogate", "POST", "/v1/assistants", `{"name":"x\udc00y"}`, false, []string{"name"}},
			{"reversed pair", "POST", "/v1/assistants", `{"name":"\ude00\ud83d"}`, false, []string{"name"}},
			{"duplicate key", "POST", "/v1/assistants", `{"name":"a","name":"b"}`, false, []string{"name"}},
			{"duplicate key, escaped", "POST", "/v1/assistants", `{"name":"a","n\u0061me":"b"}`, false, []string{"name"}},
			{"flow text", "POST", "/v1/assistants", flow(`hi\u0000`), false, []string{"flow.nodes.greet.text"}},
			{"flow node key", "POST", "/v1/assistants", `{"name":"F","model":{"provider":"flow"},"flow":{"start":"greet","nodes":{"gr\u0000eet":{"type":"end","text":"x","success":true}}}}`, false, []string{"flow.nodes"}},
			{"duplicate flow node", "POST", "/v1/assistants", `{"name":"F","model":{"provider":"flow"},"flow":{"start":"greet","nodes":{"greet":{"type":"end","text":"a"},"greet":{"type":"end","text":"b"}}}}`, false, []string{"flow.nodes.greet"}},
			{"end call phrase", "POST", "/v1/assistants", "{\"name\":\"x\",\"endCallPhrases\":[\"bye\",\"\xc3\x28\"]}", false, []string{"endCallPhrases[1]"}},
			{"tool description", "POST", "/v1/assistants", `{"name":"x","tools":[{"name":"t","url":"http://127.0.0.1:9/t","description":"\udfff"}]}`, false, []string{"tools[0].description"}},
			{"tool parameters", "POST", "/v1/assistants", `{"name":"x","tools":[{"name":"t","url":"http://127.0.0.1:9/t","parameters":{"type":"object","properties":{"q":{"type":"string","description":"a\u0000"}}}}]}`, false, []string{"tools[0].parameters.properties.q.description"}},
			{"schema key", "POST", "/v1/assistants", `{"name":"x","analysisPlan":{"structuredDataSchema":{"type":"object","properties":{"a\u0000":{"type":"string"}}}}}`, false, []string{"analysisPlan.structuredDataSchema.properties"}},
			{"summary prompt", "POST", "/v1/assistants", `{"name":"x","analysisPlan":{"summaryPrompt":"\u0000"}}`, false, []string{"analysisPlan.summaryPrompt"}},
			{"several at once", "POST", "/v1/assistants", `{"name":"\u0000","firstMessage":"\ud800","systemPrompt":"ok","systemPrompt":"again"}`, false, []string{"name", "firstMessage", "systemPrompt"}},
			{"root key", "POST", "/v1/assistants", `{"name":"x","\u0000":1}`, false, []string{"body"}},
			{"PATCH name", "PATCH", "/v1/assistants/" + f.assistant, `{"name":"a\u0000"}`, false, []string{"name"}},
			{"PATCH duplicate", "PATCH", "/v1/assistants/" + f.assistant, `{"name":"a","name":"b"}`, false, []string{"name"}},
			{"contact name", "POST", contacts, `{"contacts":[{"phoneNumber":"+14155552001"},{"phoneNumber":"+14155552002"},{"phoneNumber":"+14155552003","name":"C\u0000"}]}`, false, []string{"contacts[2].name"}},
			{"contact metadata value", "POST", contacts, "{\"contacts\":[{\"phoneNumber\":\"+14155552001\",\"metadata\":{\"note\":\"\xff\"}}]}", false, []string{"contacts[0].metadata.note"}},
			{"contact metadata key", "POST", contacts, `{"contacts":[{"phoneNumber":"+14155552001","metadata":{"n\u0000":"x"}}]}`, false, []string{"contacts[0].metadata"}},
			{"contact duplicate key", "POST", contacts, `{"contacts":[{"phoneNumber":"+14155552001","phoneNumber":"+14155552002"}]}`, false, []string{"contacts[0].phoneNumber"}},
			{"CSV name", "POST", contacts, "name,phoneNumber\nA,+14155552001\nB\x00,+14155552002\n", true, []string{"rows[3].name"}},
			{"CSV metadata column", "POST", contacts, "name,phoneNumber,Company\nA,+14155552001,\xffAcme\n", true, []string{"rows[2].Company"}},
			{"CSV phone", "POST", contacts, "name,phoneNumber\nA,+1415555\x002001\n", true, []string{"rows[2].phoneNumber"}},
			{"CSV header", "POST", contacts, "name,phoneNumber,C\x00\nA,+14155552001,x\n", true, []string{"header"}},
			{"schedule name", "POST", "/v1/phone/schedule-call", `{"name":"s\u0000","contacts_id":["` + f.contacts[0] + `"],"phone_id":"` + f.purchase + `","dates":["` + dueIn(time.Hour) + `"],"timezone":"UTC"}`, false, []string{"name"}},
			{"schedule message", "POST", "/v1/phone/schedule-call", "{\"name\":\"s\",\"message\":\"\xfe\",\"contacts_id\":[\"" + f.contacts[0] + "\"],\"phone_id\":\"" + f.purchase + "\",\"dates\":[\"" + dueIn(time.Hour) + "\"],\"timezone\":\"UTC\"}", false, []string{"message"}},
			{"schedule contact id", "POST", "/v1/phone/schedule-call", `{"name":"s","contacts_id":["ct_\u0000"],"phone_id":"` + f.purchase + `","dates":["` + dueIn(time.Hour) + `"],"timezone":"UTC"}`, false, []string{"contacts_id[0]"}},
			{"allocation message", "POST", "/v1/phone/allocate-assistant", `{"id":"` + f.purchase + `","message":"hi\u0000"}`, false, []string{"message"}},
			{"allocation id", "POST", "/v1/phone/allocate-assistant", `{"id":"pn_\u0000","message":"hi"}`, false, []string{"id"}},
			{"phone purchase id", "POST", "/v1/calls/phone/initiate", `{"phone_purchase_id":"` + f.purchase + `\u0000","phoneNumber":"+14155551234"}`, false, []string{"phone_purchase_id"}},
			{"web call assistant", "POST", "/v1/calls/initiate", "{\"assistantId\":\"\xff\"}", false, []string{"assistantId"}},
			{"webhook url", "POST", "/v1/webhooks", `{"url":"http://127.0.0.1:9/\u0000","events":["call.ended"]}`, false, []string{"url"}},
			{"connection name", "POST", "/v1/phone/connections", `{"provider":"sip","name":"T\u0000","sip":{"address":"sip.example.com","numbers":["+16175550100"]}}`, false, []string{"name"}},
			{"connection password", "POST", "/v1/phone/connections", "{\"provider\":\"sip\",\"name\":\"T\",\"sip\":{\"address\":\"sip.example.com\",\"username\":\"u\",\"password\":\"p\xff\",\"numbers\":[\"+16175550100\"]}}", false, []string{"sip.password"}},
			{"connection number", "POST", "/v1/phone/connections", `{"provider":"sip","name":"T","sip":{"address":"sip.example.com","numbers":["+16175550100","+1617555\u00000101"]}}`, false, []string{"sip.numbers[1]"}},
			{"say text", "POST", "/v1/calls/" + id.New(id.Call) + "/say", `{"text":"hi\ud800"}`, false, []string{"text"}},
			{"transfer destination", "POST", "/v1/calls/" + id.New(id.Call) + "/transfer", `{"destination":"sip:a\u0000@host"}`, false, []string{"destination"}},
			{"cancel body", "POST", "/v1/phone/schedules/" + f.schedule + "/cancel", `{"\u0000":1}`, false, []string{"body"}},
			{"double plus", "POST", "/v1/calls/phone/initiate", `{"phone_purchase_id":"` + f.purchase + `","phoneNumber":"++14155550123"}`, false, []string{"phoneNumber"}},
			{"extension", "POST", "/v1/calls/phone/initiate", `{"phone_purchase_id":"` + f.purchase + `","phoneNumber":"+14155550123x"}`, false, []string{"phoneNumber"}},
			{"letters", "POST", "/v1/phone/purchases", `{"number":"+1415555O1OO"}`, false, []string{"number"}},
			{"contact double plus", "POST", contacts, `{"contacts":[{"phoneNumber":"++14155550123"},{"phoneNumber":"+14155550123 ext. 2"}]}`, false, []string{"contacts[0].phoneNumber", "contacts[1].phoneNumber"}},
			{"CSV extension", "POST", contacts, "name,phoneNumber\nA,+14155550123x\n", true, []string{"rows[2].phoneNumber"}},
		}
		for _, c := range cases {
			var r resp
			if c.csv {
				r = b.req(c.method, c.path, b.key, c.body, "Content-Type", "text/csv")
			} else {
				r = b.req(c.method, c.path, b.key, c.body)
			}
			expectRejected(t, c.what, r, 400, "invalid_request", c.fields...)
		}

		// Query parameters that reach queries.
		for _, q := range []struct{ query, field string }{
			{"direction=inbound%00", "direction"},
			{"type=web%00", "type"}, {"status=%ff", "status"}, {"createdAfter=2026-01-01%00", "createdAfter"},
			{"page=1%00", "page"}, {"pageSize=%ed%a0%80", "pageSize"},
		} {
			expectRejected(t, "GET /v1/calls?"+q.query, b.req("GET", "/v1/calls?"+q.query, b.key, nil), 400, "invalid_request", q.field)
		}
		expectRejected(t, "GET /v1/phone/numbers?provider=%00", b.req("GET", "/v1/phone/numbers?provider=%00", b.key, nil), 400, "invalid_request", "provider")
		// An API key with bytes no key has is a 401, like any unknown key.
		expectRejected(t, "X-API-Key with invalid UTF-8", b.req("GET", "/v1/calls", "sbk_"+strings.Repeat("\xff", 16)+"_"+strings.Repeat("a", 32), nil), 401, "unauthenticated")

		if after := b.state(f); after != before {
			t.Errorf("state changed by rejected requests:\nbefore %s\nafter  %s", before, after)
		}

		// What the checks must let through: a surrogate pair, other
		// escapes, text in every script, and spaced or punctuated numbers.
		r := b.must(200, "PATCH", "/v1/assistants/"+f.assistant, `{"name":"Ada \ud83d\ude00 \u00e9\t\"q\" Ω 日本"}`)
		if got := r.data()["name"]; got != "Ada 😀 é\t\"q\" Ω 日本" {
			t.Errorf("PATCH name with escapes = %q, want %q", got, "Ada 😀 é\t\"q\" Ω 日本")
		}
		r = b.must(201, "POST", contacts, `{"contacts":[{"phoneNumber":"+1 (415) 555-2001"},{"phoneNumber":" +1 415 555 2002 "}]}`)
		if n := len(r.data()["created"].([]any)); n != 2 {
			t.Errorf("contacts with spaced numbers: created %d, want 2: %s", n, r.Raw)
		}
	})
}

// TestHostileGatewayText: the gateway follows the REST API's text rules. A
// user.text frame whose text holds an escaped NUL or a lone surrogate (both
// were accepted: the NUL turn then failed to insert on PostgreSQL and
// vanished from the transcript, the surrogate became U+FFFD) is refused
// with an error event naming the field, the call goes on, and the
// transcript holds exactly the turns the client was answered for.
func TestHostileGatewayText(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		callID, ws := b.dialWebCall(b.bookingAssistant(b.key))
		ws.until(isTurnDone) // the greeting
		for _, frame := range []string{
			`{"type":"user.text","text":"next\u0000tuesday"}`,
			`{"type":"user.text","text":"next \ud800 tuesday"}`,
			"{\"type\":\"user.text\",\"text\":\"next \xff tuesday\"}",
			`{"type":"user.text","text":"next","text":"tuesday"}`,
		} {
			if err := ws.conn.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
				t.Fatal(err)
			}
			evs := ws.until(func(ev protocol.ServerEvent) bool { return isError(ev) || isTurnDone(ev) || isEnded(ev) })
			e, ok := evs[len(evs)-1].(protocol.ErrorEvent)
			if !ok || e.Code != protocol.CodeInvalidField || e.Field != "text" || e.Fatal || !strings.Contains(e.Message, `"text"`) {
				t.Errorf("frame %q: got %#v, want a non-fatal invalid_field error naming \"text\"", frame, evs[len(evs)-1])
			}
		}
		ws.send(protocol.UserText{Text: "next tuesday"})
		if txt := turnText(t, ws.until(isTurnDone)); !strings.Contains(txt, "is that right?") {
			t.Errorf("after refused frames the call answered %q, want the flow to go on", txt)
		}
		ws.send(protocol.Hangup{})
		ws.until(isEnded)
		b.waitCall(b.key, callID, 5*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		var got []string
		for _, turn := range b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list() {
			got = append(got, fmt.Sprintf("%v", turn["role"]))
			if turn["role"] == "user" {
				got[len(got)-1] += ": " + fmt.Sprint(turn["text"])
			}
		}
		if want := []string{"assistant", "user: next tuesday", "assistant"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("transcript = %q, want %q (no turn of a refused frame, none missing)", got, want)
		}
	})
}

// TestOpenAPIServersIsPublicURL: the served OpenAPI document names this
// server's own base URL, whatever --public-url is.
func TestOpenAPIServersIsPublicURL(t *testing.T) {
	t.Parallel()
	servers := func(b *testBundle) any {
		r := b.req("GET", "/v1/openapi.json", "", nil)
		if r.Status != 200 {
			t.Fatalf("GET /v1/openapi.json = %d", r.Status)
		}
		return r.Body["servers"]
	}
	cfg := testConfig("sqlite:" + t.TempDir() + "/oa.db")
	cfg.PublicURL = "https://voice.example.com/switchboard/"
	b := start(t, cfg)
	want := []any{map[string]any{"url": "https://voice.example.com/switchboard", "description": "This server (its public URL)."}}
	if got := servers(b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("servers with --public-url %s = %v, want %v", cfg.PublicURL, got, want)
	}
	b.stop()

	cfg = testConfig("sqlite:" + t.TempDir() + "/oa2.db")
	b = start(t, cfg)
	want = []any{map[string]any{"url": b.m.URL(), "description": "This server (its public URL)."}}
	if got := servers(b); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("servers without --public-url = %v, want %v", got, want)
	}
}
