package app

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/leaktest"
	"switchboard/internal/sip/siptest"
	"switchboard/internal/twilio/twiliotest"
)

// The Twilio tests run the server against twiliotest, a fake Twilio on
// loopback that plays Twilio's side as documented: REST with basic auth,
// signed status callbacks and TwiML fetches, and Media Streams
// websockets whose callee speaks espeak-ng speech and echoes marks.

// twilioBundle is a server whose organization has a Twilio connection to
// the fake's account, a number bought through it and a flow assistant on
// it for both directions.
type twilioBundle struct {
	*testBundle
	fake       *twiliotest.Server
	sid, token string
	conn       string
	purchase   string
	number     string
	asst       string
}

// twilioNumber is for sale in the fake.
const twilioNumber = "+14155550100"

func startTwilio(t *testing.T, dbURL string, firstMessage string) *twilioBundle {
	t.Helper()
	leaktest.Check(t) // first: its check runs after the server's and the fake's cleanups
	fake := twiliotest.New()
	t.Cleanup(fake.Close) // after the server's Close (cleanups run last in, first out)
	sid, token := fake.NewAccount()
	fake.AddAvailable(twiliotest.AvailableNumber{Number: twilioNumber, Country: "US", Locality: "San Francisco", Region: "CA"},
		twiliotest.AvailableNumber{Number: "+14155550101", Country: "US", Locality: "San Francisco", Region: "CA"},
		twiliotest.AvailableNumber{Number: "+12125550100", Country: "US", Locality: "New York", Region: "NY"})
	cfg := testConfig(dbURL)
	cfg.Twilio.APIBaseURL = fake.URL
	cfg.Twilio.RingTimeout = 5 * time.Second
	b := &twilioBundle{testBundle: start(t, cfg), fake: fake, sid: sid, token: token, number: twilioNumber}
	b.conn = b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "twilio", "name": "Our Twilio",
		"twilio": map[string]any{"accountSid": sid, "authToken": token}}).data()["id"].(string)
	flow := map[string]any{"start": "menu", "nodes": keypadFlow["nodes"]}
	if firstMessage != "" {
		menu := flow["nodes"].(map[string]any)["menu"].(map[string]any)
		m := map[string]any{}
		for k, v := range menu {
			m[k] = v
		}
		m["text"] = firstMessage
		nodes := map[string]any{}
		for k, v := range flow["nodes"].(map[string]any) {
			nodes[k] = v
		}
		nodes["menu"] = m
		flow["nodes"] = nodes
	}
	b.asst = b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Keypad", "model": map[string]any{"provider": "flow"},
		"flow": flow, "analysisPlan": keypadPlan, "voicemail": map[string]any{"detect": true, "action": "hangup"}}).data()["id"].(string)
	b.purchase = b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": b.number, "provider": "twilio"}).data()["id"].(string)
	b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": b.purchase, "outboundAssistantId": b.asst, "inboundAssistantId": b.asst})
	return b
}

func (b *twilioBundle) transcript(callID string) string {
	var s strings.Builder
	for _, turn := range b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list() {
		s.WriteString(turn["role"].(string) + ": " + turn["text"].(string) + "\n")
	}
	return s.String()
}

func (b *twilioBundle) dial(to string) (callID string, fc *twiliotest.Call) {
	b.t.Helper()
	callID = b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
		"phone_purchase_id": b.purchase, "phoneNumber": to, "provider": "twilio"}).Body["callId"].(string)
	ctx, cancel := context.WithTimeout(b.t.Context(), 10*time.Second)
	defer cancel()
	fc, err := b.fake.NextCall(ctx)
	if err != nil {
		b.t.Fatalf("the call never reached Twilio: %v", err)
	}
	return callID, fc
}

func waitState(t *testing.T, fc *twiliotest.Call, within time.Duration, what string, cond func(twiliotest.State) bool) twiliotest.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	st, err := fc.WaitFor(ctx, cond)
	if err != nil {
		t.Fatalf("Twilio's side of the call: %s did not happen within %s; state %+v", what, within,
			struct {
				Status    string
				Callbacks []string
				Streams   int
				Marks     int
				Clears    int
				Digits    string
				Transfers []string
			}{st.Status, st.Callbacks, st.Streams, len(st.Marks), st.Clears, st.Digits, st.Transfers})
	}
	return st
}

// TestTwilioAccountAndNumbers: a connection's credentials are checked
// with Twilio (a wrong token is a 400 on twilio.authToken and stores
// nothing) and never shown; numbers are searched in the account, bought
// (pointed at this server) or imported, and released at Twilio (an
// imported one stays in the account, no longer pointed here); Twilio
// failing is a 503 naming it.
func TestTwilioAccountAndNumbers(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := startTwilio(t, dbURL, "")
		r := b.req("POST", "/v1/phone/connections", b.key, map[string]any{"provider": "twilio", "name": "Wrong",
			"twilio": map[string]any{"accountSid": b.sid, "authToken": strings.Repeat("0", 32)}})
		expectFields(t, r, 400, "twilio.authToken")
		expectFields(t, b.req("POST", "/v1/phone/connections", b.key, map[string]any{"provider": "twilio", "name": "Bad",
			"twilio": map[string]any{"accountSid": "SK123", "authToken": "x"}}), 400, "twilio.accountSid")
		conns := b.must(200, "GET", "/v1/phone/connections", nil).list()
		if len(conns) != 1 {
			t.Fatalf("connections after two refused ones = %d, want the one", len(conns))
		}
		raw := b.must(200, "GET", "/v1/phone/connections/"+b.conn, nil).Raw
		if strings.Contains(raw, b.token) || !strings.Contains(raw, `"hasAuthToken":true`) || !strings.Contains(raw, b.sid) {
			t.Errorf("the connection as shown: %s; want the account SID and hasAuthToken, never the token", raw)
		}

		nums := b.must(200, "GET", "/v1/phone/numbers?provider=twilio&areaCode=415", nil).list()
		var found []string
		for _, n := range nums {
			found = append(found, n["number"].(string))
			if n["connectionId"] != b.conn || n["provider"] != "twilio" {
				t.Errorf("number %v: want provider twilio and connectionId %s", n, b.conn)
			}
		}
		if !slices.Contains(found, "+14155550101") || slices.Contains(found, "+12125550100") {
			t.Errorf("numbers in area code 415 = %v; want +14155550101 and not the 212 one", found)
		}
		expectFields(t, b.req("GET", "/v1/phone/numbers?provider=twilio&areaCode=41", b.key, nil), 400, "areaCode")
		expectFields(t, b.req("GET", "/v1/phone/numbers?provider=sandbox&areaCode=415", b.key, nil), 400, "areaCode")

		// Bought at startTwilio: pointed at this server.
		owned := b.fake.Numbers(b.sid)
		i := slices.IndexFunc(owned, func(n twiliotest.Number) bool { return n.Number == twilioNumber })
		if i < 0 || owned[i].VoiceURL != b.m.URL()+"/twilio/"+b.conn+"/voice" {
			t.Fatalf("the bought number at Twilio = %+v; want its voice URL at this server", owned)
		}
		// Import one the account had, and a number it has not.
		b.fake.AddOwned(b.sid, "+15105550123", "https://old.example.com/voice")
		imp := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+15105550123", "provider": "twilio", "import": true}).data()
		if imp["imported"] != true || imp["connectionId"] != b.conn {
			t.Errorf("imported purchase = %v", imp)
		}
		expectFields(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+15105550199", "provider": "twilio", "import": true}), 400, "number")

		// Twilio failing: 503, nothing bought.
		b.fake.FailRequests(func(r *http.Request) *twiliotest.Error {
			if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/IncomingPhoneNumbers.json") {
				return &twiliotest.Error{Status: 500, Code: 20500, Message: "Internal Server Error"}
			}
			return nil
		})
		expectStatus(t, b.req("POST", "/v1/phone/purchases", b.key, map[string]any{"number": "+14155550101", "provider": "twilio"}), 503, "unavailable")
		b.fake.FailRequests(nil)

		b.must(200, "DELETE", "/v1/phone/purchases/"+imp["id"].(string), nil)
		owned = b.fake.Numbers(b.sid)
		if i := slices.IndexFunc(owned, func(n twiliotest.Number) bool { return n.Number == "+15105550123" }); i < 0 || owned[i].VoiceURL != "" {
			t.Errorf("a released imported number at Twilio = %+v; want it kept, its voice URL cleared", owned)
		}
		b.must(200, "DELETE", "/v1/phone/purchases/"+b.purchase, nil)
		if slices.ContainsFunc(b.fake.Numbers(b.sid), func(n twiliotest.Number) bool { return n.Number == twilioNumber }) {
			t.Errorf("a released bought number is still in the Twilio account")
		}
		b.must(200, "DELETE", "/v1/phone/connections/"+b.conn, nil)
	})
}

// TestTwilioOutbound: a call placed through the API is created at Twilio
// and answered; the assistant's first message reaches the callee over the
// media stream, marked; the callee talking over it makes the server send
// clear; its speech reaches the transcript; its key 1 reaches the flow
// (which answers from its sales node); POST end hangs up at Twilio. A
// second call is transferred with <Dial>. Busy, no-answer, failed, a
// machine (the assistant's voicemail setting: hang up) and Twilio
// refusing the call each end as the outcome table says.
func TestTwilioOutbound(t *testing.T) {
	t.Parallel()
	requireLocal(t) // the calls are spoken
	siptest.Require(t)
	speech := siptest.SpeechWAV(t, "Wait, I would like to book an appointment for tomorrow")
	ulaw, err := os.ReadFile(speech.Ulaw)
	if err != nil {
		t.Fatal(err)
	}
	eachDB(t, func(t *testing.T, dbURL string) {
		b := startTwilio(t, dbURL, "Hello from Switchboard. Thank you for calling us today, we are glad to help you with anything you need. Press 1 for sales.")
		// The callee lets the greeting start, then talks over it, and
		// says it again after a pause (a loaded machine's recognizer may
		// lose the first: the assistant asks again).
		silence := func(s int) []byte { return bytes.Repeat([]byte{0xff}, 8000*s/2) }
		audio := slices.Concat(silence(3), ulaw, silence(10), ulaw)
		b.fake.SetCallee("+16175550123", twiliotest.Callee{Answer: twiliotest.AnswerHuman, Audio: audio})
		callID, fc := b.dial("+16175550123")
		c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
		if c["direction"] != "outbound" || !strings.HasPrefix(c["providerCallId"].(string), "CA") {
			t.Errorf("answered call: direction %v, providerCallId %v; want outbound and Twilio's CallSid", c["direction"], c["providerCallId"])
		}
		st := waitState(t, fc, 20*time.Second, "the callee's speech cutting the greeting (clear)", func(st twiliotest.State) bool { return st.Clears > 0 })
		if len(st.Marks) == 0 || len(st.Received) < 8000/2 {
			t.Errorf("before the clear the callee heard %d bytes and echoed %d marks; want the greeting's audio, marked", len(st.Received), len(st.Marks))
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) && !strings.Contains(b.transcript(callID), "user: ") {
			time.Sleep(200 * time.Millisecond)
		}
		tr := b.transcript(callID)
		if !strings.Contains(tr, "assistant: Hello") || !strings.Contains(tr, "user: ") {
			t.Errorf("transcript lacks the (cut) greeting or the callee's speech:\n%s", tr)
		}
		fc.PressDigit('1')
		// The answer to the key is a turn after the keypad entry (its
		// callee may talk over it: as much of it as was heard).
		deadline = time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && !strings.Contains(b.transcript(callID), "user: Keypad entry: 1\nassistant: ") {
			time.Sleep(200 * time.Millisecond)
		}
		b.must(200, "POST", "/v1/calls/"+callID+"/end", nil)
		c = b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "completed" || c["endedReason"] != "api-ended-call" {
			t.Errorf("ended %v/%v, want completed/api-ended-call", c["outcome"], c["endedReason"])
		}
		b.checkKeyedSales(callID)
		waitState(t, fc, 10*time.Second, "the call ending at Twilio", func(st twiliotest.State) bool { return st.Ended && st.Status == "completed" })

		// Transfer: the live call is redirected with <Dial>.
		b.fake.SetCallee("+16175550124", twiliotest.Callee{Answer: twiliotest.AnswerHuman})
		xferID, xfc := b.dial("+16175550124")
		b.waitCall(b.key, xferID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
		b.must(200, "POST", "/v1/calls/"+xferID+"/transfer", map[string]any{"destination": "+14155550199"})
		c = b.waitCall(b.key, xferID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "completed" || c["endedReason"] != "assistant-transferred-call" {
			t.Errorf("transferred call ended %v/%v, want completed/assistant-transferred-call", c["outcome"], c["endedReason"])
		}
		waitState(t, xfc, 5*time.Second, "a <Dial> to +14155550199", func(st twiliotest.State) bool { return slices.Contains(st.Transfers, "+14155550199") })

		for _, tc := range []struct {
			to      string
			callee  twiliotest.Callee
			outcome string
			reason  string
		}{
			{"+16175550131", twiliotest.Callee{Answer: twiliotest.AnswerBusy}, "busy", "customer-busy"},
			{"+16175550132", twiliotest.Callee{Answer: twiliotest.AnswerNoAnswer, RingFor: 200 * time.Millisecond}, "no-answer", "customer-did-not-answer"},
			{"+16175550133", twiliotest.Callee{Answer: twiliotest.AnswerFail}, "failed", "twilio-call-failed"},
			{"+16175550134", twiliotest.Callee{Answer: twiliotest.AnswerMachine}, "voicemail", "customer-voicemail"},
		} {
			b.fake.SetCallee(tc.to, tc.callee)
			id, _ := b.dial(tc.to)
			c := b.waitCall(b.key, id, 15*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
			if c["outcome"] != tc.outcome || c["endedReason"] != tc.reason {
				t.Errorf("callee %+v: ended %v/%v, want %s/%s", tc.callee, c["outcome"], c["endedReason"], tc.outcome, tc.reason)
			}
		}
		// Twilio refusing the call (a 500): the call fails, retryable.
		b.fake.FailRequests(func(r *http.Request) *twiliotest.Error {
			if strings.HasSuffix(r.URL.Path, "/Calls.json") {
				return &twiliotest.Error{Status: 500, Code: 20500, Message: "Internal Server Error"}
			}
			return nil
		})
		id := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
			"phone_purchase_id": b.purchase, "phoneNumber": "+16175550135", "provider": "twilio"}).Body["callId"].(string)
		c = b.waitCall(b.key, id, 5*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "failed" || c["endedReason"] != "twilio-provider-failed" {
			t.Errorf("Twilio answering 500: ended %v/%v, want failed/twilio-provider-failed", c["outcome"], c["endedReason"])
		}
		b.fake.FailRequests(nil)
	})
}

// TestTwilioInbound: a call to the bought number is answered by its
// inbound assistant (direction inbound, the first message heard), and a
// request to any of Twilio's entry points without a valid signature is
// refused 403 and creates nothing.
func TestTwilioInbound(t *testing.T) {
	t.Parallel()
	requireLocal(t) // the call is spoken
	eachDB(t, func(t *testing.T, dbURL string) {
		b := startTwilio(t, dbURL, "")
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		fc, err := b.fake.Dial(ctx, twilioNumber, "+16175550999")
		if err != nil {
			t.Fatal(err)
		}
		waitState(t, fc, 10*time.Second, "the assistant's greeting reaching the caller", func(st twiliotest.State) bool { return len(st.Received) > 8000 })
		calls := b.must(200, "GET", "/v1/calls?direction=inbound", nil).list()
		if len(calls) != 1 || calls[0]["from"] != "+16175550999" || calls[0]["to"] != twilioNumber || calls[0]["provider"] != "twilio" {
			t.Fatalf("inbound calls = %v", calls)
		}
		callID := calls[0]["id"].(string)
		fc.Hangup()
		c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "completed" || c["endedReason"] != "customer-ended-call" {
			t.Errorf("the caller hung up: %v/%v, want completed/customer-ended-call", c["outcome"], c["endedReason"])
		}

		// Forged: unsigned, and signed with another token.
		form := url.Values{"CallSid": {"CA" + strings.Repeat("1", 32)}, "AccountSid": {b.sid}, "From": {"+16175550998"}, "To": {twilioNumber},
			"CallStatus": {"ringing"}, "Direction": {"inbound"}}
		for _, path := range []string{"/twilio/" + b.conn + "/voice", "/twilio/" + b.conn + "/status"} {
			for name, sig := range map[string]string{"unsigned": "", "wrong token": twiliotest.Sign(strings.Repeat("f", 32), b.m.URL()+path, form)} {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, b.m.URL()+path, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if sig != "" {
					req.Header.Set("X-Twilio-Signature", sig)
				}
				res, err := b.http.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusForbidden {
					t.Errorf("POST %s %s = %d, want 403", path, name, res.StatusCode)
				}
			}
		}
		wsURL := "ws" + strings.TrimPrefix(b.m.URL(), "http") + "/twilio/" + b.conn + "/stream"
		_, res, err := websocket.Dial(t.Context(), wsURL, &websocket.DialOptions{HTTPHeader: http.Header{
			"X-Twilio-Signature": {twiliotest.Sign(strings.Repeat("f", 32), wsURL, nil)}}})
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("a media stream signed with another token: %v, %v; want 403 before the upgrade", res, err)
		}
		if res != nil {
			res.Body.Close()
		}
		if calls := b.must(200, "GET", "/v1/calls?direction=inbound", nil).list(); len(calls) != 1 {
			t.Errorf("after forged requests there are %d inbound calls, want still 1", len(calls))
		}
	})
}
