package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/speech"
	"switchboard/internal/voice/voicetest"
)

// fakeVoices gives every call the voicetest engines.
type fakeVoices struct {
	stt *voicetest.Transcriber
	tts *voicetest.Synthesizer
}

func (v fakeVoices) For(assistant.Assistant) (speech.Transcriber, speech.Synthesizer, error) {
	if v.stt == nil {
		return nil, nil, errors.New("no engines")
	}
	return v.stt, v.tts, nil
}

func audioSetup(tb testing.TB, noLeaks bool) *bundle {
	return setup(tb, func(o *setupOptions) {
		o.noLeaks = noLeaks
		o.cfg = func(c *harnessConfig) {
			c.Voices = fakeVoices{stt: &voicetest.Transcriber{}, tts: &voicetest.Synthesizer{}}
		}
	})
}

// pcm16Tone is d ms of a loud 440 Hz tone at 16 kHz, little-endian.
func pcm16Tone(ms int) []byte {
	out := make([]byte, 0, ms*32)
	for i := range ms * 16 {
		s := int16(12000 * math.Sin(2*math.Pi*440*float64(i)/16000))
		out = binary.LittleEndian.AppendUint16(out, uint16(s))
	}
	return out
}

// TestAudioSession: audio on, the first message is spoken (audio events
// around whole 20 ms binary frames), typed text still works and cuts the
// assistant's audio, and when the call ends every goroutine of the
// session and its pipeline is gone (setup's leak check).
func TestAudioSession(t *testing.T) {
	b := audioSetup(t, false)
	c := b.webCall()
	cl := b.dial(t, c)
	cl.audio = true
	cl.send(`{"type":"session.update","textOnly":false,"audio":{"encoding":"pcm16","sampleRate":16000}}`)
	start := cl.skipTo(protocol.TypeAudioStart).(protocol.AudioStart)
	done := cl.expect(protocol.TypeAudioDone).(protocol.AudioDone)
	if done.TurnID != start.TurnID || cl.binary == 0 {
		t.Fatalf("audio.start %s, audio.done %s, %d frames between", start.TurnID, done.TurnID, cl.binary)
	}
	if got := cl.expect(protocol.TypeTurnDone).(protocol.TurnDone); got.Text != firstMessage || got.Interrupted {
		t.Errorf("first message turn.done = %+v", got)
	}
	cl.sendBytes(websocket.MessageBinary, pcm16Tone(300))
	cl.sendBytes(websocket.MessageBinary, []byte{1}) // half a sample: kept for the next frame
	cl.say("hello there")
	reply := cl.skipTo(protocol.TypeAudioStart).(protocol.AudioStart)
	cl.say("stop") // typing cuts the reply's audio
	clear := cl.skipTo(protocol.TypeAudioClear).(protocol.AudioClear)
	cut := cl.skipTo(protocol.TypeTurnDone).(protocol.TurnDone)
	if clear.TurnID != reply.TurnID || cut.TurnID != reply.TurnID || !cut.Interrupted {
		t.Errorf("after typing over the reply: clear %+v, turn.done %+v; want %s cut", clear, cut, reply.TurnID)
	}
	cl.send(`{"type":"hangup"}`)
	cl.expectEndSkipping(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)
}

// micFrame is 20 ms of a caller's microphone at 16 kHz, little-endian:
// faint line hiss, and with voice a buzzy 150 Hz voice-like sound (the
// VAD's kind of speech), frame number k of a continuous signal.
func micFrame(k int, voice bool) []byte {
	out := make([]byte, 0, 640)
	for i := range 320 {
		n := uint32(k*320 + i)
		t := float64(n) / 16000
		// Hiss: white noise (a hash of the sample's index). A pure tone
		// here would, once the VAD has adapted to it, pass for speech.
		n = (n ^ 61) ^ (n >> 16)
		n *= 9
		n ^= n >> 4
		n *= 0x27d4eb2d
		n ^= n >> 15
		v := float64(int(n%81) - 40)
		if voice {
			for h := 1.0; h < 20; h++ {
				v += 4000 / h * math.Sin(2*math.Pi*150*h*t)
			}
		}
		out = binary.LittleEndian.AppendUint16(out, uint16(int16(v)))
	}
	return out
}

// TestAudioPauseResume: the caller speaks over the assistant's first
// message: the client gets assistant.audio.pause (no frames after it but
// the one on its way), and, the words being only "uh-huh",
// assistant.audio.resume with the same playedMs; the message then plays
// out in full and is not interrupted.
func TestAudioPauseResume(t *testing.T) {
	stt := &voicetest.Transcriber{Utterances: []voicetest.Utterance{{Final: "uh-huh"}}}
	// 400 ms a word: the caller starts talking while the message plays,
	// however late a loaded machine lets the test react to its start.
	const wordMs = 400
	tts := &voicetest.Synthesizer{WordDuration: wordMs * time.Millisecond}
	b := setup(t, func(o *setupOptions) {
		o.cfg = func(c *harnessConfig) { c.Voices = fakeVoices{stt: stt, tts: tts} }
	})
	cl := b.dial(t, b.webCall())
	cl.audio = true
	cl.send(`{"type":"session.update","textOnly":false}`)

	// The microphone, in real time: hiss, and from the first message's
	// audio on 500 ms of voice.
	speak := make(chan struct{})
	voiced := -1
	stop := startMic(t, cl, func(k int) bool {
		select {
		case <-speak:
			voiced, speak = k, nil
		default:
		}
		return voiced >= 0 && k < voiced+25
	})
	defer stop()

	cl.skipTo(protocol.TypeAudioStart)
	close(speak)
	pause := cl.skipTo(protocol.TypeAudioPause).(protocol.AudioPause)
	atPause := cl.binary
	resume := cl.skipTo(protocol.TypeAudioResume).(protocol.AudioResume)
	if n := cl.binary - atPause; n > 1 {
		t.Errorf("%d audio frames between assistant.audio.pause and .resume, want at most the one on its way", n)
	}
	words := len(strings.Fields(firstMessage))
	if pause.TurnID != "turn_1" || resume.TurnID != "turn_1" || resume.PlayedMs < pause.PlayedMs || resume.PlayedMs > pause.PlayedMs+20 ||
		pause.PlayedMs < 300 || pause.PlayedMs >= int64(words*wordMs) {
		t.Errorf("pause %+v, resume %+v: want turn_1 paused after 300 ms of the caller's voice (before its end), and resumed where it paused", pause, resume)
	}
	cl.skipTo(protocol.TypeAudioDone)
	done := cl.expect(protocol.TypeTurnDone).(protocol.TurnDone)
	if done.Text != firstMessage || done.Interrupted {
		t.Errorf("turn.done = %+v, want the whole first message, not interrupted", done)
	}
	// None lost or repeated.
	if want := words * wordMs / 20; cl.binary != want {
		t.Errorf("%d audio frames for the first message, want its %d", cl.binary, want)
	}
	stop()
	cl.send(`{"type":"hangup"}`)
	cl.expectEndSkipping(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)
}

// startMic sends the caller's microphone in real time from its own
// goroutine: frame k is voice when voiced(k) says so (voiced runs on that
// goroutine), hiss otherwise. stop ends it between frames — a canceled
// context would close the connection if it came mid-write (coder/websocket
// does), and a hang-up after it needs the connection — and waits for it.
func startMic(tb testing.TB, cl *client, voiced func(k int) bool) (stop func()) {
	ctx, cancel := context.WithCancel(tb.Context())
	var mic sync.WaitGroup
	mic.Go(func() {
		start := time.Now()
		for k := 0; ctx.Err() == nil; k++ {
			wctx, cancelWrite := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			err := cl.conn.Write(wctx, websocket.MessageBinary, micFrame(k, voiced(k)))
			cancelWrite()
			if err != nil {
				return
			}
			time.Sleep(time.Until(start.Add(time.Duration(k+1) * 20 * time.Millisecond)))
		}
	})
	return func() { cancel(); mic.Wait() }
}

// TestAudioOpeningCutUnheard: the caller is already talking as the call
// connects, and their words cut the first message before any of it could
// be heard (assistant.audio.start, .pause, then .clear). The cut turn is
// still a transcript line — what was heard, possibly nothing,
// interrupted — so the stored transcript's seq has no gap: 1 (the cut
// opening), 2 (the caller), 3 (the answer, cut by the hang-up).
func TestAudioOpeningCutUnheard(t *testing.T) {
	stt := &voicetest.Transcriber{Utterances: []voicetest.Utterance{{Final: "wait a moment please"}}}
	// Slow words: nothing of the first is heard in the moment before the cut.
	tts := &voicetest.Synthesizer{WordDuration: 2 * time.Second}
	b := setup(t, func(o *setupOptions) {
		o.asst = func(a *assistant.Assistant) { a.BargeIn.MinSpeechMs = 100 }
		o.cfg = func(c *harnessConfig) { c.Voices = fakeVoices{stt: stt, tts: tts} }
	})
	c := b.webCall()
	cl := b.dial(t, c)
	cl.audio = true
	cl.send(`{"type":"session.update","textOnly":false}`)
	stop := startMic(t, cl, func(k int) bool { return k >= 5 && k < 55 }) // talking as it connects, for 1 s
	defer stop()

	var got []string
	var cut string
	for {
		ev := cl.next()
		switch e := ev.(type) {
		case protocol.AudioStart:
			got = append(got, e.Type()+" "+e.TurnID)
		case protocol.AudioPause:
			got = append(got, e.Type()+" "+e.TurnID)
		case protocol.AudioClear:
			got = append(got, e.Type()+" "+e.TurnID)
		case protocol.TurnDone:
			got = append(got, fmt.Sprintf("%s %s interrupted=%v", e.Type(), e.TurnID, e.Interrupted))
			if e.TurnID == "turn_1" {
				cut = e.Text
			}
		case protocol.Transcript:
			if e.Final {
				got = append(got, fmt.Sprintf("%s %s %s", e.Type(), e.Role, e.TurnID))
			}
		}
		if a, ok := ev.(protocol.AudioStart); ok && a.TurnID == "turn_3" {
			break // the answer; hanging up cuts it
		}
	}
	want := []string{"assistant.audio.start turn_1", "assistant.audio.pause turn_1", "assistant.audio.clear turn_1",
		"assistant.turn.done turn_1 interrupted=true", "transcript assistant turn_1", "transcript user turn_2"}
	if len(got) < len(want) || !slices.Equal(got[:len(want)], want) || !strings.HasPrefix(firstMessage, cut) {
		t.Errorf("events:\n got %q\nwant %q first; the cut turn's text %q must be a prefix of the first message", got, want, cut)
	}
	stop()
	cl.send(`{"type":"hangup"}`)
	cl.expectEndSkipping(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)

	var stored []string
	for _, tr := range b.mem.turnsOf(c.ID) {
		stored = append(stored, fmt.Sprintf("%d %s interrupted=%v", tr.Seq, tr.Role, tr.Interrupted))
	}
	wantStored := []string{"1 assistant interrupted=true", "2 user interrupted=false", "3 assistant interrupted=true"}
	if !slices.Equal(stored, wantStored) {
		t.Errorf("stored turns:\n got %q\nwant %q (the cut opening first)", stored, wantStored)
	}
	if tr := b.mem.turnsOf(c.ID); len(tr) == 3 && (tr[0].Text != cut || tr[1].Text != "wait a moment please") {
		t.Errorf("stored texts %q, %q; want the cut turn's %q, then the caller's words", tr[0].Text, tr[1].Text, cut)
	}
}

// TestAudioRefusals: audio cannot turn off, the format cannot change once
// audio is on, a server without engines refuses audio, and an oversized
// binary frame is abuse.
func TestAudioRefusals(t *testing.T) {
	b := audioSetup(t, false)
	cl := b.dial(t, b.webCall())
	cl.audio = true
	cl.send(`{"type":"session.update","textOnly":false}`)
	cl.send(`{"type":"session.update","textOnly":true}`)
	cl.expectErrorSkipping(protocol.CodeUnsupported, "textOnly")
	cl.send(`{"type":"session.update","audio":{"encoding":"mulaw"}}`)
	cl.expectErrorSkipping(protocol.CodeUnsupported, "audio")
	cl.sendBytes(websocket.MessageBinary, make([]byte, protocol.MaxFrame+1))
	cl.expectErrorSkipping(protocol.CodeFrameTooLarge, "")
	cl.expectEndSkipping(call.Completed, call.ReasonCustomerEnded, protocol.CloseProtocolAbuse)

	none := setup(t, func(o *setupOptions) { o.cfg = func(c *harnessConfig) { c.Voices = fakeVoices{} } })
	cl2 := none.dialFirst(t, none.webCall())
	cl2.send(`{"type":"session.update","textOnly":false}`)
	cl2.expectError(protocol.CodeUnsupported, "textOnly", false)
	cl2.sendBytes(websocket.MessageBinary, []byte{0, 0})
	cl2.expectError(protocol.CodeUnexpectedBinary, "", true)
}

// FuzzAudioFrames sends each input as a binary frame into an audio
// session, which must go on: a following user.text is answered.
func FuzzAudioFrames(f *testing.F) {
	for _, s := range [][]byte{nil, {0}, {0, 0x80}, pcm16Tone(20), pcm16Tone(1000), make([]byte, 4000)} {
		f.Add(s)
	}
	b := audioSetup(f, true)
	f.Fuzz(func(t *testing.T, frame []byte) {
		cl := b.dial(t, b.webCall())
		cl.audio = true
		cl.send(`{"type":"session.update","textOnly":false}`)
		cl.sendBytes(websocket.MessageBinary, frame)
		cl.say("still there?")
		for {
			ev := cl.next()
			if e, ok := ev.(protocol.ErrorEvent); ok && e.Fatal {
				t.Fatalf("binary frame of %d bytes: fatal error %+v", len(frame), e)
			}
			if d, ok := ev.(protocol.TurnDone); ok && d.Text == "You said: still there?" {
				break
			}
			if ev.Type() == protocol.TypeCallEnded {
				t.Fatalf("binary frame of %d bytes ended the call", len(frame))
			}
		}
		cl.send(`{"type":"hangup"}`)
		cl.expectEndSkipping(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
		b.waitLive(t, 0)
	})
}

// skipTo reads events until one of type typ.
func (c *client) skipTo(typ string) protocol.ServerEvent {
	c.tb.Helper()
	for {
		if ev := c.next(); ev.Type() == typ {
			return ev
		}
	}
}

// expectErrorSkipping reads up to the next error event and checks it is non-fatal or fatal as the code says.
func (c *client) expectErrorSkipping(code, field string) protocol.ErrorEvent {
	c.tb.Helper()
	e := c.skipTo(protocol.TypeError).(protocol.ErrorEvent)
	if e.Code != code || e.Field != field {
		c.tb.Errorf("error event = %+v, want code %s, field %q", e, code, field)
	}
	return e
}

// expectEndSkipping reads up to call.ended, checks it and the close.
func (c *client) expectEndSkipping(outcome call.Outcome, reason string, code websocket.StatusCode) {
	c.tb.Helper()
	ev := c.skipTo(protocol.TypeCallEnded).(protocol.CallEnded)
	if ev.Outcome != string(outcome) || ev.EndedReason != reason {
		c.tb.Errorf("call.ended = %s/%s, want %s/%s", ev.Outcome, ev.EndedReason, outcome, reason)
	}
	c.expectClose(code)
}
