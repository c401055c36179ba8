package twilio

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
	"switchboard/internal/twilio/twiliotest"
)

// Published test vectors: the auth token 12345 and the URL
// https://mycompany.com/myapp.php?foo=1&bar=2 with a <Gather>'s POST
// parameters ("Webhooks security",
// https://www.twilio.com/docs/usage/webhooks/webhooks-security; and the
// older twilio-php "Validate Incoming Requests" page).
func TestSignatureVectors(t *testing.T) {
	const u = "https://mycompany.com/myapp.php?foo=1&bar=2"
	for _, tc := range []struct {
		caller, want string
	}{
		{"+12349013030", "0/KCTR6DLpKmkAf8muzZqo1nDgQ="},
		{"+14158675309", "RSOYDt4T1cUTdK1PDd93/VVr8B8="},
	} {
		params := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {tc.caller}, "Digits": {"1234"}, "From": {tc.caller}, "To": {"+18005551212"}}
		if got := Sign("12345", u, params); got != tc.want {
			t.Errorf("Sign(12345, %s, Caller %s) = %s, want %s", u, tc.caller, got, tc.want)
		}
		if !ValidSignature("12345", u, params, tc.want) {
			t.Errorf("ValidSignature(Caller %s, %s) = false, want true", tc.caller, tc.want)
		}
		if got := twiliotest.Sign("12345", u, params); got != tc.want {
			t.Errorf("twiliotest.Sign(Caller %s) = %s, want %s", tc.caller, got, tc.want)
		}
	}
}

func TestValidSignature(t *testing.T) {
	const token = "0123456789abcdef0123456789abcdef"
	params := url.Values{"CallSid": {"CA" + strings.Repeat("a", 32)}, "CallStatus": {"ringing"}, "To": {testTo}}
	signed := "https://example.com/twilio/c1/voice"
	sig := Sign(token, signed, params)
	withPort := Sign(token, "https://example.com:443/twilio/c1/voice", params)
	for _, tc := range []struct {
		name       string
		token, url string
		params     url.Values
		sig        string
		want       bool
	}{
		{"valid", token, signed, params, sig, true},
		{"missing", token, signed, params, "", false},
		{"forged", token, signed, params, "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", false},
		{"wrong token", "ffffffffffffffffffffffffffffffff", signed, params, sig, false},
		{"empty token", "", signed, params, sig, false},
		{"param changed", token, signed, url.Values{"CallSid": params["CallSid"], "CallStatus": {"completed"}, "To": {testTo}}, sig, false},
		{"param added", token, signed, url.Values{"CallSid": params["CallSid"], "CallStatus": {"ringing"}, "To": {testTo}, "X": {"1"}}, sig, false},
		{"other URL", token, "https://example.com/twilio/c2/voice", params, sig, false},
		{"URL with port, signed without", token, "https://example.com:443/twilio/c1/voice", params, sig, true},
		{"URL without port, signed with", token, signed, params, withPort, true},
		{"websocket URL", token, "wss://example.com/twilio/c1/stream", nil, Sign(token, "wss://example.com/twilio/c1/stream", nil), true},
		{"websocket URL, http signature", token, "wss://example.com/twilio/c1/stream", nil, Sign(token, "https://example.com/twilio/c1/stream", nil), false},
	} {
		if got := ValidSignature(tc.token, tc.url, tc.params, tc.sig); got != tc.want {
			t.Errorf("%s: ValidSignature(%s) = %v, want %v", tc.name, tc.url, got, tc.want)
		}
	}
}

func TestTwiMLGolden(t *testing.T) {
	const hdr = `<?xml version="1.0" encoding="UTF-8"?>`
	s, err := StreamTwiML("wss://sb.example.com/twilio/c1/stream", Param{"callId", "call_1"}, Param{"token", `a&b"<c>`})
	if err != nil {
		t.Fatal(err)
	}
	want := hdr + `<Response><Connect><Stream url="wss://sb.example.com/twilio/c1/stream">` +
		`<Parameter name="callId" value="call_1"/><Parameter name="token" value="a&amp;b&#34;&lt;c&gt;"/>` +
		`</Stream></Connect></Response>`
	if s != want {
		t.Errorf("StreamTwiML =\n%s\nwant\n%s", s, want)
	}
	if _, err := StreamTwiML("wss://sb.example.com/stream?callId=1"); err == nil {
		t.Error("StreamTwiML with a query string: no error, want one (Twilio forbids it)")
	}
	if _, err := StreamTwiML("https://sb.example.com/stream"); err == nil {
		t.Error("StreamTwiML with an https URL: no error")
	}
	for _, tc := range []struct{ dest, want string }{
		{"+16175550123", hdr + `<Response><Dial>+16175550123</Dial></Response>`},
		{"sip:agent@pbx.example.com;transport=tls", hdr + `<Response><Dial><Sip>sip:agent@pbx.example.com;transport=tls</Sip></Dial></Response>`},
		{"sip:a&b@x", hdr + `<Response><Dial><Sip>sip:a&amp;b@x</Sip></Dial></Response>`},
	} {
		got, err := DialTwiML(tc.dest)
		if err != nil || got != tc.want {
			t.Errorf("DialTwiML(%q) = %q, %v; want %q", tc.dest, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "16175550123", "+1617abc", "sip:<x>", "tel:+1617", "+0123456789"} {
		if got, err := DialTwiML(bad); err == nil {
			t.Errorf("DialTwiML(%q) = %q, want an error", bad, got)
		}
	}
	if got := HangupTwiML(); got != hdr+`<Response><Hangup/></Response>` {
		t.Errorf("HangupTwiML = %q", got)
	}
	if got := RejectTwiML(); got != hdr+`<Response><Reject/></Response>` {
		t.Errorf("RejectTwiML = %q", got)
	}
}

func TestClassifyStatus(t *testing.T) {
	for _, tc := range []struct {
		status    string
		stream    bool
		rank      int
		outcome   call.Outcome
		reason    string
		retryable bool
	}{
		{"queued", false, rankInitiated, "", "", false},
		{"initiated", false, rankInitiated, "", "", false},
		{"ringing", false, rankRinging, "", "", false},
		{"in-progress", false, rankInProgress, "", "", false},
		{"busy", false, rankTerminal, call.Busy, call.ReasonCustomerBusy, true},
		{"no-answer", false, rankTerminal, call.NoAnswer, call.ReasonCustomerNoAnswer, true},
		{"failed", false, rankTerminal, call.Failed, ReasonCallFailed, true},
		{"canceled", false, rankTerminal, call.Canceled, ReasonCallCanceled, false},
		{"completed", false, rankTerminal, call.Completed, call.ReasonCustomerEnded, false},
		{"completed", true, rankTerminal, call.Failed, ReasonStreamFailed, true},
		{"bogus", false, rankNone, "", "", false},
	} {
		got := ClassifyStatus(tc.status, tc.stream)
		if got.Rank != tc.rank {
			t.Errorf("ClassifyStatus(%q, %v).Rank = %d, want %d", tc.status, tc.stream, got.Rank, tc.rank)
		}
		if tc.outcome == "" {
			if got.End != nil {
				t.Errorf("ClassifyStatus(%q) ends the call (%s), want not", tc.status, got.End.Reason)
			}
			continue
		}
		if got.End == nil || got.End.Outcome != string(tc.outcome) || got.End.Reason != tc.reason || got.End.Retryable != tc.retryable {
			t.Errorf("ClassifyStatus(%q, %v).End = %+v, want %s %s retryable=%v", tc.status, tc.stream, got.End, tc.outcome, tc.reason, tc.retryable)
		}
	}
}

func TestClassifyError(t *testing.T) {
	for _, tc := range []struct {
		err   error
		kind  ErrorKind
		field string
		retry bool
	}{
		{&APIError{Status: 401, Code: 20003}, KindCredentials, "authToken", false},
		{&APIError{Status: 400, Code: 21422}, KindNumberUnavailable, "number", false},
		{&APIError{Status: 400, Code: 21210}, KindFrom, "from", false},
		{&APIError{Status: 400, Code: 21212}, KindFrom, "from", false},
		{&APIError{Status: 400, Code: 21211}, KindTo, "to", false},
		{&APIError{Status: 400, Code: 21214}, KindTo, "to", false},
		{&APIError{Status: 400, Code: 21217}, KindTo, "to", false},
		{&APIError{Status: 404, Code: 20404}, KindNotFound, "", false},
		{&APIError{Status: 429, Code: 20429}, KindRateLimited, "", true},
		{&APIError{Status: 503}, KindUnavailable, "", true},
		{&APIError{Status: 400, Code: 21205}, KindRejected, "", false},
		{&TransportError{Method: "POST", Path: "/x", Err: context.DeadlineExceeded}, KindUnavailable, "", true},
		{errors.New("other"), KindRejected, "", false},
	} {
		got := ClassifyError(tc.err)
		if got.Kind != tc.kind || got.Field != tc.field || got.Retryable != tc.retry {
			t.Errorf("ClassifyError(%v) = %+v, want %s %q retryable=%v", tc.err, got, tc.kind, tc.field, tc.retry)
		}
	}
}

func TestMarkNames(t *testing.T) {
	for _, tc := range []struct {
		turn string
		ms   int64
	}{{"turn_1", 0}, {"t:with:colons", 1234567}, {"ü", 20}} {
		name := markName(tc.turn, tc.ms)
		turn, ms, ok := parseMark(name)
		if !ok || turn != tc.turn || ms != tc.ms {
			t.Errorf("parseMark(markName(%q, %d)) = %q, %d, %v", tc.turn, tc.ms, turn, ms, ok)
		}
	}
	for _, bad := range []string{"", "other", "sb:", "sb:12", "sb:12:", "sb:-1:t", "sb:x:t"} {
		if turn, ms, ok := parseMark(bad); ok {
			t.Errorf("parseMark(%q) = %q, %d, true; want false", bad, turn, ms)
		}
	}
}

func TestDecodeStreamMessage(t *testing.T) {
	for _, tc := range []struct {
		msg   string
		event string
		audio string
		bad   bool
	}{
		{`{"event":"connected","protocol":"Call","version":"1.0.0"}`, "connected", "", false},
		{`{"event":"start","sequenceNumber":"1","start":{"accountSid":"AC1","streamSid":"MZ1","callSid":"CA1","tracks":["inbound"],"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1},"customParameters":{"callId":"c"}},"streamSid":"MZ1"}`, "start", "", false},
		{`{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"AAEC"},"streamSid":"MZ1"}`, "media", "\x00\x01\x02", false},
		{`{"event":"dtmf","streamSid":"MZ1","sequenceNumber":"5","dtmf":{"track":"inbound_track","digit":"#"}}`, "dtmf", "", false},
		{`{"event":"mark","sequenceNumber":"4","streamSid":"MZ1","mark":{"name":"sb:20:t"}}`, "mark", "", false},
		{`{"event":"stop","sequenceNumber":"5","streamSid":"MZ1","stop":{"accountSid":"AC1","callSid":"CA1"}}`, "stop", "", false},
		{`{"event":"media","media":{"payload":"!!"}}`, "", "", true},
		{`{"event":"media","media":{"track":"outbound","payload":"AAEC"}}`, "", "", true},
		{`{"event":"dtmf","dtmf":{"digit":"x"}}`, "", "", true},
		{`{"event":"start","start":{}}`, "", "", true},
		{`{"event":"whatever"}`, "", "", true},
		{`not json`, "", "", true},
	} {
		m, audio, err := decodeStreamMessage([]byte(tc.msg))
		if (err != nil) != tc.bad {
			t.Errorf("decodeStreamMessage(%s) err = %v, want bad=%v", tc.msg, err, tc.bad)
			continue
		}
		if !tc.bad && (m.Event != tc.event || string(audio) != tc.audio) {
			t.Errorf("decodeStreamMessage(%s) = %s %q, want %s %q", tc.msg, m.Event, audio, tc.event, tc.audio)
		}
	}
	// What the line writes decodes (as Twilio would read it).
	for _, b := range [][]byte{appendMedia(nil, "MZ1", []byte{1, 2, 3}), appendMark(nil, "MZ1", `sb:20:a"b`), appendClear(nil, "MZ1")} {
		var m streamMessage
		if _, _, err := decodeStreamMessage(b); err != nil && !strings.Contains(string(b), "clear") {
			t.Errorf("our message %s does not decode: %v", b, err)
		}
		_ = m
	}
}

func FuzzStreamMessage(f *testing.F) {
	for _, s := range []string{
		`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
		`{"event":"start","start":{"accountSid":"AC1","streamSid":"MZ1","callSid":"CA1","customParameters":{"callId":"c","token":"t"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`,
		`{"event":"media","media":{"track":"inbound","payload":"/////w=="}}`,
		`{"event":"mark","mark":{"name":"sb:20:turn"}}`,
		`{"event":"dtmf","dtmf":{"digit":"1"}}`,
		`{"event":"stop","stop":{}}`,
		`{"event":"media","media":{"payload":"` + strings.Repeat("A", 20000) + `"}}`,
		`[]`, `null`, `{"event":5}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, audio, err := decodeStreamMessage(b)
		if err != nil {
			return
		}
		if len(audio) > maxMediaPayload {
			t.Fatalf("decoded %d bytes of audio, bound %d", len(audio), maxMediaPayload)
		}
		switch m.Event {
		case "media":
			if len(audio) == 0 {
				t.Fatal("media without audio accepted")
			}
		case "mark":
			if m.Mark == nil || m.Mark.Name == "" {
				t.Fatal("mark without a name accepted")
			}
			_, _, _ = parseMark(m.Mark.Name)
		case "dtmf":
			if m.DTMF == nil || len(m.DTMF.Digit) != 1 || !validDigit(m.DTMF.Digit[0]) {
				t.Fatal("bad dtmf accepted")
			}
		case "start":
			if m.Start == nil {
				t.Fatal("start without start accepted")
			}
		case "connected", "stop":
		default:
			t.Fatalf("event %q accepted", m.Event)
		}
	})
}

// TestClientAgainstFake checks the REST client and its error
// classification against twiliotest: credentials, number search, buying
// (21422 when taken), import, release, and call refusals.
func TestClientAgainstFake(t *testing.T) {
	labelGoroutines(t)
	fake := twiliotest.New()
	t.Cleanup(func() { fake.Close(); checkLeaks(t) })
	sid, token := fake.NewAccount()
	fake.AddAvailable(
		twiliotest.AvailableNumber{Number: "+16175550101", Country: "US", Locality: "Boston", Region: "MA"},
		twiliotest.AvailableNumber{Number: "+16175550102", Country: "US", Locality: "Boston", Region: "MA"},
		twiliotest.AvailableNumber{Number: "+14155550103", Country: "US", Locality: "San Francisco", Region: "CA"},
	)
	ctx := ctxT(t, 10*time.Second)

	bad, err := NewClient(Account{SID: sid, Token: "wrong" + token}, fake.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.CheckCredentials(ctx)
	if c := ClassifyError(err); c.Kind != KindCredentials || c.Field != "authToken" || c.Code != CodeAuthenticate {
		t.Errorf("CheckCredentials with a wrong token: %v classified %+v, want credentials/authToken/20003", err, c)
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error %q holds the auth token", err)
	}

	cl, err := NewClient(Account{SID: sid, Token: token}, fake.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cl.CheckCredentials(ctx)
	if err != nil || info.SID != sid || info.Status != "active" {
		t.Fatalf("CheckCredentials = %+v, %v", info, err)
	}

	nums, err := cl.SearchNumbers(ctx, NumberQuery{Country: "us", AreaCode: 617})
	if err != nil || len(nums) != 2 || nums[0].Number != "+16175550101" || nums[0].Region != "US" || nums[0].Locality != "Boston, MA" {
		t.Fatalf("SearchNumbers(US, 617) = %+v, %v; want the two Boston numbers", nums, err)
	}
	if nums, err := cl.SearchNumbers(ctx, NumberQuery{Country: "US", Contains: "555*103"}); err != nil || len(nums) != 1 || nums[0].Number != "+14155550103" {
		t.Errorf("SearchNumbers(Contains 555*103) = %+v, %v", nums, err)
	}
	if _, err := cl.SearchNumbers(ctx, NumberQuery{Country: "USA"}); err == nil {
		t.Error("SearchNumbers(USA): no error, want a country error")
	}

	owned, err := cl.BuyNumber(ctx, "+16175550101", "https://sb.example.com/twilio/c1/voice", "https://sb.example.com/twilio/c1/status")
	if err != nil || !validSID("PN", owned.SID) || owned.VoiceURL != "https://sb.example.com/twilio/c1/voice" {
		t.Fatalf("BuyNumber = %+v, %v", owned, err)
	}
	_, err = cl.BuyNumber(ctx, "+16175550101", "https://sb.example.com/v", "")
	if c := ClassifyError(err); c.Kind != KindNumberUnavailable || c.Code != CodeNumberNotAvailable || c.Field != "number" {
		t.Errorf("BuyNumber of a taken number: %v classified %+v, want number-unavailable 21422", err, c)
	}

	// Import: a number bought elsewhere is found and pointed at us.
	pn := fake.AddOwned(sid, "+16175550177", "https://old.example.com/voice")
	found, err := cl.FindNumber(ctx, "+16175550177")
	if err != nil || found.SID != pn {
		t.Fatalf("FindNumber = %+v, %v; want %s", found, err, pn)
	}
	if _, err := cl.FindNumber(ctx, "+16175550178"); !errors.Is(err, ErrNotOwned) {
		t.Errorf("FindNumber of a number not owned: %v, want ErrNotOwned", err)
	}
	upd, err := cl.SetVoiceURL(ctx, pn, "https://sb.example.com/twilio/c1/voice", "")
	if err != nil || upd.VoiceURL != "https://sb.example.com/twilio/c1/voice" {
		t.Errorf("SetVoiceURL = %+v, %v", upd, err)
	}
	if err := cl.ReleaseNumber(ctx, pn); err != nil {
		t.Errorf("ReleaseNumber: %v", err)
	}
	if err := cl.ReleaseNumber(ctx, pn); err != nil {
		t.Errorf("ReleaseNumber again (gone): %v, want nil", err)
	}
	if got := fake.Numbers(sid); len(got) != 1 || got[0].Number != "+16175550101" {
		t.Errorf("the account's numbers = %+v, want only +16175550101", got)
	}

	// Call refusals.
	_, err = cl.CreateCall(ctx, CallParams{To: testTo, From: "+16175550155", URL: "https://sb.example.com/x"})
	if c := ClassifyError(err); c.Kind != KindFrom || c.Code != CodeFromNotVerified {
		t.Errorf("CreateCall from a number not owned: %v classified %+v, want from 21210", err, c)
	}
	_, err = cl.CreateCall(ctx, CallParams{To: "12", From: "+16175550101", URL: "https://sb.example.com/x"})
	if c := ClassifyError(err); c.Kind != KindTo || c.Code != CodeInvalidTo {
		t.Errorf("CreateCall to a bad number: %v classified %+v, want to 21211", err, c)
	}
	fake.FailRequests(func(*http.Request) *twiliotest.Error {
		return &twiliotest.Error{Status: 503, Code: 20503, Message: "Service Unavailable"}
	})
	_, err = cl.CreateCall(ctx, CallParams{To: testTo, From: "+16175550101", URL: "https://sb.example.com/x"})
	if c := ClassifyError(err); c.Kind != KindUnavailable || !c.Retryable {
		t.Errorf("CreateCall during an outage: %v classified %+v, want unavailable, retryable", err, c)
	}
	te := placeError(err)
	if te.Outcome != "failed" || te.Reason != ReasonProviderFailed || !te.Retryable {
		t.Errorf("placeError(503) = %+v", te)
	}
	fake.FailRequests(nil)

	// A server that does not answer in time is unavailable.
	cctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	_, err = cl.CheckCredentials(cctx)
	if c := ClassifyError(err); c.Kind != KindUnavailable || !c.Retryable {
		t.Errorf("CheckCredentials timed out: %v classified %+v", err, c)
	}
}

var _ telephony.Receiver = (*recorder)(nil)
