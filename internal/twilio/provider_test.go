package twilio

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
	"switchboard/internal/twilio/twiliotest"
)

func (b *bundle) place(t *testing.T, callID, detect string) *twiliotest.Call {
	t.Helper()
	ctx := ctxT(t, 5*time.Second)
	err := b.p.Place(ctx, telephony.PlaceRequest{CallID: callID, From: testFrom, To: testTo, Trunk: telephony.Trunk{ConnectionID: testConn}, DetectMachine: detect})
	if err != nil {
		t.Fatalf("Place: %v", err)
	}
	fc, err := b.fake.NextCall(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fc
}

// answered places a call that a human answers and returns its line.
func (b *bundle) answered(t *testing.T, callID string) (*twiliotest.Call, *Line) {
	t.Helper()
	fc := b.place(t, callID, "")
	if ev := b.ev.want(t, telephony.Ringing); ev.CallID != callID {
		t.Fatalf("Ringing for %s, want %s", ev.CallID, callID)
	}
	ev := b.ev.want(t, telephony.Answered)
	if ev.CallID != callID || ev.ProviderCallID != fc.SID || ev.Line == nil {
		t.Fatalf("Answered = %+v, want call %s sid %s with a line", ev, callID, fc.SID)
	}
	return fc, ev.Line.(*Line)
}

func waitCall(t *testing.T, fc *twiliotest.Call, what string, cond func(twiliotest.State) bool) twiliotest.State {
	t.Helper()
	st, err := fc.WaitFor(ctxT(t, 5*time.Second), cond)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return st
}

// writeFrames writes n frames of pattern in real time (20 ms apart), or at
// once when paced is false.
func writeFrames(t *testing.T, l *Line, n int, fill byte, paced bool) {
	t.Helper()
	frame := bytes.Repeat([]byte{fill}, 160)
	for i := range n {
		if paced && i > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		if err := l.Write(frame); err != nil {
			t.Fatalf("Write frame %d: %v", i, err)
		}
	}
}

// TestOutboundCall runs a call end to end: placed, ringing, answered by a
// human, the line handed over, audio both ways, marks echoed as the
// callee hears the audio, a barge-in clear, then the callee hangs up.
func TestOutboundCall(t *testing.T) {
	b := setup(t)
	b.fake.SetCallee(testTo, twiliotest.Callee{Answer: twiliotest.AnswerHuman, Audio: mulawTone(200 * time.Millisecond)})
	fc, line := b.answered(t, "call_1")
	st := waitCall(t, fc, "streaming", func(s twiliotest.State) bool { return s.Streaming })
	if st.Parameters["callId"] != "call_1" || st.Parameters["token"] == "" {
		t.Errorf("stream parameters = %v, want callId call_1 and a token", st.Parameters)
	}
	if !slices.Equal(st.Callbacks, []string{"initiated", "ringing", "in-progress"}) {
		t.Errorf("status callbacks = %v", st.Callbacks)
	}
	if got := line.Format(); got.Encoding != "mulaw" || got.SampleRate != 8000 {
		t.Errorf("Format = %+v, want mulaw 8000", got)
	}
	rec := newRecorder()
	endCh, stop := receive(line, rec)
	defer stop()

	// The callee's words reach Receive.
	want := mulawTone(200 * time.Millisecond)
	rec.waitFor(t, "the callee's audio", func(r *recorder) bool { return len(r.audio) >= len(want) })
	rec.mu.Lock()
	if !bytes.Equal(rec.audio[:len(want)], want) {
		t.Error("the callee's audio arrived changed")
	}
	rec.mu.Unlock()

	// A turn of 10 frames, paced: the callee hears all of it and the marks
	// come back as it plays.
	line.AudioStart("t1")
	writeFrames(t, line, 10, 0x55, true)
	line.AudioDone("t1")
	st = waitCall(t, fc, "mark of the turn's end echoed", func(s twiliotest.State) bool { return slices.Contains(s.Marks, markName("t1", 200)) })
	if n := bytes.Count(st.Received, []byte{0x55}); n != 1600 {
		t.Errorf("the callee heard %d bytes of the turn, want 1600", n)
	}
	rec.waitFor(t, "Mark(t1, 200)", func(r *recorder) bool { return r.marks["t1"] == 200 })

	// A turn written 3 s ahead (a loaded machine may take a while to
	// carry the clear), cut at once: clear drops what the callee had not
	// heard; the marks Twilio returns with the clear do not count as heard.
	line.AudioStart("t2")
	writeFrames(t, line, 150, 0x66, false)
	line.Clear()
	line.AudioClear("t2", 3000)
	st = waitCall(t, fc, "clear", func(s twiliotest.State) bool {
		return s.Clears == 1 && slices.Contains(s.Marks, markName("t2", 3000))
	})
	time.Sleep(100 * time.Millisecond) // a few more ticks: nothing of t2 plays after the clear
	heard := bytes.Count(fc.State().Received, []byte{0x66})
	if heard >= 150*160 {
		t.Errorf("the callee heard %d bytes of the cut turn, want less than %d", heard, 150*160)
	}
	rec.mu.Lock()
	if ms := rec.marks["t2"]; ms >= 3000 || ms*8 > int64(heard)+160 {
		t.Errorf("Mark reported %d ms of the cut turn heard, the callee heard %d ms", ms, heard/8)
	}
	rec.mu.Unlock()

	// The callee hangs up.
	fc.Hangup()
	end := waitEnd(t, endCh)
	if end != (telephony.End{Outcome: "completed", Reason: call.ReasonCustomerEnded}) {
		t.Errorf("Receive = %+v, want completed customer-ended-call", end)
	}
	if err := line.Hangup(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("Hangup after the end: %v", err)
	}
	if err := line.Write(make([]byte, 160)); !errors.Is(err, ErrLineClosed) {
		t.Errorf("Write after the end = %v, want ErrLineClosed", err)
	}
	waitCall(t, fc, "call completed", func(s twiliotest.State) bool { return s.Ended && s.Status == "completed" })
	b.ev.none(t, 200*time.Millisecond) // the runtime owns the end
	if b.p.Live() != 0 {
		t.Errorf("Live = %d after the call, want 0", b.p.Live())
	}
	if s := b.p.Stats(); s.OutboundPlaced != 1 || s.OutboundAnswered != 1 || s.Lines != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

func TestOutboundOutcomes(t *testing.T) {
	for _, tc := range []struct {
		answer  twiliotest.Answer
		outcome call.Outcome
		reason  string
	}{
		{twiliotest.AnswerBusy, call.Busy, call.ReasonCustomerBusy},
		{twiliotest.AnswerNoAnswer, call.NoAnswer, call.ReasonCustomerNoAnswer},
		{twiliotest.AnswerFail, call.Failed, ReasonCallFailed},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			b := setup(t)
			b.fake.SetCallee(testTo, twiliotest.Callee{Answer: tc.answer, RingFor: 50 * time.Millisecond})
			fc := b.place(t, "call_1", "")
			b.ev.want(t, telephony.Ringing)
			ev := b.ev.want(t, telephony.Ended)
			if ev.Outcome != string(tc.outcome) || ev.Reason != tc.reason || ev.ProviderCallID != fc.SID {
				t.Errorf("Ended = %s %s (%s), want %s %s (%s)", ev.Outcome, ev.Reason, ev.ProviderCallID, tc.outcome, tc.reason, fc.SID)
			}
			b.ev.none(t, 100*time.Millisecond)
		})
	}
}

func TestPlaceRefused(t *testing.T) {
	b := setup(t)
	ctx := ctxT(t, 5*time.Second)
	err := b.p.Place(ctx, telephony.PlaceRequest{CallID: "c", From: "+16175550144", To: testTo, Trunk: telephony.Trunk{ConnectionID: testConn}})
	var te *telephony.Error
	if !errors.As(err, &te) || te.Reason != ReasonInvalidFrom || te.Retryable {
		t.Errorf("Place from a number not owned = %v, want a telephony.Error %s", err, ReasonInvalidFrom)
	}
	b.acct.Token = strings.Repeat("0", 32)
	err = b.p.Place(ctx, telephony.PlaceRequest{CallID: "c", From: testFrom, To: testTo, Trunk: telephony.Trunk{ConnectionID: testConn}})
	if !errors.As(err, &te) || te.Reason != ReasonAuthFailed {
		t.Errorf("Place with a wrong token = %v, want %s", err, ReasonAuthFailed)
	}
	if err := b.p.Place(ctx, telephony.PlaceRequest{CallID: "c", From: testFrom, To: testTo, DetectMachine: "maybe"}); err == nil {
		t.Error("Place with DetectMachine maybe: no error")
	}
	b.ev.none(t, 100*time.Millisecond)
	if b.p.Live() != 0 {
		t.Errorf("Live = %d, want 0", b.p.Live())
	}
}

func TestMachineDetection(t *testing.T) {
	t.Run("hangup", func(t *testing.T) {
		b := setup(t)
		b.fake.SetCallee(testTo, twiliotest.Callee{Answer: twiliotest.AnswerMachine})
		fc := b.place(t, "call_1", DetectHangup)
		b.ev.want(t, telephony.Ringing)
		ev := b.ev.want(t, telephony.Ended)
		if ev.Outcome != string(call.Voicemail) || ev.Reason != call.ReasonCustomerVoicemail {
			t.Errorf("Ended = %s %s, want voicemail customer-voicemail", ev.Outcome, ev.Reason)
		}
		st := waitCall(t, fc, "hung up", func(s twiliotest.State) bool { return s.Ended })
		if st.AnsweredBy != "machine_start" || st.Streams != 0 || len(st.TwiML) != 1 || !strings.Contains(st.TwiML[0], "<Hangup/>") {
			t.Errorf("the call ran %v (answered by %s, %d streams), want one <Hangup/>", st.TwiML, st.AnsweredBy, st.Streams)
		}
		b.ev.none(t, 100*time.Millisecond) // the completed callback changes nothing
	})
	t.Run("human", func(t *testing.T) {
		b := setup(t)
		fc := b.place(t, "call_1", DetectHangup)
		b.ev.want(t, telephony.Ringing)
		ev := b.ev.want(t, telephony.Answered)
		st := waitCall(t, fc, "streaming", func(s twiliotest.State) bool { return s.Streaming })
		if st.AnsweredBy != "human" {
			t.Errorf("AnsweredBy = %s, want human", st.AnsweredBy)
		}
		_ = ev.Line.Hangup(ctxT(t, 5*time.Second))
	})
	t.Run("leaveMessage", func(t *testing.T) {
		b := setup(t)
		b.fake.SetCallee(testTo, twiliotest.Callee{Answer: twiliotest.AnswerMachine})
		fc := b.place(t, "call_1", DetectLeaveMessage)
		b.ev.want(t, telephony.Ringing)
		ev := b.ev.want(t, telephony.Answered)
		st := waitCall(t, fc, "streaming", func(s twiliotest.State) bool { return s.Streaming })
		if st.AnsweredBy != "machine_end_beep" {
			t.Errorf("AnsweredBy = %s, want machine_end_beep (DetectMessageEnd)", st.AnsweredBy)
		}
		_ = ev.Line.Hangup(ctxT(t, 5*time.Second))
	})
}

// TestStatusCallbacks sends callbacks by hand, signed, out of order and
// twice: a call's status never moves back and it ends once.
func TestStatusCallbacks(t *testing.T) {
	b := setup(t)
	b.fake.SetCallee(testTo, twiliotest.Callee{Answer: twiliotest.AnswerNoAnswer, RingFor: time.Minute})
	fc := b.place(t, "call_1", "")
	b.ev.want(t, telephony.Ringing) // the fake's own ringing callback (sequence 1)
	post := func(status string, seq int) { b.postStatus(t, "call_1", fc.SID, status, seq) }
	post("ringing", 1)     // duplicate
	post("initiated", 5)   // new sequence, old status: no change
	post("ringing", 6)     // already ringing
	post("in-progress", 7) // answered, no stream yet: nothing to say
	post("ringing", 8)     // backwards
	b.ev.none(t, 100*time.Millisecond)
	// Twilio fetched the TwiML (a stream is expected), then the call
	// completed without a stream: it failed.
	code, body := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/calls/call_1/twiml", url.Values{"CallSid": {fc.SID}, "AccountSid": {b.acct.SID}, "CallStatus": {"in-progress"}})
	if code != http.StatusOK || !strings.Contains(body, "<Connect><Stream") {
		t.Fatalf("twiml: %d %s", code, body)
	}
	post("completed", 9)
	ev := b.ev.want(t, telephony.Ended)
	if ev.Outcome != string(call.Failed) || ev.Reason != ReasonStreamFailed {
		t.Errorf("Ended = %s %s, want failed %s", ev.Outcome, ev.Reason, ReasonStreamFailed)
	}
	post("completed", 9)
	post("busy", 10)
	post("completed", -1)
	b.ev.none(t, 100*time.Millisecond)
	// A TwiML request for the ended call hangs it up.
	if _, body := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/calls/call_1/twiml", url.Values{"CallSid": {fc.SID}}); !strings.Contains(body, "<Hangup/>") {
		t.Errorf("twiml of an ended call = %s, want <Hangup/>", body)
	}
}

// postStatus posts a signed status callback for callID.
func (b *bundle) postStatus(t *testing.T, callID, sid, status string, seq int) {
	t.Helper()
	form := url.Values{"CallSid": {sid}, "AccountSid": {b.acct.SID}, "CallStatus": {status}, "From": {testFrom}, "To": {testTo},
		"Direction": {"outbound-api"}, "CallbackSource": {"call-progress-events"}}
	if seq >= 0 {
		form.Set("SequenceNumber", strconv.Itoa(seq))
	}
	if code, body := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/calls/"+callID+"/status", form); code != http.StatusNoContent {
		t.Fatalf("status %s: %d %s", status, code, body)
	}
}

// TestStatusNeverBackwards: a late ringing after in-progress does not
// make the call unanswered again: hanging it up completes it at Twilio
// (canceling an answered call does nothing, "Call resource").
func TestStatusNeverBackwards(t *testing.T) {
	b := setup(t)
	b.fake.SetCallee(testTo, twiliotest.Callee{RingFor: time.Minute})
	fc := b.place(t, "call_1", "")
	b.ev.want(t, telephony.Ringing)
	b.postStatus(t, "call_1", fc.SID, "in-progress", 7)
	b.postStatus(t, "call_1", fc.SID, "ringing", 8)
	var mu sync.Mutex
	var updates []string
	b.fake.FailRequests(func(r *http.Request) *twiliotest.Error {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Calls/"+fc.SID+".json") {
			_ = r.ParseForm()
			mu.Lock()
			updates = append(updates, r.PostForm.Get("Status"))
			mu.Unlock()
		}
		return nil
	})
	if err := b.p.Hangup(ctxT(t, 5*time.Second), "call_1"); err != nil {
		t.Fatal(err)
	}
	if ev := b.ev.want(t, telephony.Ended); ev.Outcome != string(call.Canceled) {
		t.Errorf("Ended = %s, want canceled", ev.Outcome)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(updates, []string{"completed"}) {
		t.Errorf("call updates = %v, want [completed]", updates)
	}
}

// TestStatusByCallSid: a number's status callback (no call id in the path)
// ends an inbound call whose stream never came.
func TestStatusByCallSid(t *testing.T) {
	b := setup(t)
	b.setAdmit(func(context.Context, telephony.Incoming) (string, error) { return "call_in", nil })
	sid := "CA" + strings.Repeat("b", 32)
	code, body := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/voice", url.Values{"CallSid": {sid}, "AccountSid": {b.acct.SID}, "To": {testFrom}, "From": {"+16175550111"}, "CallStatus": {"ringing"}})
	if code != http.StatusOK || !strings.Contains(body, `<Parameter name="callId" value="call_in"/>`) {
		t.Fatalf("voice: %d %s", code, body)
	}
	code, _ = b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/status", url.Values{"CallSid": {sid}, "AccountSid": {b.acct.SID}, "CallStatus": {"completed"}, "SequenceNumber": {"0"}})
	if code != http.StatusNoContent {
		t.Fatalf("status: %d", code)
	}
	ev := b.ev.want(t, telephony.Ended)
	if ev.CallID != "call_in" || ev.Outcome != string(call.Failed) || ev.Reason != ReasonStreamFailed || ev.ProviderCallID != sid {
		t.Errorf("Ended = %+v, want call_in failed %s", ev, ReasonStreamFailed)
	}
}

func TestInboundCall(t *testing.T) {
	b := setup(t)
	got := make(chan telephony.Incoming, 1)
	b.setAdmit(func(_ context.Context, in telephony.Incoming) (string, error) {
		got <- in
		return "call_in", nil
	})
	b.fake.SetCallee(testFrom, twiliotest.Callee{})
	fc, err := b.fake.Dial(ctxT(t, 5*time.Second), testFrom, "+16175550111")
	if err != nil {
		t.Fatal(err)
	}
	ev := b.ev.want(t, telephony.Answered)
	in := <-got
	if in.Provider != Name || in.To != testFrom || in.From != "+16175550111" || in.ProviderCallID != fc.SID {
		t.Errorf("Incoming = %+v", in)
	}
	if ev.CallID != "call_in" || ev.ProviderCallID != fc.SID {
		t.Errorf("Answered = %+v", ev)
	}
	rec := newRecorder()
	endCh, stop := receive(ev.Line, rec)
	defer stop()
	fc.PressDigit('5')
	rec.waitFor(t, "DTMF 5", func(r *recorder) bool { return bytes.Equal(r.digits, []byte("5")) })
	fc.Hangup()
	if end := waitEnd(t, endCh); end.Reason != call.ReasonCustomerEnded {
		t.Errorf("Receive = %+v, want customer-ended-call", end)
	}
	st := waitCall(t, fc, "completed", func(s twiliotest.State) bool { return s.Ended })
	if !slices.Equal(st.Callbacks, []string{"completed"}) {
		t.Errorf("the number's status callbacks = %v, want [completed]", st.Callbacks)
	}
	b.ev.none(t, 100*time.Millisecond)
	if s := b.p.Stats(); s.InboundAnswered != 1 {
		t.Errorf("InboundAnswered = %d", s.InboundAnswered)
	}
}

func TestInboundRefused(t *testing.T) {
	b := setup(t) // the admitter refuses: no inbound assistant
	fc, err := b.fake.Dial(ctxT(t, 5*time.Second), testFrom, "+16175550111")
	if err != nil {
		t.Fatal(err)
	}
	st := waitCall(t, fc, "rejected", func(s twiliotest.State) bool { return s.Ended })
	if !st.Rejected || st.Streams != 0 {
		t.Errorf("the call was not rejected: %+v", st.TwiML)
	}
	b.ev.none(t, 100*time.Millisecond)
	if n := b.p.Stats().Refused["no-inbound-agent"]; n != 1 {
		t.Errorf("Refused[no-inbound-agent] = %d, want 1", n)
	}
}

// TestForgedRequests: a missing or wrong signature is refused with 403 on
// every webhook and on the websocket upgrade, and nothing happens.
func TestForgedRequests(t *testing.T) {
	b := setup(t)
	admitted := 0
	b.setAdmit(func(context.Context, telephony.Incoming) (string, error) { admitted++; return "call_x", nil })
	form := url.Values{"CallSid": {"CA" + strings.Repeat("c", 32)}, "AccountSid": {b.acct.SID}, "To": {testFrom}, "From": {"+16175550111"}, "CallStatus": {"ringing"}}
	for _, path := range []string{
		"/twilio/" + testConn + "/voice",
		"/twilio/" + testConn + "/status",
		"/twilio/" + testConn + "/calls/call_x/status",
		"/twilio/" + testConn + "/calls/call_x/twiml",
	} {
		for _, tc := range []struct{ name, token string }{
			{"missing", ""},
			{"wrong token", strings.Repeat("f", 32)},
		} {
			if code, _ := b.signedPost(t, tc.token, path, form); code != http.StatusForbidden {
				t.Errorf("%s signature on %s: %d, want 403", tc.name, path, code)
			}
		}
	}
	// Signed for another URL.
	u := b.srv.URL + "/twilio/" + testConn + "/voice"
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(SignatureHeader, Sign(b.acct.Token, u+"x", form))
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("signature of another URL: %v %v, want 403", res, err)
	} else {
		res.Body.Close()
	}
	// Unknown connection.
	if code, _ := b.signedPost(t, b.acct.Token, "/twilio/nope/voice", form); code != http.StatusForbidden {
		t.Errorf("unknown connection: %d, want 403", code)
	}
	if admitted != 0 {
		t.Errorf("the Admitter ran %d times for forged requests", admitted)
	}

	// The websocket upgrade.
	wsURL := strings.Replace(b.srv.URL, "http", "ws", 1) + "/twilio/" + testConn + "/stream"
	for _, tc := range []struct{ name, sig string }{
		{"missing", ""},
		{"wrong token", Sign(strings.Repeat("f", 32), wsURL, nil)},
		{"http URL", Sign(b.acct.Token, b.srv.URL+"/twilio/"+testConn+"/stream", nil)},
	} {
		h := http.Header{}
		if tc.sig != "" {
			h.Set(SignatureHeader, tc.sig)
		}
		c, res, err := websocket.Dial(ctxT(t, 5*time.Second), wsURL, &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			_ = c.CloseNow()
			t.Errorf("%s signature: the upgrade succeeded", tc.name)
			continue
		}
		if res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("%s signature: upgrade answered %v, want 403", tc.name, res)
		}
	}
	// A valid upgrade whose start carries a forged token is closed.
	h := http.Header{}
	h.Set(SignatureHeader, Sign(b.acct.Token, wsURL, nil))
	c, _, err := websocket.Dial(ctxT(t, 5*time.Second), wsURL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("signed upgrade: %v", err)
	}
	ctx := ctxT(t, 5*time.Second)
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"event":"connected","protocol":"Call","version":"1.0.0"}`))
	_ = c.Write(ctx, websocket.MessageText, []byte(`{"event":"start","sequenceNumber":"1","streamSid":"MZ`+strings.Repeat("1", 32)+`","start":{"streamSid":"MZ`+strings.Repeat("1", 32)+`","accountSid":"`+b.acct.SID+`","callSid":"CA`+strings.Repeat("2", 32)+`","tracks":["inbound"],"customParameters":{"callId":"call_x","token":"forged"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`))
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("stream with a forged token: read %v, want a policy-violation close", err)
	}
	_ = c.CloseNow()
	b.ev.none(t, 100*time.Millisecond)
	if s := b.p.Stats(); s.Refused["bad-signature"] < 10 || s.Refused["bad-token"] != 1 {
		t.Errorf("Refused = %v", s.Refused)
	}
}

func TestTransfer(t *testing.T) {
	b := setup(t)
	fc, line := b.answered(t, "call_1")
	waitCall(t, fc, "streaming", func(s twiliotest.State) bool { return s.Streaming })
	rec := newRecorder()
	endCh, stop := receive(line, rec)
	defer stop()

	// Twilio refuses the update: the call goes on.
	b.fake.FailRequests(func(r *http.Request) *twiliotest.Error {
		if strings.HasSuffix(r.URL.Path, fc.SID+".json") {
			return &twiliotest.Error{Status: 400, Code: 13224, Message: "Dial: Invalid phone number format"}
		}
		return nil
	})
	err := line.Transfer(ctxT(t, 5*time.Second), "+16175550142")
	if !errors.Is(err, telephony.ErrTransferRefused) {
		t.Fatalf("Transfer refused by Twilio = %v, want ErrTransferRefused", err)
	}
	b.fake.FailRequests(nil)
	if err := line.Write(make([]byte, 160)); err != nil {
		t.Errorf("Write after a refused transfer: %v", err)
	}
	if err := line.Transfer(ctxT(t, 5*time.Second), "not a number"); err == nil || errors.Is(err, telephony.ErrTransferRefused) {
		t.Errorf("Transfer to a bad destination = %v, want a validation error", err)
	}

	if err := line.Transfer(ctxT(t, 5*time.Second), "+16175550142"); err != nil {
		t.Fatalf("Transfer: %v", err)
	}
	if end := waitEnd(t, endCh); end != (telephony.End{Outcome: "completed", Reason: call.ReasonAssistantTransferred}) {
		t.Errorf("Receive = %+v, want completed assistant-transferred-call", end)
	}
	st := waitCall(t, fc, "transferred", func(s twiliotest.State) bool { return len(s.Transfers) == 1 })
	if st.Transfers[0] != "+16175550142" {
		t.Errorf("Transfers = %v", st.Transfers)
	}
	waitCall(t, fc, "ended", func(s twiliotest.State) bool { return s.Ended && s.Status == "completed" })
	b.ev.none(t, 100*time.Millisecond)
}

func TestHangup(t *testing.T) {
	t.Run("line", func(t *testing.T) {
		b := setup(t)
		fc, line := b.answered(t, "call_1")
		rec := newRecorder()
		endCh, stop := receive(line, rec)
		defer stop()
		if err := b.p.Hangup(ctxT(t, 5*time.Second), "call_1"); err != nil {
			t.Fatalf("Hangup: %v", err)
		}
		if end := waitEnd(t, endCh); end != (telephony.End{}) {
			t.Errorf("Receive after our hangup = %+v, want the zero End", end)
		}
		waitCall(t, fc, "completed", func(s twiliotest.State) bool { return s.Ended && s.Status == "completed" })
		if err := line.Hangup(ctxT(t, time.Second)); err != nil {
			t.Errorf("Hangup again: %v", err)
		}
		b.ev.none(t, 100*time.Millisecond)
	})
	t.Run("ringing", func(t *testing.T) {
		b := setup(t)
		b.fake.SetCallee(testTo, twiliotest.Callee{RingFor: time.Minute})
		fc := b.place(t, "call_1", "")
		b.ev.want(t, telephony.Ringing)
		if err := b.p.Hangup(ctxT(t, 5*time.Second), "call_1"); err != nil {
			t.Fatalf("Hangup: %v", err)
		}
		ev := b.ev.want(t, telephony.Ended)
		if ev.Outcome != string(call.Canceled) || ev.Reason != "" {
			t.Errorf("Ended = %s %q, want canceled and no reason", ev.Outcome, ev.Reason)
		}
		waitCall(t, fc, "canceled", func(s twiliotest.State) bool { return s.Ended && s.Status == "canceled" })
		b.ev.none(t, 100*time.Millisecond) // the canceled callback changes nothing
		if err := b.p.Hangup(ctxT(t, time.Second), "call_1"); err != nil {
			t.Errorf("Hangup of an ended call: %v", err)
		}
	})
}

func TestDTMF(t *testing.T) {
	b := setup(t)
	fc, line := b.answered(t, "call_1")
	waitCall(t, fc, "streaming", func(s twiliotest.State) bool { return s.Streaming })
	if err := line.SendDTMF(ctxT(t, 5*time.Second), "1#9"); err != nil {
		t.Fatalf("SendDTMF: %v", err)
	}
	waitCall(t, fc, "the keys heard", func(s twiliotest.State) bool { return s.Digits == "1#9" })
	if err := line.SendDTMF(ctxT(t, time.Second), "1x"); err == nil {
		t.Error("SendDTMF(1x): no error")
	}
	_ = line.Hangup(ctxT(t, 5*time.Second))
}

func TestMediaTimeout(t *testing.T) {
	b := setup(t, func(c *Config) { c.MediaTimeout = 300 * time.Millisecond })
	b.fake.SetCallee(testTo, twiliotest.Callee{NoMedia: true})
	fc, line := b.answered(t, "call_1")
	endCh, stop := receive(line, newRecorder())
	defer stop()
	if end := waitEnd(t, endCh); end != (telephony.End{Outcome: "failed", Reason: ReasonMediaTimeout}) {
		t.Errorf("Receive = %+v, want failed %s", end, ReasonMediaTimeout)
	}
	// The call is ended at Twilio too.
	waitCall(t, fc, "ended", func(s twiliotest.State) bool { return s.Ended && s.Status == "completed" })
}

// TestClose: Close ends a ringing call (Ended canceled system-shutdown, and
// at Twilio) and hangs up an answered line.
func TestClose(t *testing.T) {
	b := setup(t)
	fc1, line := b.answered(t, "call_1")
	endCh, stop := receive(line, newRecorder())
	defer stop()
	b.fake.SetCallee(testTo, twiliotest.Callee{RingFor: time.Minute})
	fc2 := b.place(t, "call_2", "")
	b.ev.want(t, telephony.Ringing)
	if err := b.p.Close(); err != nil {
		t.Fatal(err)
	}
	ev := b.ev.want(t, telephony.Ended)
	if ev.CallID != "call_2" || ev.Outcome != string(call.Canceled) || ev.Reason != call.ReasonSystemShutdown {
		t.Errorf("Ended = %+v, want call_2 canceled system-shutdown", ev)
	}
	if end := waitEnd(t, endCh); end != (telephony.End{}) {
		t.Errorf("Receive after Close = %+v, want the zero End", end)
	}
	waitCall(t, fc1, "call 1 ended", func(s twiliotest.State) bool { return s.Ended })
	waitCall(t, fc2, "call 2 canceled", func(s twiliotest.State) bool { return s.Ended && s.Status == "canceled" })
	ctx := ctxT(t, time.Second)
	if err := b.p.Place(ctx, telephony.PlaceRequest{CallID: "call_3", From: testFrom, To: testTo, Trunk: telephony.Trunk{ConnectionID: testConn}}); !errors.Is(err, ErrClosed) {
		t.Errorf("Place after Close = %v, want ErrClosed", err)
	}
}

// TestStreamTimeout: an admitted call whose stream never comes is ended
// (failed, twilio-stream-failed) after Config.StreamTimeout.
func TestStreamTimeout(t *testing.T) {
	b := setup(t, func(c *Config) { c.StreamTimeout = 200 * time.Millisecond })
	b.setAdmit(func(context.Context, telephony.Incoming) (string, error) { return "call_in", nil })
	sid := "CA" + strings.Repeat("d", 32)
	if code, _ := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/voice", url.Values{"CallSid": {sid}, "AccountSid": {b.acct.SID}, "To": {testFrom}, "From": {"+16175550111"}}); code != http.StatusOK {
		t.Fatalf("voice: %d", code)
	}
	ev := b.ev.want(t, telephony.Ended)
	if ev.CallID != "call_in" || ev.Outcome != string(call.Failed) || ev.Reason != ReasonStreamFailed {
		t.Errorf("Ended = %+v, want call_in failed %s", ev, ReasonStreamFailed)
	}
	if b.p.Live() != 0 {
		t.Errorf("Live = %d, want 0", b.p.Live())
	}
}

// openStream plays Twilio by hand for call callID: it fetches the call's
// TwiML (signed), opens the stream it names (signed upgrade) and sends
// connected and start with the TwiML's parameters.
func (b *bundle) openStream(t *testing.T, callID, callSid string) *websocket.Conn {
	t.Helper()
	code, body := b.signedPost(t, b.acct.Token, "/twilio/"+testConn+"/calls/"+callID+"/twiml", url.Values{"CallSid": {callSid}, "AccountSid": {b.acct.SID}, "CallStatus": {"in-progress"}})
	token := ""
	if i := strings.Index(body, `name="token" value="`); i >= 0 {
		token, _, _ = strings.Cut(body[i+len(`name="token" value="`):], `"`)
	}
	if code != http.StatusOK || token == "" {
		t.Fatalf("twiml: %d %s", code, body)
	}
	wsURL := strings.Replace(b.srv.URL, "http", "ws", 1) + "/twilio/" + testConn + "/stream"
	h := http.Header{}
	h.Set(SignatureHeader, Sign(b.acct.Token, wsURL, nil))
	ctx := ctxT(t, 5*time.Second)
	c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	c.SetReadLimit(1 << 20)
	mz := "MZ" + strings.Repeat("e", 32)
	for _, m := range []string{
		`{"event":"connected","protocol":"Call","version":"1.0.0"}`,
		`{"event":"start","sequenceNumber":"1","streamSid":"` + mz + `","start":{"streamSid":"` + mz + `","accountSid":"` + b.acct.SID + `","callSid":"` + callSid + `","tracks":["inbound"],"customParameters":{"callId":"` + callID + `","token":"` + token + `"},"mediaFormat":{"encoding":"audio/x-mulaw","sampleRate":8000,"channels":1}}}`,
	} {
		if err := c.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestStreamHostile: bad messages are counted and skipped, a flood of
// them or an oversized message ends the line (failed, stream failed).
func TestStreamHostile(t *testing.T) {
	for _, tc := range []struct {
		name string
		send func(ctx context.Context, c *websocket.Conn) error
	}{
		{"flood", func(ctx context.Context, c *websocket.Conn) error {
			for range maxBadMessages {
				if err := c.Write(ctx, websocket.MessageText, []byte(`{"event":`)); err != nil {
					return err
				}
			}
			return nil
		}},
		{"oversized", func(ctx context.Context, c *websocket.Conn) error {
			return c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte(" "), maxStreamMessage+1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t)
			b.fake.SetCallee(testTo, twiliotest.Callee{RingFor: time.Minute})
			fc := b.place(t, "call_1", "")
			b.ev.want(t, telephony.Ringing)
			c := b.openStream(t, "call_1", fc.SID)
			defer c.CloseNow()
			ev := b.ev.want(t, telephony.Answered)
			rec := newRecorder()
			endCh, stop := receive(ev.Line, rec)
			defer stop()
			ctx := ctxT(t, 5*time.Second)
			go func() { // the server's messages (marks, close) must be read
				for {
					if _, _, err := c.Read(ctx); err != nil {
						return
					}
				}
			}()
			// A few bad messages are skipped: media after them arrives.
			for _, m := range []string{`nope`, `{"event":"media","media":{"payload":"%%"}}`, `{"event":"surprise"}`} {
				_ = c.Write(ctx, websocket.MessageText, []byte(m))
			}
			_ = c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3})
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"event":"media","streamSid":"x","media":{"track":"inbound","payload":"AQID"}}`))
			rec.waitFor(t, "media after bad messages", func(r *recorder) bool { return bytes.Equal(r.audio, []byte{1, 2, 3}) })
			if n := b.p.Stats().BadMessages; n != 4 {
				t.Errorf("BadMessages = %d, want 4", n)
			}
			if err := tc.send(ctx, c); err != nil {
				t.Fatal(err)
			}
			if end := waitEnd(t, endCh); end != (telephony.End{Outcome: "failed", Reason: ReasonStreamFailed}) {
				t.Errorf("Receive = %+v, want failed %s", end, ReasonStreamFailed)
			}
			// The call is ended at Twilio.
			waitCall(t, fc, "ended", func(s twiliotest.State) bool { return s.Ended })
		})
	}
}

// TestHangupFromSink: the sink may hang a line up while it is handed
// over (the line is already served).
func TestHangupFromSink(t *testing.T) {
	took := make(chan time.Duration, 1)
	b := setupSink(t, func(sink telephony.EventSink) telephony.EventSink {
		return func(ev telephony.Event) {
			sink(ev)
			if ev.Kind == telephony.Answered {
				start := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_ = ev.Line.Hangup(ctx)
				cancel()
				took <- time.Since(start)
			}
		}
	})
	fc, _ := b.answered(t, "call_1")
	// A deadlock would take Hangup's whole 5 s; a loaded machine may slow
	// the rest down.
	if d := <-took; d > 4*time.Second {
		t.Errorf("Hangup from the sink took %v, want it not to wait out its 5 s", d)
	}
	waitCall(t, fc, "completed", func(s twiliotest.State) bool { return s.Ended && s.Status == "completed" })
}

// TestInboundRoutedAway: the organization's routing refused the call as
// busy (<Reject reason="busy">) or forwarded it (<Dial>): no stream, no
// event, the refusal counted.
func TestInboundRoutedAway(t *testing.T) {
	b := setup(t)
	b.setAdmit(func(context.Context, telephony.Incoming) (string, error) { return "", telephony.ErrBusy })
	fc, err := b.fake.Dial(ctxT(t, 5*time.Second), testFrom, "+16175550111")
	if err != nil {
		t.Fatal(err)
	}
	st := waitCall(t, fc, "rejected", func(s twiliotest.State) bool { return s.Ended })
	if !st.Rejected || st.Streams != 0 || len(st.TwiML) != 1 || !strings.Contains(st.TwiML[0], `<Reject reason="busy"/>`) {
		t.Errorf("busy: %+v, want one <Reject reason=\"busy\"/>", st)
	}
	b.setAdmit(func(context.Context, telephony.Incoming) (string, error) {
		return "", &telephony.Forward{To: "+14155550199"}
	})
	fc, err = b.fake.Dial(ctxT(t, 5*time.Second), testFrom, "+16175550112")
	if err != nil {
		t.Fatal(err)
	}
	st = waitCall(t, fc, "forwarded", func(s twiliotest.State) bool { return s.Ended })
	if st.Streams != 0 || !slices.Equal(st.Transfers, []string{"+14155550199"}) {
		t.Errorf("forward: %+v, want a <Dial> to +14155550199 and no stream", st)
	}
	b.ev.none(t, 100*time.Millisecond)
	if s := b.p.Stats(); s.Refused["routed-busy"] != 1 || s.Refused["routed-forward"] != 1 {
		t.Errorf("Refused = %v, want one routed-busy and one routed-forward", s.Refused)
	}
}
