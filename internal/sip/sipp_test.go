package sip

// Calls against real SIPp (Debian sip-tester) on loopback. Each test runs
// its own provider and SIPp in parallel, and checks after Close that no
// goroutine the provider started is left.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/leaktest"
	"switchboard/internal/sip/siptest"
	"switchboard/internal/telephony"
)

func trunkOf(s *sipp, transport string) telephony.Trunk {
	return telephony.Trunk{ConnectionID: "conn_test", Address: s.addr(), Transport: transport}
}

func place(t *testing.T, p *Provider, callID string, tr telephony.Trunk) {
	t.Helper()
	if err := p.Place(t.Context(), telephony.PlaceRequest{CallID: callID, From: testFrom, To: testTo, Trunk: tr}); err != nil {
		t.Fatalf("Place: %v", err)
	}
}

// answered waits for Ringing then Answered and checks what they carry.
func answered(t *testing.T, ev *events, callID string) *Line {
	t.Helper()
	r := ev.expect(t, telephony.Ringing, 5*time.Second)
	a := ev.expect(t, telephony.Answered, 5*time.Second)
	if r.CallID != callID || a.CallID != callID || r.ProviderCallID == "" || a.ProviderCallID != r.ProviderCallID {
		t.Fatalf("events for %s: ringing %+v, answered %+v; want the call id and the same SIP Call-ID on both", callID, r, a)
	}
	line, ok := a.Line.(*Line)
	if !ok || line.CallID() != a.ProviderCallID {
		t.Fatalf("Answered.Line = %T %v, want the *sip.Line of Call-ID %s", a.Line, a.Line, a.ProviderCallID)
	}
	return line
}

// TestOutboundEcho places a call to SIPp's UAS with -rtp_echo: the
// assistant's audio written to the line comes back through Receive, at
// its level, then our BYE ends the call (SIPp counts it successful).
func TestOutboundEcho(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		enc      audio.Encoding
		transprt string
	}{
		{"PCMU over UDP", []string{"-sn", "uas", "-rtp_echo"}, audio.Mulaw, "udp"},
		{"PCMA over TCP", []string{"-sf", "sip_uas_pcma.xml", "-rtp_echo", "-t", "t1"}, audio.Alaw, "tcp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, ev := testProvider(t, Config{}, nil)
			s := startSIPp(t, false, tc.args...)
			place(t, p, "call_echo", trunkOf(s, tc.transprt))
			line := answered(t, ev, "call_echo")
			if f := line.Format(); f != (audio.Format{Encoding: tc.enc, SampleRate: 8000}) {
				t.Fatalf("Format() = %v, want %s/8000", f, tc.enc)
			}
			rec := newRecorder()
			endCh := receive(t, line, rec)
			frames := tone(line.Format(), 50) // 1 s
			writeFrames(t, line, frames)
			// Our silence before the tone is echoed too: look for the
			// tone, until it is all back (however late a loaded machine
			// makes the echo and the jitter buffer).
			var got []byte
			loud := 0
			for deadline := time.Now().Add(10 * time.Second); loud < 45 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				got, _ = rec.snapshot()
				pcm := decode(line.Format(), got)
				loud = 0
				for i := 0; i+160 <= len(pcm); i += 160 {
					if audio.DBFS(pcm[i:i+160]) > -20 {
						loud++
					}
				}
			}
			if loud < 45 {
				t.Errorf("echo: %d bytes received, %d frames of tone (> -20 dBFS), want ≥ 45 of the 50 written", len(got), loud)
			}
			if err := p.Hangup(t.Context(), "call_echo"); err != nil {
				t.Errorf("Hangup: %v", err)
			}
			if e := waitEnd(t, endCh, 5*time.Second); e != (telephony.End{}) {
				t.Errorf("Receive after our Hangup = %+v, want the zero End", e)
			}
			if err := line.Write(frames[0]); !errors.Is(err, ErrLineClosed) {
				t.Errorf("Write after Hangup = %v, want ErrLineClosed", err)
			}
			if err := line.Hangup(t.Context()); err != nil {
				t.Errorf("second Hangup = %v, want nil", err)
			}
			ev.none(t, 200*time.Millisecond) // the runtime owns the end: no Ended
			s.wait(t, 10*time.Second)
		})
	}
}

// TestOutboundFailures: final responses and timeouts before the answer end
// the call with the outcome of the status table.
func TestOutboundFailures(t *testing.T) {
	t.Parallel()
	t.Run("busy", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_busy.xml")
		place(t, p, "call_busy", trunkOf(s, "udp"))
		e := ev.expect(t, telephony.Ended, 5*time.Second)
		if e.Outcome != "busy" || e.Reason != "customer-busy" || e.ProviderCallID == "" {
			t.Errorf("Ended = %+v, want busy / customer-busy with the SIP Call-ID", e)
		}
		s.wait(t, 5*time.Second)
	})
	t.Run("no answer within the ring timeout", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{RingTimeout: time.Second}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_ring.xml")
		start := time.Now()
		place(t, p, "call_ring", trunkOf(s, "udp"))
		ev.expect(t, telephony.Ringing, 5*time.Second)
		e := ev.expect(t, telephony.Ended, 5*time.Second)
		if e.Outcome != "no-answer" || e.Reason != "customer-did-not-answer" {
			t.Errorf("Ended = %+v, want no-answer / customer-did-not-answer", e)
		}
		if d := time.Since(start); d < time.Second {
			t.Errorf("no-answer after %v, want not before the 1 s ring timeout", d)
		}
		s.wait(t, 5*time.Second)
	})
	t.Run("hung up before the answer: CANCEL", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_ring.xml")
		place(t, p, "call_cancel", trunkOf(s, "udp"))
		ev.expect(t, telephony.Ringing, 5*time.Second)
		if err := p.Hangup(t.Context(), "call_cancel"); err != nil {
			t.Fatalf("Hangup: %v", err)
		}
		e := ev.expect(t, telephony.Ended, 5*time.Second)
		if e.Outcome != "canceled" || e.Reason != "" {
			t.Errorf("Ended = %+v, want canceled with no reason (callctl records the one its End asked)", e)
		}
		s.wait(t, 5*time.Second)
	})
	t.Run("nobody listening", func(t *testing.T) {
		t.Parallel()
		p, _ := testProvider(t, Config{}, nil)
		err := p.Place(t.Context(), telephony.PlaceRequest{CallID: "call_tcp", From: testFrom, To: testTo,
			Trunk: telephony.Trunk{Address: "127.0.0.1:1", Transport: "tcp"}})
		var te *telephony.Error
		if !errors.As(err, &te) || te.Reason != ReasonProviderFailed || !te.Retryable {
			t.Errorf("Place to a closed TCP port = %v, want a retryable sip-provider-failed *telephony.Error", err)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		tr := telephony.Trunk{Address: "127.0.0.1:5060", Transport: "udp"}
		for _, req := range []telephony.PlaceRequest{
			{CallID: "c", From: testFrom, To: "6175550199", Trunk: tr},
			{CallID: "c", From: "x", To: testTo, Trunk: tr},
			{CallID: "c", From: testFrom, To: testTo, Trunk: telephony.Trunk{Address: "127.0.0.1:5060", Transport: "sctp"}},
			{CallID: "c", From: testFrom, To: testTo},
			{From: testFrom, To: testTo, Trunk: tr},
		} {
			if err := p.Place(t.Context(), req); err == nil {
				t.Errorf("Place(%+v) = nil, want an error", req)
			}
		}
		ev.none(t, 100*time.Millisecond)
	})
}

// TestDigestAuth: a 401 challenge is answered with the trunk's credentials
// (SIPp verifies them); wrong credentials end the call sip-auth-failed.
func TestDigestAuth(t *testing.T) {
	t.Parallel()
	t.Run("right password", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_auth.xml")
		tr := trunkOf(s, "udp")
		tr.Username, tr.Password = "trunk-user", "s3cret-pass"
		place(t, p, "call_auth", tr)
		line := answered(t, ev, "call_auth")
		if err := line.Hangup(t.Context()); err != nil {
			t.Errorf("Hangup: %v", err)
		}
		s.wait(t, 10*time.Second)
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_auth.xml")
		tr := trunkOf(s, "udp")
		tr.Username, tr.Password = "trunk-user", "wrong"
		place(t, p, "call_badauth", tr)
		e := ev.expect(t, telephony.Ended, 5*time.Second)
		if e.Outcome != "failed" || e.Reason != ReasonAuthFailed {
			t.Errorf("Ended = %+v, want failed / sip-auth-failed", e)
		}
		s.wait(t, 5*time.Second)
	})
}

// TestRemoteBye: SIPp hangs up; Receive returns customer-ended-call.
func TestRemoteBye(t *testing.T) {
	t.Parallel()
	p, ev := testProvider(t, Config{}, nil)
	s := startSIPp(t, false, "-sf", "sip_uas_bye.xml")
	place(t, p, "call_bye", trunkOf(s, "udp"))
	line := answered(t, ev, "call_bye")
	e := waitEnd(t, receive(t, line, newRecorder()), 5*time.Second)
	if e.Outcome != "completed" || e.Reason != "customer-ended-call" {
		t.Errorf("Receive = %+v, want completed / customer-ended-call", e)
	}
	ev.none(t, 200*time.Millisecond)
	s.wait(t, 5*time.Second)
}

// TestMediaTimeout: SIPp's plain UAS sends no RTP; the line ends failed
// sip-media-timeout and hangs up (SIPp gets our BYE).
func TestMediaTimeout(t *testing.T) {
	t.Parallel()
	p, ev := testProvider(t, Config{MediaTimeout: 800 * time.Millisecond}, nil)
	s := startSIPp(t, false, "-sn", "uas")
	place(t, p, "call_silent", trunkOf(s, "udp"))
	line := answered(t, ev, "call_silent")
	start := time.Now()
	e := waitEnd(t, receive(t, line, newRecorder()), 5*time.Second)
	if e.Outcome != "failed" || e.Reason != ReasonMediaTimeout || !e.Fault() {
		t.Errorf("Receive = %+v, want failed / sip-media-timeout", e)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Errorf("media timeout after %v, want not before its 800 ms", d)
	}
	s.wait(t, 10*time.Second)
}

// TestSendDTMF: keys sent as RFC 4733 events come back through SIPp's
// echo and are received once each.
func TestSendDTMF(t *testing.T) {
	t.Parallel()
	p, ev := testProvider(t, Config{}, nil)
	s := startSIPp(t, false, "-sf", "sip_uas_dtmf.xml", "-rtp_echo")
	place(t, p, "call_dtmf", trunkOf(s, "udp"))
	line := answered(t, ev, "call_dtmf")
	rec := newRecorder()
	endCh := receive(t, line, rec)
	if err := line.SendDTMF(t.Context(), "1#9"); err != nil {
		t.Fatalf("SendDTMF: %v", err)
	}
	if err := line.SendDTMF(t.Context(), "12x"); err == nil {
		t.Error("SendDTMF(12x) = nil, want an error naming x")
	}
	deadline := time.After(3 * time.Second)
	for {
		if _, d := rec.snapshot(); len(d) >= 3 {
			break
		}
		select {
		case <-rec.got:
		case <-deadline:
			_, d := rec.snapshot()
			t.Fatalf("echoed keys = %q, want %q", d, "1#9")
		}
	}
	time.Sleep(300 * time.Millisecond) // any repeat would be here by now
	if _, d := rec.snapshot(); d != "1#9" {
		t.Errorf("echoed keys = %q, want %q (each press once)", d, "1#9")
	}
	if err := line.Hangup(t.Context()); err != nil {
		t.Errorf("Hangup: %v", err)
	}
	waitEnd(t, endCh, 5*time.Second)
	s.wait(t, 10*time.Second)
}

// TestTransfer: REFER accepted (202 + NOTIFY 200) ends the line
// transferred; a declined REFER is an ErrTransferRefused and the call goes on.
func TestTransfer(t *testing.T) {
	t.Parallel()
	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_refer.xml")
		place(t, p, "call_refer", trunkOf(s, "udp"))
		line := answered(t, ev, "call_refer")
		endCh := receive(t, line, newRecorder())
		if err := line.Transfer(t.Context(), "not a number"); err == nil || errors.Is(err, telephony.ErrTransferRefused) {
			t.Errorf("Transfer(not a number) = %v, want a destination error", err)
		}
		if err := line.Transfer(t.Context(), "+16175550111"); err != nil {
			t.Fatalf("Transfer: %v", err)
		}
		e := waitEnd(t, endCh, 5*time.Second)
		if e.Outcome != "completed" || e.Reason != "assistant-transferred-call" {
			t.Errorf("Receive after the transfer = %+v, want completed / assistant-transferred-call", e)
		}
		s.wait(t, 5*time.Second)
	})
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		p, ev := testProvider(t, Config{}, nil)
		s := startSIPp(t, false, "-sf", "sip_uas_refer_decline.xml")
		place(t, p, "call_decline", trunkOf(s, "udp"))
		line := answered(t, ev, "call_decline")
		endCh := receive(t, line, newRecorder())
		err := line.Transfer(t.Context(), "+16175550111")
		if !errors.Is(err, telephony.ErrTransferRefused) || !strings.Contains(err.Error(), "603") {
			t.Errorf("Transfer declined with 603 = %v, want ErrTransferRefused naming 603", err)
		}
		select {
		case e := <-endCh:
			t.Fatalf("the line ended (%+v) after a refused transfer; it must go on", e)
		case <-time.After(200 * time.Millisecond):
		}
		if err := line.Hangup(t.Context()); err != nil {
			t.Errorf("Hangup: %v", err)
		}
		waitEnd(t, endCh, 5*time.Second)
		s.wait(t, 5*time.Second)
	})
}

// admitter is a test Admitter: numbers map to a call id or a refusal.
type admitter struct {
	mu   sync.Mutex
	got  []telephony.Incoming
	errs map[string]error
}

func (a *admitter) admit(_ context.Context, in telephony.Incoming) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, in)
	if err, ok := a.errs[in.To]; ok {
		return "", err
	}
	return fmt.Sprintf("call_in_%d", len(a.got)), nil
}

func (a *admitter) incoming() []telephony.Incoming {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]telephony.Incoming(nil), a.got...)
}

// TestInboundPcap: SIPp's uac_pcap calls a number; the call is admitted
// and answered with PCMA (all it offers), its G.711a recording arrives as
// audio, its RFC 2833 key 1 as one DTMF digit, and its BYE ends the line.
func TestInboundPcap(t *testing.T) {
	t.Parallel()
	adm := &admitter{}
	p, ev := testProvider(t, Config{}, adm.admit)
	s := startSIPp(t, true, "-sn", "uac_pcap", "-s", "16175550100", p.Addr().String())
	a := ev.expect(t, telephony.Answered, 10*time.Second)
	line := a.Line.(*Line)
	in := adm.incoming()
	if len(in) != 1 || in[0].To != "+16175550100" || in[0].From != "sipp" || in[0].Source.String() != "127.0.0.1" ||
		in[0].Provider != "sip" || in[0].ProviderCallID != a.ProviderCallID || a.CallID != "call_in_1" {
		t.Fatalf("admitted %+v, answered %+v; want To +16175550100 (normalized), From sipp, source 127.0.0.1, the Call-ID", in, a)
	}
	if f := line.Format(); f.Encoding != audio.Alaw {
		t.Errorf("Format() = %v, want alaw/8000 (uac_pcap offers PCMA)", f)
	}
	rec := newRecorder()
	e := waitEnd(t, receive(t, line, rec), 20*time.Second)
	if e.Outcome != "completed" || e.Reason != "customer-ended-call" {
		t.Errorf("Receive = %+v, want completed / customer-ended-call", e)
	}
	got, digits := rec.snapshot()
	// g711a.pcap holds about 4.7 s of speech: most of it must arrive.
	if len(got) < 8000*4 {
		t.Errorf("received %d bytes of audio, want ≥ %d (4 s)", len(got), 8000*4)
	}
	if loud := audio.DBFS(audio.AlawDecode(nil, got)); loud < -50 {
		t.Errorf("received audio at %.1f dBFS, want speech", loud)
	}
	if digits != "1" {
		t.Errorf("DTMF = %q, want %q (dtmf_2833_1.pcap, once)", digits, "1")
	}
	s.wait(t, 10*time.Second)
	if st := p.Stats(); st.InboundAnswered != 1 {
		t.Errorf("Stats().InboundAnswered = %d, want 1", st.InboundAnswered)
	}
}

// TestInboundInfoDTMF: keys sent as SIP INFO (dtmf-relay and dtmf).
func TestInboundInfoDTMF(t *testing.T) {
	t.Parallel()
	adm := &admitter{}
	p, ev := testProvider(t, Config{}, adm.admit)
	s := startSIPp(t, false, "-sf", "sip_uac_info.xml", "-s", "+16175550100", p.Addr().String())
	a := ev.expect(t, telephony.Answered, 10*time.Second)
	rec := newRecorder()
	e := waitEnd(t, receive(t, a.Line, rec), 10*time.Second)
	if e.Reason != "customer-ended-call" {
		t.Errorf("Receive = %+v, want customer-ended-call", e)
	}
	if _, d := rec.snapshot(); d != "5#" {
		t.Errorf("INFO keys = %q, want %q", d, "5#")
	}
	s.wait(t, 5*time.Second)
}

// TestInboundRefused: refusals get 404 / 403 / 480 and nothing else:
// no event, a counted reason.
func TestInboundRefused(t *testing.T) {
	t.Parallel()
	adm := &admitter{errs: map[string]error{
		"+16175550104": fmt.Errorf("lookup: %w", telephony.ErrUnknownNumber),
		"+16175550103": telephony.ErrSourceRefused,
		"+16175550180": telephony.ErrNoInboundAgent,
	}}
	p, ev := testProvider(t, Config{}, adm.admit)
	for _, tc := range []struct {
		number, scenario, reason string
	}{
		{"+16175550104", "sip_uac_refused_404.xml", "unknown-number"},
		{"+16175550103", "sip_uac_refused_403.xml", "source-refused"},
		{"+16175550180", "sip_uac_refused_480.xml", "no-inbound-agent"},
	} {
		s := startSIPp(t, false, "-sf", tc.scenario, "-s", tc.number, p.Addr().String())
		s.wait(t, 10*time.Second)
		if got := p.Stats().Refused[tc.reason]; got != 1 {
			t.Errorf("Stats().Refused[%s] = %d, want 1", tc.reason, got)
		}
	}
	ev.none(t, 100*time.Millisecond)
	if n := p.Live(); n != 0 {
		t.Errorf("Live() = %d after refusals, want 0", n)
	}
}

// TestInboundNoAck: a caller that never ACKs our 200 is ended failed and
// sent a BYE.
func TestInboundNoAck(t *testing.T) {
	t.Parallel()
	adm := &admitter{}
	p, ev := testProvider(t, Config{AckTimeout: 700 * time.Millisecond}, adm.admit)
	s := startSIPp(t, false, "-sf", "sip_uac_noack.xml", "-s", "+16175550100", p.Addr().String())
	e := ev.expect(t, telephony.Ended, 10*time.Second)
	if e.CallID != "call_in_1" || e.Outcome != "failed" || e.Reason != ReasonProviderFailed {
		t.Errorf("Ended = %+v, want call_in_1 failed / sip-provider-failed", e)
	}
	s.wait(t, 10*time.Second)
}

// TestCloseEndsCalls: Close cancels a ringing call (Ended canceled,
// system-shutdown) and hangs up an answered line (its Receive returns).
func TestCloseEndsCalls(t *testing.T) {
	t.Parallel()
	leaktest.Check(t)
	ev := newEvents()
	rtp := siptest.Ports(t, 64)
	p, err := New(Config{ListenAddr: "127.0.0.1:0", RTPPorts: PortRange{Min: rtp.First, Max: rtp.Last}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(t.Context(), telephony.CallControlFuncs{Sink: ev.sink}); err != nil {
		t.Fatal(err)
	}
	ring := startSIPp(t, false, "-sf", "sip_uas_ring.xml")
	echo := startSIPp(t, false, "-sn", "uas", "-rtp_echo")
	place(t, p, "call_up", trunkOf(echo, "udp"))
	line := answered(t, ev, "call_up")
	endCh := receive(t, line, newRecorder())
	place(t, p, "call_ringing", trunkOf(ring, "udp"))
	ev.expect(t, telephony.Ringing, 5*time.Second)
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	e := ev.expect(t, telephony.Ended, time.Second)
	if e.CallID != "call_ringing" || e.Outcome != "canceled" || e.Reason != "system-shutdown" {
		t.Errorf("Ended = %+v, want call_ringing canceled / system-shutdown", e)
	}
	if e := waitEnd(t, endCh, time.Second); e != (telephony.End{}) {
		t.Errorf("Receive after Close = %+v, want the zero End", e)
	}
	if err := p.Place(t.Context(), telephony.PlaceRequest{CallID: "late", From: testFrom, To: testTo, Trunk: trunkOf(echo, "udp")}); !errors.Is(err, ErrClosed) {
		t.Errorf("Place after Close = %v, want ErrClosed", err)
	}
	ring.wait(t, 5*time.Second)
	echo.wait(t, 10*time.Second)
}

// TestInboundCanceled: the caller hangs up (CANCEL) while the call is
// being admitted; the admitted call ends canceled, customer-ended-call.
func TestInboundCanceled(t *testing.T) {
	t.Parallel()
	slow := func(ctx context.Context, in telephony.Incoming) (string, error) {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return "call_slow", nil
	}
	p, ev := testProvider(t, Config{}, slow)
	s := startSIPp(t, false, "-sf", "sip_uac_cancel.xml", "-s", "+16175550100", p.Addr().String())
	e := ev.expect(t, telephony.Ended, 5*time.Second)
	if e.CallID != "call_slow" || e.Outcome != "canceled" || e.Reason != "customer-ended-call" {
		t.Errorf("Ended = %+v, want call_slow canceled / customer-ended-call", e)
	}
	s.wait(t, 5*time.Second)
}

// toneFrames counts the 20 ms frames of pcm louder than -30 dBFS.
func toneFrames(pcm []int16) int {
	n := 0
	for i := 0; i+160 <= len(pcm); i += 160 {
		if audio.DBFS(pcm[i:i+160]) > -30 {
			n++
		}
	}
	return n
}

// TestBaresip: a real softphone both ways. It calls a number and its
// microphone (2 s of a 440 Hz tone) reaches Receive until it hangs up at
// the end of it; and it answers our call, and its tone reaches us until it
// hangs up.
func TestBaresip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, codec string
		enc         audio.Encoding
	}{{"inbound", "PCMA", audio.Alaw}, {"outbound", "PCMU", audio.Mulaw}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			adm := &admitter{}
			p, ev := testProvider(t, Config{}, adm.admit)
			var line telephony.Line
			if tc.name == "inbound" {
				startBaresip(t, "bot", tc.codec, "sip:+16175550100@"+p.Addr().String(), 2, 4)
				a := ev.expect(t, telephony.Answered, 10*time.Second)
				if in := adm.incoming(); len(in) != 1 || in[0].To != "+16175550100" || in[0].From != "bot" {
					t.Errorf("admitted %+v, want To +16175550100 From bot", in)
				}
				line = a.Line
			} else {
				b := startBaresip(t, testTo, tc.codec, "", 2, 6)
				if err := p.Place(t.Context(), telephony.PlaceRequest{CallID: "call_bs", From: testFrom, To: testTo,
					Trunk: telephony.Trunk{Address: b.addr(), Transport: "udp"}}); err != nil {
					t.Fatalf("Place: %v", err)
				}
				line = answered(t, ev, "call_bs")
			}
			if f := line.Format(); f.Encoding != tc.enc {
				t.Errorf("Format() = %v, want %s (baresip offers %s only)", f, tc.enc, tc.codec)
			}
			rec := newRecorder()
			e := waitEnd(t, receive(t, line, rec), 10*time.Second)
			if e.Outcome != "completed" || e.Reason != "customer-ended-call" {
				t.Errorf("Receive = %+v, want completed / customer-ended-call (baresip hung up)", e)
			}
			got, _ := rec.snapshot()
			if n := toneFrames(decode(line.Format(), got)); n < 75 {
				t.Errorf("%d frames of baresip's tone received (%d bytes), want ≥ 75 of its 100", n, len(got))
			}
		})
	}
}

// TestReinvite: a session refresh (re-INVITE) from the far party is
// answered 200 with our SDP (SIPp checks it) and the call goes on: it
// ends only when SIPp hangs up after the refresh (its BYE answered 200),
// customer-ended-call. No timer of the test's assumes when the refresh
// comes.
func TestReinvite(t *testing.T) {
	t.Parallel()
	p, ev := testProvider(t, Config{}, nil)
	s := startSIPp(t, false, "-sf", "sip_uas_reinvite.xml")
	place(t, p, "call_reinvite", trunkOf(s, "udp"))
	line := answered(t, ev, "call_reinvite")
	if e := waitEnd(t, receive(t, line, newRecorder()), 20*time.Second); e.Outcome != "completed" || e.Reason != "customer-ended-call" {
		t.Errorf("Receive = %+v, want completed / customer-ended-call (SIPp's BYE after the refresh)", e)
	}
	s.wait(t, 10*time.Second)
}
