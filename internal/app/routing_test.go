package app

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/sip/siptest"
	"switchboard/internal/webhook"
)

// routingReceiver is an organization's routing endpoint on loopback: it
// checks each question's signature and answers as its mode says.
type routingReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	answer func(w http.ResponseWriter) // the mode
	asked  []map[string]any            // the questions' data, verified
	bad    []string                    // signatures that did not verify
}

func newRoutingReceiver(t *testing.T) *routingReceiver {
	rr := &routingReceiver{}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rr.mu.Lock()
		secret, answer := rr.secret, rr.answer
		if err := webhook.Verify([]string{secret}, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			rr.bad = append(rr.bad, err.Error())
		}
		var q struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		_ = json.Unmarshal(body, &q)
		if q.Type != "assistant.request" {
			rr.bad = append(rr.bad, "type "+q.Type)
		}
		rr.asked = append(rr.asked, q.Data)
		rr.mu.Unlock()
		answer(w)
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

func (rr *routingReceiver) mode(f func(w http.ResponseWriter)) {
	rr.mu.Lock()
	rr.answer = f
	rr.mu.Unlock()
}

func answerJSON(body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	}
}

// TestRoutingInboundSIP: an inbound SIP call is routed by the
// organization's endpoint (another assistant, an overridden first message
// and variables), falls back to the number's allocated assistant on a
// timeout, a failure, a redirect, a hostile answer or another
// organization's assistant (and records why), and is refused busy (486)
// or forwarded (302) without storing a call. Every question is signed.
func TestRoutingInboundSIP(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	for name, mk := range databases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startSIP(t, mk(t), "127.0.0.1:5099", []string{"127.0.0.1/32"}, true)
			var allocated string
			for _, p := range b.must(200, "GET", "/v1/phone/purchases", nil).list() {
				if p["id"] == b.purchase {
					allocated, _ = p["inboundAssistantId"].(string)
				}
			}
			routed := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Billing", "firstMessage": "Billing here."}).data()["id"].(string)
			otherOrg := b.otherOrgAssistant()
			rr := newRoutingReceiver(t)
			r := b.must(200, "PATCH", "/v1/organization", map[string]any{"assistantRequest": map[string]any{"url": rr.srv.URL + "/route", "timeoutMs": 400}})
			ar := r.data()["assistantRequest"].(map[string]any)
			rr.mu.Lock()
			rr.secret, _ = ar["secret"].(string)
			rr.mu.Unlock()
			if !strings.HasPrefix(rr.secret, "whsec_") || ar["timeoutMs"] != 400.0 {
				t.Fatalf("PATCH assistantRequest answered %v, want the endpoint with its secret", ar)
			}
			if g := b.must(200, "GET", "/v1/organization", nil).data()["assistantRequest"].(map[string]any); g["secret"] != nil || g["url"] != rr.srv.URL+"/route" {
				t.Errorf("GET /v1/organization assistantRequest = %v, want the URL and no secret", g)
			}

			// dial places one answered call (SIPp's UAC hangs up at once)
			// and returns it as the API shows it.
			seen := map[string]bool{}
			dial := func(what string) map[string]any {
				t.Helper()
				siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UAC, Remote: b.sipAddr, Service: b.number}).WaitOK()
				for _, c := range b.must(200, "GET", "/v1/calls?direction=inbound&pageSize=100", nil).list() {
					if id := c["id"].(string); !seen[id] {
						seen[id] = true
						return b.must(200, "GET", "/v1/calls/"+id, nil).data()
					}
				}
				t.Fatalf("%s: no new inbound call", what)
				return nil
			}
			fallback := func(what, reason string) {
				t.Helper()
				c := dial(what)
				rt, _ := c["routing"].(map[string]any)
				if c["assistantId"] != allocated || rt["source"] != "fallback" || !strings.Contains(rt["reason"].(string), reason) {
					t.Errorf("%s: call assistant %v routing %v, want the allocated %s and a fallback for %q", what, c["assistantId"], rt, allocated, reason)
				}
			}

			rr.mode(answerJSON(`{"assistantId":"` + routed + `","assistantOverrides":{"firstMessage":"Hi {{tier}} member."},"variables":{"tier":"gold"}}`))
			c := dial("routed")
			rt, _ := c["routing"].(map[string]any)
			v, _ := c["variables"].(map[string]any)
			if c["assistantId"] != routed || rt["source"] != "webhook" || rt["firstMessage"] != "Hi {{tier}} member." || v["tier"] != "gold" {
				t.Errorf("routed call = assistant %v, routing %v, variables %v; want %s by the webhook with its override and variables", c["assistantId"], rt, v, routed)
			}
			rr.mu.Lock()
			q := rr.asked[len(rr.asked)-1]
			rr.mu.Unlock()
			if q["callId"] != c["id"] || q["to"] != b.number || q["phonePurchaseId"] != b.purchase || q["provider"] != "sip" || q["assistantId"] != allocated || q["doNotCall"] != false {
				t.Errorf("question = %v, want the call's id, number, purchase, provider, allocated assistant and do-not-call status", q)
			}

			rr.mode(func(w http.ResponseWriter) {
				time.Sleep(time.Second)
				io.WriteString(w, `{"assistantId":"`+routed+`"}`)
			})
			fallback("slow", "timeout")
			rr.mode(func(w http.ResponseWriter) { w.WriteHeader(500) })
			fallback("failing", "status 500")
			rr.mode(func(w http.ResponseWriter) {
				w.Header().Set("Location", "http://169.254.169.254/")
				w.WriteHeader(302)
			})
			fallback("redirecting", "status 302")
			rr.mode(answerJSON(`{"assistantId": "` + routed + `", "x": ` + strings.Repeat(`"aaaaaaaaaa",`, 7000) + `1}`))
			fallback("huge", "invalid answer")
			rr.mode(answerJSON(`{"assistantId": `))
			fallback("invalid JSON", "invalid answer")
			rr.mode(answerJSON(`{"assistantId":"` + otherOrg + `"}`))
			fallback("another organization's assistant", "unknown assistant "+otherOrg)

			before := len(b.must(200, "GET", "/v1/calls?pageSize=100", nil).list())
			rr.mode(answerJSON(`{"refuse":"busy"}`))
			siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACExpect, Remote: b.sipAddr, Service: b.number, Keys: map[string]string{"code": "486"}}).WaitOK()
			rr.mode(answerJSON(`{"forward":"+1 (415) 555-0199"}`))
			siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACExpect, Remote: b.sipAddr, Service: b.number, Keys: map[string]string{"code": "302"}}).WaitOK()
			if after := len(b.must(200, "GET", "/v1/calls?pageSize=100", nil).list()); after != before {
				t.Errorf("refused and forwarded calls stored %d calls, want none", after-before)
			}
			rr.mu.Lock()
			if len(rr.bad) > 0 {
				t.Errorf("questions that did not verify: %v", rr.bad)
			}
			rr.mu.Unlock()

			// Removed: calls go to the allocation again.
			if g := b.must(200, "PATCH", "/v1/organization", map[string]any{"assistantRequest": nil}).data(); g["assistantRequest"] != nil {
				t.Errorf("PATCH assistantRequest null = %v, want it removed", g["assistantRequest"])
			}
			if c := dial("no endpoint"); c["assistantId"] != allocated || c["routing"].(map[string]any)["source"] != "allocation" {
				t.Errorf("call without an endpoint = %v %v, want the allocation", c["assistantId"], c["routing"])
			}
			for field, body := range map[string]map[string]any{
				"assistantRequest.timeoutMs": {"assistantRequest": map[string]any{"url": rr.srv.URL, "timeoutMs": 9000}},
				"assistantRequest.url":       {"assistantRequest": map[string]any{"url": "ftp://x"}},
				"assistantRequest.x":         {"assistantRequest": map[string]any{"url": rr.srv.URL, "x": 1}},
			} {
				r := b.req("PATCH", "/v1/organization", b.key, body)
				if r.Status != 400 || !strings.Contains(string(r.Raw), `"field":"`+field+`"`) {
					t.Errorf("PATCH %v = %d %s, want 400 naming %s", body, r.Status, r.Raw, field)
				}
			}
		})
	}
}

// otherOrgAssistant makes an assistant in a second organization.
func (b *testBundle) otherOrgAssistant() string {
	b.t.Helper()
	key := b.newKey(createOrg(b.t, b.m.DB(), "other"), auth.AllScopes...)
	r := b.req("POST", "/v1/assistants", key, map[string]any{"name": "Theirs"})
	if r.Status != 201 {
		b.t.Fatalf("other org's assistant = %d %s", r.Status, r.Raw)
	}
	return r.data()["id"].(string)
}

// TestRoutingInboundSandbox: a sandbox persona calls in (POST
// /v1/sandbox/calls); the organization's endpoint routes it to another
// assistant whose overridden first message (a template of the endpoint's
// variables) opens the conversation; a timeout falls back to the
// allocated assistant; busy and forward answer what the caller heard and
// store nothing; another organization's number is refused naming "to".
func TestRoutingInboundSandbox(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		allocated := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Front desk", "firstMessage": "Front desk."}).data()["id"].(string)
		routed := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Members", "firstMessage": "Members line."}).data()["id"].(string)
		num := "+14155550100"
		pn := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": num, "provider": "sandbox"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": pn, "inboundAssistantId": allocated})
		rr := newRoutingReceiver(t)
		ar := b.must(200, "PATCH", "/v1/organization", map[string]any{"assistantRequest": map[string]any{"url": rr.srv.URL, "timeoutMs": 300}}).data()["assistantRequest"].(map[string]any)
		rr.mu.Lock()
		rr.secret = ar["secret"].(string)
		rr.mu.Unlock()
		callIn := func() resp {
			return b.req("POST", "/v1/sandbox/calls", b.key, map[string]any{"from": "+1 415 555 1234", "to": num})
		}

		rr.mode(answerJSON(`{"assistantId":"` + routed + `","assistantOverrides":{"firstMessage":"Hi {{tier}} member, {{contact.firstName | caller}}."},"variables":{"tier":"gold"}}`))
		r := callIn()
		if r.Status != 201 {
			t.Fatalf("call in = %d %s, want 201", r.Status, r.Raw)
		}
		id := r.Body["callId"].(string)
		c := b.waitCall(b.key, id, 20*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if c["direction"] != "inbound" || c["from"] != "+14155551234" || c["to"] != num || c["assistantId"] != routed || c["routing"].(map[string]any)["source"] != "webhook" {
			t.Errorf("routed sandbox call = %v", c)
		}
		if text := b.transcriptText(id); !strings.HasPrefix(text, "assistant: Hi gold member, caller.") {
			t.Errorf("routed call's transcript = %q, want the endpoint's first message rendered", text)
		}

		rr.mode(func(w http.ResponseWriter) { time.Sleep(time.Second) })
		r = callIn()
		if r.Status != 201 {
			t.Fatalf("call in (slow endpoint) = %d %s", r.Status, r.Raw)
		}
		c = b.waitCall(b.key, r.Body["callId"].(string), 20*time.Second, func(c map[string]any) bool { return c["status"] == 3.0 })
		if rt := c["routing"].(map[string]any); c["assistantId"] != allocated || rt["source"] != "fallback" || rt["reason"] != "timeout" {
			t.Errorf("slow endpoint: call = assistant %v, routing %v; want the allocated assistant after a timeout", c["assistantId"], rt)
		}
		if text := b.transcriptText(r.Body["callId"].(string)); !strings.HasPrefix(text, "assistant: Front desk.") {
			t.Errorf("fallback call's transcript = %q", text)
		}

		before := b.must(200, "GET", "/v1/calls?pageSize=100", nil).Body["pagination"].(map[string]any)["total"]
		rr.mode(answerJSON(`{"refuse":"busy"}`))
		if r := callIn(); r.Status != 200 || r.data()["heard"] != "busy" || r.data()["answered"] != false {
			t.Errorf("busy: %d %s", r.Status, r.Raw)
		}
		rr.mode(answerJSON(`{"forward":"+14155550199"}`))
		if r := callIn(); r.Status != 200 || r.data()["heard"] != "forwarded" || r.data()["forwardedTo"] != "+14155550199" {
			t.Errorf("forward: %d %s", r.Status, r.Raw)
		}
		if after := b.must(200, "GET", "/v1/calls?pageSize=100", nil).Body["pagination"].(map[string]any)["total"]; after != before {
			t.Errorf("refused calls were stored: total %v → %v", before, after)
		}
		otherKey := b.newKey(createOrg(t, b.m.DB(), "other"), auth.AllScopes...)
		for _, tc := range []struct {
			key  string
			body map[string]any
		}{
			{otherKey, map[string]any{"from": "+14155551234", "to": num}},         // another org's number
			{b.key, map[string]any{"from": "+14155551234", "to": "+14155550999"}}, // not purchased
			{b.key, map[string]any{"from": "+14155551234", "to": "nope"}},
		} {
			if r := b.req("POST", "/v1/sandbox/calls", tc.key, tc.body); r.Status != 400 || !strings.Contains(string(r.Raw), `"field":"to"`) {
				t.Errorf("call in %v = %d %s, want 400 naming to", tc.body, r.Status, r.Raw)
			}
		}
	})
}
