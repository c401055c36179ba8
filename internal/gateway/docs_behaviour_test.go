package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/voice/voicetest"
)

// These tests pin what docs/gateway-protocol.md promises a client where an
// integrator found the document and the server at odds: what
// assistant.turn.done carries for a spoken turn cut short, and that a flow
// assistant's opening is its first message, firstMessage or not.

// rawSession reads a session's events itself, counting binary frames, so a
// test can act in the middle of a turn's audio.
type rawSession struct {
	t      *testing.T
	conn   *websocket.Conn
	frames int // binary frames received
}

// next returns the next text event, counting binary frames on the way;
// stopAfter > 0 returns nil once that many frames have arrived.
func (s *rawSession) next(stopAfter int) protocol.ServerEvent {
	s.t.Helper()
	for {
		if stopAfter > 0 && s.frames >= stopAfter {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		typ, data, err := s.conn.Read(ctx)
		cancel()
		if err != nil {
			s.t.Fatalf("reading the gateway: %v", err)
		}
		if typ == websocket.MessageBinary {
			s.frames++
			continue
		}
		ev, err := protocol.DecodeServer(data)
		if err != nil {
			s.t.Fatalf("DecodeServer(%s): %v", data, err)
		}
		return ev
	}
}

func (s *rawSession) send(frame string) {
	s.t.Helper()
	if err := s.conn.Write(context.Background(), websocket.MessageText, []byte(frame)); err != nil {
		s.t.Fatalf("writing %s: %v", frame, err)
	}
}

// hangUp sends hangup and reads to the close, so the session ends.
func (s *rawSession) hangUp() {
	s.t.Helper()
	s.send(`{"type":"hangup"}`)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := s.conn.Read(ctx)
		cancel()
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				s.t.Errorf("after hangup: %v, want close 1000", err)
			}
			return
		}
	}
}

// TestDocsInterruptedSpokenTurnIsHeardText: in an audio session, an
// assistant turn cut short ends with assistant.turn.done whose text is
// what the caller heard — a prefix of the turn's deltas, not all of them
// — and its transcript line and the stored turn hold the same text.
func TestDocsInterruptedSpokenTurnIsHeardText(t *testing.T) {
	// 4 sentences, 26 words: 2.6 s of audio at the fake voice's 100 ms a
	// word. The caller cuts in after 0.8 s of it.
	const reply = "Our hours are nine to five. We are closed on Sundays and holidays. " +
		"The office is on Main Street near the park. Parking is free behind the building."
	b := setup(t, func(o *setupOptions) {
		o.asst = func(a *assistant.Assistant) { a.FirstMessage = "" }
		o.cfg = func(c *harnessConfig) {
			c.Voices = fakeVoices{stt: &voicetest.Transcriber{}, tts: &voicetest.Synthesizer{}}
			c.Brains = brainOf(respondFunc(func(_ context.Context, text string, emit func(string)) (conversation.Reply, error) {
				if text == "stop" {
					emit("Okay.")
					return conversation.Reply{}, nil
				}
				for i, w := range strings.Fields(reply) {
					if i > 0 {
						w = " " + w
					}
					emit(w)
				}
				return conversation.Reply{}, nil
			}))
		}
	})
	c := b.webCall()
	conn, _, err := b.rawDial(t, c.ID, c.AssistantID)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	s := &rawSession{t: t, conn: conn}
	if _, ok := s.next(0).(protocol.SessionStarted); !ok {
		t.Fatal("first event is not session.started")
	}
	s.send(`{"type":"session.update","textOnly":false,"audio":{"encoding":"pcm16","sampleRate":16000}}`)
	s.send(`{"type":"user.text","text":"when are you open?"}`)

	var deltas strings.Builder
	var turnID string
	for turnID == "" {
		switch ev := s.next(0).(type) {
		case protocol.TextDelta:
			deltas.WriteString(ev.Text)
		case protocol.AudioStart:
			turnID = ev.TurnID
		case protocol.TurnDone, protocol.CallEnded:
			t.Fatalf("%#v before the reply's audio started", ev)
		}
	}
	const cutAfter = 40 // frames of 20 ms: the first sentence and some of the second
	var done protocol.TurnDone
	var transcript *protocol.Transcript
	cut := false
	for transcript == nil {
		stopAt := 0
		if !cut {
			stopAt = s.frames + cutAfter
		}
		switch ev := s.next(stopAt).(type) {
		case nil:
			s.send(`{"type":"user.text","text":"stop"}`)
			cut = true
		case protocol.TextDelta:
			if ev.TurnID == turnID {
				deltas.WriteString(ev.Text)
			}
		case protocol.AudioDone:
			t.Fatalf("the reply's audio played out (%d frames) before the caller cut in; the test needs it cut", s.frames)
		case protocol.TurnDone:
			done = ev
		case protocol.Transcript:
			if ev.Role == protocol.RoleAssistant && ev.TurnID == turnID {
				transcript = &ev
			}
		}
	}

	sent := deltas.String()
	if sent != reply {
		t.Fatalf("the turn's deltas joined = %q, want the whole reply %q", sent, reply)
	}
	if done.TurnID != turnID || !done.Interrupted {
		t.Fatalf("turn.done = %+v, want %s interrupted", done, turnID)
	}
	if done.Text == "" || done.Text == sent || !strings.HasPrefix(sent, done.Text) {
		t.Errorf("interrupted turn.done text = %q, want what was heard: a non-empty proper prefix of the deltas %q", done.Text, sent)
	}
	if !strings.HasPrefix(done.Text, "Our hours are nine to five.") {
		t.Errorf("interrupted turn.done text = %q, want at least the first sentence, whose audio went out", done.Text)
	}
	if transcript.Text != done.Text || !transcript.Final {
		t.Errorf("assistant transcript = %+v, want final with the turn.done text %q", *transcript, done.Text)
	}
	var stored []string
	for _, tr := range b.mem.turnsOf(c.ID) {
		if tr.Role == call.RoleAssistant {
			stored = append(stored, tr.Text)
		}
	}
	if len(stored) == 0 || stored[0] != done.Text {
		t.Errorf("stored assistant turns = %q, want the first to be the turn.done text %q", stored, done.Text)
	}
	s.hangUp()
	b.waitLive(t, 0)
}

// TestDocsFlowOpeningIsFirstMessage: a flow assistant without a
// firstMessage opens by itself: its start node's text comes as the first
// assistant turn without the client saying anything.
func TestDocsFlowOpeningIsFirstMessage(t *testing.T) {
	const flowJSON = `{"start": "greet", "nodes": {
	  "greet": {"type": "say", "text": "Thanks for calling Bright Smile.", "next": "ask"},
	  "ask": {"type": "ask", "text": "What day would suit you?",
	    "branches": [{"match": {"kind": "date"}, "capture": "date", "next": "bye"}]},
	  "bye": {"type": "end", "text": "Goodbye!", "success": true}}}`
	b := setup(t, func(o *setupOptions) {
		o.asst = func(a *assistant.Assistant) {
			a.FirstMessage = ""
			a.Model.Provider = "flow"
			a.Flow = json.RawMessage(flowJSON)
		}
		o.cfg = func(c *harnessConfig) { c.Brains = &conversation.Brains{} }
	})
	cl := b.dial(t, b.webCall())
	// The client sends nothing: the opening comes on its own.
	done := cl.expectTurn("Thanks for calling Bright Smile. What day would suit you?")
	if done.TurnID != "turn_1" {
		t.Errorf("the flow's opening is turn %s, want turn_1: it is the call's first message", done.TurnID)
	}
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)
}
