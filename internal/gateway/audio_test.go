package gateway

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

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
		o.cfg = func(c *Config) {
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

	none := setup(t, func(o *setupOptions) { o.cfg = func(c *Config) { c.Voices = fakeVoices{} } })
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
