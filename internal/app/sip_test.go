package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/amd/amdtest"
	"switchboard/internal/leaktest"
	"switchboard/internal/sip"
	"switchboard/internal/sip/siptest"
)

// sipBundle is a server with SIP on a port of its own on 127.0.0.1, a SIP
// connection to peer (host:port) whose inbound sources are sources, and
// number bought on it with a flow assistant for both directions.
type sipBundle struct {
	*testBundle
	sipAddr  string
	conn     string
	purchase string
	number   string
}

// keypadFlow greets, asks for a key and answers the key 1 (captured as
// "choice"); speech goes to "other".
var keypadFlow = map[string]any{"start": "menu", "nodes": map[string]any{
	"menu": map[string]any{"type": "ask", "text": "Press 1 for sales.", "branches": []any{
		map[string]any{"match": map[string]any{"kind": "dtmf", "value": "1"}, "capture": "choice", "next": "sales"},
		map[string]any{"match": map[string]any{"kind": "regex", "pattern": "(?P<said>.+)"}, "next": "other"},
	}},
	"sales": map[string]any{"type": "ask", "text": "Sales here. What do you need?", "branches": []any{
		map[string]any{"match": map[string]any{"kind": "regex", "pattern": "(?P<need>.+)"}, "next": "other"},
	}},
	"other": map[string]any{"type": "ask", "text": "I heard you. Press 1 for sales.", "branches": []any{
		map[string]any{"match": map[string]any{"kind": "dtmf", "value": "1"}, "capture": "choice", "next": "sales"},
	}},
}}

// keypadPlan is the keypad assistants' analysis plan: the captured key.
var keypadPlan = map[string]any{"structuredDataSchema": map[string]any{
	"type": "object", "properties": map[string]any{"choice": map[string]any{"type": "string"}}}}

// checkKeyedSales: key 1 reached the keypad flow's dtmf branch of ended
// call callID — the analysis has the captured key, and the turn after the
// keypad entry is the sales answer, as much of it as was heard before the
// caller went on (a prefix, possibly empty) — in a gapless transcript.
func (b *testBundle) checkKeyedSales(callID string) {
	t := b.t
	t.Helper()
	if a := b.waitAnalysis(callID, 15*time.Second); a["structuredData"] == nil || a["structuredData"].(map[string]any)["choice"] != "1" {
		t.Errorf("analysis structuredData = %v, want the captured key {choice: 1}", a["structuredData"])
	}
	turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
	checkSeq(t, turns)
	key := slices.IndexFunc(turns, func(tr map[string]any) bool { return tr["role"] == "user" && tr["text"] == "Keypad entry: 1" })
	if key < 0 || key+1 >= len(turns) || turns[key+1]["role"] != "assistant" ||
		!strings.HasPrefix("Sales here. What do you need?", turns[key+1]["text"].(string)) {
		var lines []string
		for _, tr := range turns {
			lines = append(lines, fmt.Sprintf("%v %v: %q", tr["seq"], tr["role"], tr["text"]))
		}
		t.Errorf("key 1 did not reach the flow's sales answer (a prefix of it, as much as was heard):\n%s", strings.Join(lines, "\n"))
	}
}

func startSIP(t *testing.T, dbURL, peer string, sources []string, inbound bool) *sipBundle {
	t.Helper()
	leaktest.Check(t) // first: its check runs after the server's cleanups
	cfg := testConfig(dbURL)
	port := siptest.Port(t)
	rtp := siptest.Ports(t, 64)
	cfg.SIP = &sip.Config{ListenAddr: "127.0.0.1:" + itoa(port), PublicIP: "127.0.0.1",
		RTPPorts: sip.PortRange{Min: rtp.First, Max: rtp.Last}, RingTimeout: 5 * time.Second, MediaTimeout: 5 * time.Second}
	b := &sipBundle{testBundle: start(t, cfg), sipAddr: "127.0.0.1:" + itoa(port), number: "+16175550100"}
	r := b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Test trunk", "sip": map[string]any{
		"address": peer, "transport": "udp", "username": "alice", "password": "s3cret",
		"numbers": []string{b.number, "+16175550101"}, "inboundSources": sources,
	}})
	b.conn = r.data()["id"].(string)
	asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Keypad", "firstMessage": "Hello from Switchboard.",
		"model": map[string]any{"provider": "flow"}, "flow": keypadFlow, "analysisPlan": keypadPlan}).data()["id"].(string)
	b.purchase = b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": b.number, "provider": "sip"}).data()["id"].(string)
	alloc := map[string]any{"id": b.purchase, "outboundAssistantId": asst}
	if inbound {
		alloc["inboundAssistantId"] = asst
	}
	b.must(200, "POST", "/v1/phone/allocate-assistant", alloc)
	return b
}

func (b *sipBundle) transcript(callID string) string {
	var s strings.Builder
	for _, turn := range b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list() {
		s.WriteString(turn["role"].(string) + ": " + turn["text"].(string) + "\n")
	}
	return s.String()
}

// TestSIPOutbound: a call placed through the API reaches SIPp through the
// connection (digest challenge answered), is answered, the assistant's
// first message is spoken into the line, SIPp's speech reaches the
// transcript as a caller turn, and POST /v1/calls/{id}/end hangs up with
// a BYE SIPp accepts; busy is busy.
func TestSIPOutbound(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	for name, mk := range databases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			speech := siptest.SpeechWAV(t, "I would like to book an appointment for tomorrow")
			// The callee lets the greeting play, then speaks (and again).
			ulaw, err := os.ReadFile(speech.Ulaw)
			if err != nil {
				t.Fatal(err)
			}
			delayed := filepath.Join(t.TempDir(), "delayed.ulaw")
			if err := os.WriteFile(delayed, append(bytes.Repeat([]byte{0xff}, 4*8000), ulaw...), 0o600); err != nil {
				t.Fatal(err)
			}
			callee := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASAnswer, Timeout: 90 * time.Second,
				Keys: map[string]string{"audio": delayed + ",-1,0"}})
			b := startSIP(t, mk(t), callee.Addr(), nil, false)
			callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
				"phone_purchase_id": b.purchase, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
			c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
			if c["direction"] != "outbound" || c["providerCallId"] == "" || c["providerCallId"] == nil {
				t.Errorf("answered call: direction %v, providerCallId %v", c["direction"], c["providerCallId"])
			}
			// However long a loaded machine takes to hear it (the callee
			// says it again and again; a lost utterance is asked again).
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) && !strings.Contains(b.transcript(callID), "user: ") {
				time.Sleep(200 * time.Millisecond)
			}
			if tr := b.transcript(callID); !strings.Contains(tr, "assistant: Hello") || !strings.Contains(tr, "user: ") {
				t.Errorf("transcript lacks the first message or the callee's speech:\n%s", tr)
			}
			b.must(200, "POST", "/v1/calls/"+callID+"/end", nil)
			c = b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
			if c["outcome"] != "completed" || c["endedReason"] != "api-ended-call" {
				t.Errorf("ended %v/%v, want completed/api-ended-call", c["outcome"], c["endedReason"])
			}
			callee.WaitOK()

			// A trunk that demands digest credentials gets the connection's.
			auth := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASAuth, Keys: map[string]string{"user": "alice", "password": "s3cret"}})
			b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Auth trunk",
				"sip": map[string]any{"address": auth.Addr(), "username": "alice", "password": "s3cret", "numbers": []string{"+16175550103"}}})
			ap := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+16175550103", "provider": "sip"}).data()["id"].(string)
			b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": ap, "outboundAssistantId": c["assistantId"]})
			authID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
				"phone_purchase_id": ap, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
			b.waitCall(b.key, authID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
			b.must(200, "POST", "/v1/calls/"+authID+"/end", nil)
			auth.WaitOK()

			busy := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASBusy})
			b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Busy trunk",
				"sip": map[string]any{"address": busy.Addr(), "numbers": []string{"+16175550102"}}})
			p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+16175550102", "provider": "sip"}).data()["id"].(string)
			b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": c["assistantId"]})
			busyID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
				"phone_purchase_id": p, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
			c = b.waitCall(b.key, busyID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
			if c["outcome"] != "busy" || c["endedReason"] != "customer-busy" {
				t.Errorf("busy callee: %v/%v, want busy/customer-busy", c["outcome"], c["endedReason"])
			}
			busy.WaitOK()
		})
	}
}

// TestSIPInbound: baresip dials a purchased number and is answered by the
// number's inbound assistant (direction inbound, its first message heard
// by baresip); refused INVITEs get 404 (unknown number), 480 (no inbound
// assistant) and 403 (a source outside inboundSources), and store nothing.
func TestSIPInbound(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	for name, mk := range databases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := startSIP(t, mk(t), "127.0.0.1:5099", []string{"127.0.0.1/32"}, true)
			// The caller waits for the greeting before speaking.
			speech := siptest.SpeechWAV(t, "Hello, I have a question about my bill")
			w, err := siptest.ReadWAV(speech.WAV)
			if err != nil {
				t.Fatal(err)
			}
			w.Samples = append(make([]int16, 5*w.Rate), w.Samples...)
			delayed := filepath.Join(t.TempDir(), "delayed.wav")
			if err := siptest.WriteWAV(delayed, w); err != nil {
				t.Fatal(err)
			}
			phone := siptest.StartBaresip(t, siptest.BaresipConfig{Audio: delayed, Tail: 6 * time.Second, Timeout: 30 * time.Second,
				Dial: "sip:" + b.number + "@" + b.sipAddr})
			res := phone.Wait()
			if !res.Established {
				t.Fatalf("baresip's call was not answered: %s", res.Output)
			}
			calls := b.must(200, "GET", "/v1/calls?direction=inbound", nil).list()
			if len(calls) != 1 {
				t.Fatalf("%d inbound calls, want 1", len(calls))
			}
			callID := calls[0]["id"].(string)
			c := b.waitCall(b.key, callID, 15*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
			if c["direction"] != "inbound" || c["to"] != b.number || c["outcome"] != "completed" {
				t.Errorf("inbound call %v", c)
			}
			if tr := b.transcript(callID); !strings.Contains(tr, "assistant: Hello from Switchboard.") {
				t.Errorf("transcript lacks the first message:\n%s", tr)
			}

			for _, tc := range []struct{ number, code string }{
				{"+16175550199", "404"}, // on no connection
				{"+16175550101", "404"}, // on the connection, not purchased
			} {
				caller := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACExpect, Remote: b.sipAddr, Service: tc.number,
					Keys: map[string]string{"code": tc.code}})
				caller.WaitOK()
			}
			// The number with no inbound assistant: bought, outbound only.
			b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+16175550101", "provider": "sip"})
			caller := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACExpect, Remote: b.sipAddr, Service: "+16175550101",
				Keys: map[string]string{"code": "480"}})
			caller.WaitOK()
			if n := len(b.must(200, "GET", "/v1/calls", nil).list()); n != 1 {
				t.Errorf("%d calls stored, want only the answered one", n)
			}
		})
	}
}

// TestSIPInboundSource: an INVITE from outside the connection's inbound
// sources is refused 403 and stores nothing.
func TestSIPInboundSource(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	eachDB(t, func(t *testing.T, dbURL string) {
		b := startSIP(t, dbURL, "127.0.0.1:5099", []string{"203.0.113.0/24"}, true)
		caller := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACExpect, Remote: b.sipAddr, Service: b.number,
			Keys: map[string]string{"code": "403"}})
		caller.WaitOK()
		if n := len(b.must(200, "GET", "/v1/calls", nil).list()); n != 0 {
			t.Errorf("%d calls stored for a refused INVITE", n)
		}
	})
}

// TestSIPInboundDTMF: SIPp calls in, talks (a G.711 A-law recording) and
// presses 1 (RFC 4733): the line is A-law, the key reaches the flow's dtmf
// branch (captured: the analysis has it; the sales answer begins), and
// SIPp's BYE ends the call customer-ended-call. SIPp hangs up 3 s after
// its key whatever it heard: how much of the answer was heard by then
// depends on the machine's load, so only a prefix is asserted.
func TestSIPInboundDTMF(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	siptest.RequireRawSockets(t)
	eachDB(t, func(t *testing.T, dbURL string) {
		b := startSIP(t, dbURL, "127.0.0.1:5099", []string{"127.0.0.1"}, true)
		caller := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UACDTMF, Remote: b.sipAddr, Service: b.number, Timeout: 40 * time.Second})
		caller.WaitOK()
		calls := b.must(200, "GET", "/v1/calls?direction=inbound", nil).list()
		if len(calls) != 1 {
			t.Fatalf("%d inbound calls, want 1", len(calls))
		}
		callID := calls[0]["id"].(string)
		c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "completed" || c["endedReason"] != "customer-ended-call" {
			t.Errorf("ended %v/%v, want completed/customer-ended-call", c["outcome"], c["endedReason"])
		}
		b.checkKeyedSales(callID)
	})
}

// TestSIPTransfer: POST /v1/calls/{id}/transfer sends a REFER the callee
// (a SIPp PBX) accepts; the call ends completed / assistant-transferred-call
// and SIPp gets our BYE.
func TestSIPTransfer(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	for name, mk := range databases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pbx := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASRefer, Timeout: 40 * time.Second})
			b := startSIP(t, mk(t), pbx.Addr(), nil, false)
			callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
				"phone_purchase_id": b.purchase, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
			b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
			if r := b.req("POST", "/v1/calls/"+callID+"/transfer", b.key, map[string]any{"destination": "sip:desk@pbx.example.com"}); r.Status != 200 {
				t.Fatalf("transfer = %d: %s", r.Status, r.Raw)
			}
			c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
			if c["outcome"] != "completed" || c["endedReason"] != "assistant-transferred-call" {
				t.Errorf("ended %v/%v, want completed/assistant-transferred-call", c["outcome"], c["endedReason"])
			}
			res := pbx.WaitOK()
			if !strings.Contains(res.Messages, "Refer-To: <sip:desk@pbx.example.com>") && !strings.Contains(res.Messages, "Refer-To: sip:desk@pbx.example.com") {
				t.Errorf("the REFER did not name the destination:\n%s", res.Messages)
			}
		})
	}
}

// TestSIPCancel: POST /v1/calls/{id}/end while the callee rings sends a
// CANCEL (the SIPp callee answers 200 and 487); the call ends canceled /
// api-ended-call.
func TestSIPCancel(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	eachDB(t, func(t *testing.T, dbURL string) {
		callee := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASNoAnswer})
		b := startSIP(t, dbURL, callee.Addr(), nil, false)
		callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
			"phone_purchase_id": b.purchase, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
		b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 1 })
		b.must(200, "POST", "/v1/calls/"+callID+"/end", nil)
		c := b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "canceled" || c["endedReason"] != "api-ended-call" {
			t.Errorf("ended %v/%v, want canceled/api-ended-call", c["outcome"], c["endedReason"])
		}
		callee.WaitOK()
	})
}

// TestSIPVoicemail: with voicemail.detect, an outbound call answered by a
// machine (a synthesized greeting, then a beep) leaves the assistant's
// message after the beep and ends voicemail / customer-voicemail; a person
// who says "Hello?" is left to talk.
func TestSIPVoicemail(t *testing.T) {
	t.Parallel()
	siptest.Require(t)
	machine, err := amdtest.Synthesize(t.Context(), amdtest.Clip{Name: "machine", Machine: true, Voice: "en-us", Speed: 150, Beep: true,
		Text: "Hi, you've reached Dana. I can't take your call right now, please leave a message after the tone."})
	if err != nil {
		t.Fatal(err)
	}
	person, err := amdtest.Synthesize(t.Context(), amdtest.Clip{Name: "person", Voice: "en-us", Speed: 150, Text: "Hello?"})
	if err != nil {
		t.Fatal(err)
	}
	// The line's audio as SIPp plays it: μ-law, then silence while the
	// machine records (SIPp sends nothing once the file ends).
	ulaw := func(a amdtest.Audio) string {
		pcm := append(append([]int16(nil), a.PCM...), make([]int16, 12*amdtest.Rate)...)
		path := filepath.Join(t.TempDir(), a.Clip.Name+".ulaw")
		if err := os.WriteFile(path, audio.MulawEncode(nil, pcm), 0o600); err != nil {
			t.Fatal(err)
		}
		return path + ",1,0"
	}
	eachDB(t, func(t *testing.T, dbURL string) {
		callee := siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASAnswer, Calls: 2, Timeout: 60 * time.Second,
			Keys: map[string]string{"audio": ulaw(machine)}})
		b := startSIP(t, dbURL, callee.Addr(), nil, false)
		asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Caller", "firstMessage": "Hello, this is Bright Smile Dental.",
			"voicemail": map[string]any{"detect": true, "action": "leaveMessage", "message": "Please call us back about your appointment."}}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": b.purchase, "outboundAssistantId": asst})
		callID := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
			"phone_purchase_id": b.purchase, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
		c := b.waitCall(b.key, callID, 25*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if c["outcome"] != "voicemail" || c["endedReason"] != "customer-voicemail" {
			t.Errorf("a machine's call ended %v/%v, want voicemail/customer-voicemail", c["outcome"], c["endedReason"])
		}
		if tr := b.transcript(callID); !strings.Contains(tr, "assistant: Please call us back about your appointment.") {
			t.Errorf("the message was not left:\n%s", tr)
		}
		callee.Stop()

		callee = siptest.StartSIPp(t, siptest.SIPpConfig{Scenario: siptest.UASAnswer, Timeout: 60 * time.Second,
			Keys: map[string]string{"audio": ulaw(person)}})
		b.must(201, "POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Person",
			"sip": map[string]any{"address": callee.Addr(), "numbers": []string{"+16175550104"}}})
		p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+16175550104", "provider": "sip"}).data()["id"].(string)
		b.must(200, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": p, "outboundAssistantId": asst})
		callID = b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{
			"phone_purchase_id": p, "phoneNumber": "+16175550123", "provider": "sip"}).Body["callId"].(string)
		b.waitCall(b.key, callID, 10*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 2 })
		time.Sleep(6 * time.Second) // past the detector's 5 s deadline
		if c := b.must(200, "GET", "/v1/calls/"+callID, nil).data(); c["status"] != 2.0 {
			t.Errorf("a person's call did not go on: %v/%v", c["outcome"], c["endedReason"])
		}
		b.must(200, "POST", "/v1/calls/"+callID+"/end", nil)
		callee.WaitOK()
	})
}
