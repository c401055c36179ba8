package siptest

import (
	"strings"
	"testing"
	"time"
)

// received reads a baresip recording, failing the test when there is none.
func received(t *testing.T, path, what string) WAV {
	t.Helper()
	if path == "" {
		t.Fatalf("baresip recorded no %s", what)
	}
	w, err := ReadWAV(path)
	if err != nil {
		t.Fatalf("baresip's %s recording: %v", what, err)
	}
	if w.Rate != PhoneRate {
		t.Errorf("baresip's %s recording is %d Hz, want %d", what, w.Rate, PhoneRate)
	}
	return w
}

// hears checks that got (a recording) holds the speech of want.
func hears(t *testing.T, who string, want Speech, got WAV) {
	t.Helper()
	if got.Duration() < want.Spoken {
		t.Errorf("%s heard %v of audio, want at least the %v of speech", who, got.Duration(), want.Spoken)
	}
	// Up to 2 s of delay between the start of the recording and the speech.
	if c := bestMatch(want.Samples[:int(want.Spoken*PhoneRate/time.Second)], got.Samples, 100); c < 0.8 {
		t.Errorf("%s's audio matches the speech sent with correlation %.2f, want ≥ 0.8", who, c)
	}
}

// baresip calls uas_answer, which plays speech; baresip plays its own
// speech and hangs up when it ends. Each side hears the other.
func TestUASAnswerTalksWithBaresip(t *testing.T) {
	t.Parallel()
	sippSpeech := SpeechWAV(t, "Thank you for calling, how can I help?")
	phoneSpeech := SpeechWAV(t, "I would like to book an appointment.")
	callee := StartSIPp(t, SIPpConfig{Scenario: UASAnswer, Keys: map[string]string{"audio": sippSpeech.RTPStream(1)},
		Timeout: 15 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("+16175550100"), Audio: phoneSpeech.WAV, Timeout: 15 * time.Second})
	got := phone.Wait()
	r := callee.WaitOK()
	if !got.Established || got.Closed != "" {
		t.Errorf("baresip: established %v, closed %q; want an answered call it hung up itself", got.Established, got.Closed)
	}
	hears(t, "baresip", sippSpeech, received(t, got.Received, "received"))
	hears(t, "baresip's sent recording", phoneSpeech, received(t, got.Sent, "sent"))
	if !strings.Contains(r.Messages, "INVITE sip:+16175550100@") {
		t.Errorf("SIPp got no INVITE for +16175550100:\n%s", r.Messages)
	}
}

// uas_answer_bye hangs up itself: baresip accepts its BYE (a wrong From
// or To would get 481, and SIPp would fail the call).
func TestUASAnswerByeHangsUp(t *testing.T) {
	t.Parallel()
	speech := SpeechWAV(t, "Goodbye.")
	callee := StartSIPp(t, SIPpConfig{Scenario: UASAnswerBye,
		Keys:    map[string]string{"audio": speech.RTPStream(1), "hold_ms": "2000"},
		Timeout: 15 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Timeout: 15 * time.Second})
	start := time.Now()
	got := phone.Wait()
	callee.WaitOK()
	if !got.Established || got.Closed != "Connection reset by peer" {
		t.Errorf("baresip: established %v, closed %q; want an answered call the peer hung up", got.Established, got.Closed)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the call lasted %v; uas_answer_bye with hold_ms 2000 should hang up after about 2 s", d)
	}
	hears(t, "baresip", speech, received(t, got.Received, "received"))
}

// uas_silent answers but sends nothing: baresip's recording of what it
// heard is empty, while it did send audio itself.
func TestUASSilentSendsNoRTP(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASSilent, Timeout: 15 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Tail: 2 * time.Second, Timeout: 15 * time.Second})
	got := phone.Wait()
	callee.WaitOK()
	if !got.Established {
		t.Fatalf("baresip: the call to uas_silent was not answered (closed %q)", got.Closed)
	}
	if got.Received != "" {
		if w := received(t, got.Received, "received"); len(w.Samples) > 0 {
			t.Errorf("baresip heard %v from uas_silent, want nothing", w.Duration())
		}
	}
	if sent := received(t, got.Sent, "sent"); sent.Duration() < time.Second {
		t.Errorf("baresip sent %v to uas_silent, want the whole call", sent.Duration())
	}
}

func TestUASBusyRefusesBaresip(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASBusy, Timeout: 10 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Timeout: 10 * time.Second})
	got := phone.Wait()
	callee.WaitOK()
	if got.Established || got.Closed != "486 Busy Here" {
		t.Errorf("baresip: established %v, closed %q; want a call refused with 486 Busy Here", got.Established, got.Closed)
	}
}

// baresip gives up while uas_noanswer rings: CANCEL, 200, 487, ACK.
func TestUASNoAnswerTakesCancel(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASNoAnswer, Timeout: 10 * time.Second})
	// baresip quits at its Timeout, cancelling the call.
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Timeout: 3 * time.Second})
	got := phone.Wait()
	r := callee.WaitOK()
	if got.Established {
		t.Errorf("baresip: the call to uas_noanswer was answered")
	}
	for _, want := range []string{"CANCEL sip:service@", "SIP/2.0 487 Request Terminated", "ACK sip:service@"} {
		if !strings.Contains(r.Messages, want) {
			t.Errorf("uas_noanswer's messages.log has no %q:\n%s", want, r.Messages)
		}
	}
}

func TestUASAuthChecksCredentials(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, password string
		ok             bool
	}{
		{"right password", "s3cret", true},
		{"wrong password", "guess", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			callee := StartSIPp(t, SIPpConfig{Scenario: UASAuth,
				Keys: map[string]string{"user": "alice", "password": "s3cret"}, Timeout: 10 * time.Second})
			phone := StartBaresip(t, BaresipConfig{User: "alice", Password: c.password,
				Dial: callee.URI("service"), Tail: time.Second, Timeout: 10 * time.Second})
			got := phone.Wait()
			r := callee.Wait()
			if c.ok {
				if !r.Succeeded(1) || !got.Established {
					t.Errorf("alice:%s: SIPp %s, baresip established %v (closed %q); want an answered call",
						c.password, r, got.Established, got.Closed)
				}
				if !strings.Contains(r.Messages, `Authorization: Digest username="alice"`) {
					t.Errorf("the second INVITE carried no digest for alice:\n%s", r.Messages)
				}
				return
			}
			if r.Failed != 1 || got.Established || got.Closed != "403 Forbidden" {
				t.Errorf("alice:%s: SIPp %s, baresip established %v, closed %q; want 1 failed call and 403 Forbidden",
					c.password, r, got.Established, got.Closed)
			}
		})
	}
}

// uac_dtmf calls baresip, talks for two seconds (g711a.pcap's first is
// near silence), presses 5.
func TestUACDTMFReachesBaresip(t *testing.T) {
	t.Parallel()
	RequireRawSockets(t)
	phone := StartBaresip(t, BaresipConfig{Timeout: 15 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACDTMF, Remote: phone.Addr(), Service: phone.User,
		Keys: map[string]string{"voice_ms": "2000", "dtmf_pcap": DTMFPcap('5')}, Timeout: 15 * time.Second})
	caller.WaitOK()
	got := phone.Wait()
	if !got.Established || got.Digits != "5" {
		t.Errorf("baresip: established %v, digits %q; want an answered call and the digit 5", got.Established, got.Digits)
	}
	if w := received(t, got.Received, "received"); w.Duration() < 1800*time.Millisecond || rms(w.Samples) < 500 {
		t.Errorf("baresip heard %v at RMS %.0f from uac_dtmf's voice pcap, want ≥ 1.8 s of speech at RMS ≥ 500", w.Duration(), rms(w.Samples))
	}
}

// SIPp's built-in uac_pcap, which opens pcap/… from its working directory.
func TestBuiltinUACPcapReachesBaresip(t *testing.T) {
	t.Parallel()
	RequireRawSockets(t)
	phone := StartBaresip(t, BaresipConfig{Timeout: 20 * time.Second})
	caller := StartSIPp(t, SIPpConfig{Scenario: UACPcap, Remote: phone.Addr(), Service: phone.User, Timeout: 20 * time.Second})
	caller.WaitOK()
	got := phone.Wait()
	if !got.Established || got.Digits != "1" || got.Closed != "Connection reset by peer" {
		t.Errorf("baresip: established %v, digits %q, closed %q; want an answered call, the digit 1, hung up by SIPp",
			got.Established, got.Digits, got.Closed)
	}
}

// SIPp's built-in uas with -rtp_echo sends baresip's audio back.
func TestBuiltinUASEchoesBaresip(t *testing.T) {
	t.Parallel()
	speech := SpeechWAV(t, "Testing, one, two, three.")
	callee := StartSIPp(t, SIPpConfig{Scenario: UAS, RTPEcho: true, Timeout: 15 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Audio: speech.WAV, Timeout: 15 * time.Second})
	got := phone.Wait()
	callee.WaitOK()
	hears(t, "baresip (its echo)", speech, received(t, got.Received, "received"))
}

// uas_answer without audio plays silence until the call ends (the file
// is a second long, looped), so the caller's media never times out.
func TestUASAnswerDefaultsToSilence(t *testing.T) {
	t.Parallel()
	callee := StartSIPp(t, SIPpConfig{Scenario: UASAnswer, Timeout: 10 * time.Second})
	phone := StartBaresip(t, BaresipConfig{Dial: callee.URI("service"), Tail: 2500 * time.Millisecond, Timeout: 15 * time.Second})
	got := phone.Wait()
	callee.WaitOK()
	w := received(t, got.Received, "received")
	if w.Duration() < 2*time.Second || rms(w.Samples) > 10 {
		t.Errorf("baresip heard %v at RMS %.0f from uas_answer without audio, want ≥ 2 s of silence", w.Duration(), rms(w.Samples))
	}
}
