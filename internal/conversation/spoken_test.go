package conversation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/internal/call"
)

// speakerRec is a speaking transport: on each TextDone it answers with
// what react returns for the turn (Played, Interrupt, or a caller input),
// as the voice pipeline would once the audio has played or been cut.
type speakerRec struct {
	*recorder
	in    chan Input
	react func(turnID, text string) []Input
	cuts  []string
}

func (s *speakerRec) TextDone(turnID, text string) bool {
	s.add("spoken " + turnID)
	for _, in := range s.react(turnID, text) {
		s.in <- in
	}
	return true
}

func (s *speakerRec) Cut(turnID, shown string) (string, *call.Breakdown) {
	s.cuts = append(s.cuts, turnID)
	return "Hel", nil
}

// truncBrain is a scriptBrain with a history to truncate.
type truncBrain struct {
	scriptBrain
	heard []string
}

func (b *truncBrain) Heard(text string) { b.heard = append(b.heard, text) }

func runSpoken(t *testing.T, b Brain, react func(turnID, text string) []Input, inputs ...Input) (*speakerRec, string) {
	t.Helper()
	s := &speakerRec{recorder: &recorder{}, in: make(chan Input, 16), react: react}
	for _, i := range inputs {
		s.in <- i
	}
	a := testAssistant()
	a.FirstMessage = ""
	reason := Run(t.Context(), Config{Call: call.Call{ID: "call_x", OrgID: "org_x"}, Assistant: a, Brain: b, Turns: s, Ender: s}, s.in, s)
	return s, reason
}

// TestSpokenTurnWaitsForPlayback: a spoken turn is finished (stored,
// announced) only when it has played, with its latency breakdown.
func TestSpokenTurnWaitsForPlayback(t *testing.T) {
	bd := &call.Breakdown{Total: 700 * time.Millisecond, Model: 200 * time.Millisecond}
	b := &scriptBrain{open: Reply{Text: "Hello there."}, replies: map[string]Reply{"bye": {Text: "Goodbye!", End: true}}}
	s, reason := runSpoken(t, b, func(turnID, text string) []Input {
		if turnID == "turn_1" {
			return []Input{{Kind: Activity}, {Kind: Played, TurnID: "turn_9"}, {Kind: Played, TurnID: turnID, Breakdown: bd}, {Kind: UserText, Text: "bye"}}
		}
		return []Input{{Kind: Played, TurnID: turnID}}
	})
	if reason != call.ReasonAssistantEnded {
		t.Fatalf("reason = %q", reason)
	}
	want := "spoken turn_1|done turn_1 Hello there.|transcript assistant Hello there.|transcript user bye|spoken turn_3|done turn_3 Goodbye!|transcript assistant Goodbye!|ended completed assistant-ended-call"
	if got := strings.Join(s.events, "|"); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if s.turns[0].Breakdown != bd || s.turns[0].Latency != bd.Total || s.turns[0].Interrupted {
		t.Errorf("first turn = %+v, want the breakdown and latency %v", s.turns[0], bd.Total)
	}
}

// TestSpokenTurnInterrupted: a barge-in stores only what was heard, marks
// the turn interrupted, truncates the brain's history, and the caller's
// words are answered next.
func TestSpokenTurnInterrupted(t *testing.T) {
	b := &truncBrain{scriptBrain: scriptBrain{open: Reply{Text: "Hello there, how are you today?"}, replies: map[string]Reply{"stop": {Text: "Okay."}}}}
	s, _ := runSpoken(t, b, func(turnID, text string) []Input {
		if turnID == "turn_1" {
			return []Input{{Kind: Interrupt, TurnID: turnID, Text: "Hello there,"}, {Kind: UserText, Text: "stop"}}
		}
		return []Input{{Kind: Played, TurnID: turnID}, {Kind: Hangup}}
	})
	if s.turns[0].Text != "Hello there," || !s.turns[0].Interrupted {
		t.Errorf("interrupted turn stored as %+v", s.turns[0])
	}
	if len(b.heard) != 1 || b.heard[0] != "Hello there," {
		t.Errorf("brain heard %q", b.heard)
	}
	if s.turns[1].Text != "stop" || s.turns[2].Text != "Okay." {
		t.Errorf("turns after the barge-in = %+v", s.turns[1:])
	}
}

// TestSpokenTurnCut: a caller typing while a turn plays cuts it (the
// speaker says what was heard), and a voice failure ends the call with its reason.
func TestSpokenTurnCut(t *testing.T) {
	b := &scriptBrain{open: Reply{Text: "Hello there."}, replies: map[string]Reply{"hi": {Text: "Hi!"}}}
	s, reason := runSpoken(t, b, func(turnID, text string) []Input {
		if turnID == "turn_1" {
			return []Input{{Kind: UserText, Text: "hi"}}
		}
		return []Input{{Kind: Fail, Reason: call.ReasonVoiceFailed}}
	})
	if len(s.cuts) < 1 || s.cuts[0] != "turn_1" || s.turns[0].Text != "Hel" || !s.turns[0].Interrupted {
		t.Errorf("cuts %v, first turn %+v: want turn_1 cut to what was heard", s.cuts, s.turns[0])
	}
	if reason != call.ReasonVoiceFailed || s.outcome != call.Failed {
		t.Errorf("reason %q outcome %q, want failed %s", reason, s.outcome, call.ReasonVoiceFailed)
	}
}

// TestSpokenMissed: an utterance speech recognition lost (Missed) while
// the assistant waits for the caller makes it ask again, as a turn the
// brain is told of; one lost while a turn plays changes nothing.
func TestSpokenMissed(t *testing.T) {
	b := &scriptBrain{open: Reply{Text: "What day would suit you?"}, replies: map[string]Reply{"tuesday": {Text: "Tuesday it is."}}}
	s, _ := runSpoken(t, b, func(turnID, text string) []Input {
		switch turnID {
		case "turn_1": // lost over the question: the question plays on
			return []Input{{Kind: Missed}, {Kind: Played, TurnID: turnID}, {Kind: Missed}}
		case "turn_2": // the ask again
			return []Input{{Kind: Played, TurnID: turnID}, {Kind: UserText, Text: "tuesday"}}
		}
		return []Input{{Kind: Played, TurnID: turnID}, {Kind: Hangup}}
	})
	want := "spoken turn_1|done turn_1 What day would suit you?|transcript assistant What day would suit you?|" +
		"spoken turn_2|done turn_2 " + MissedPrompt + "|transcript assistant " + MissedPrompt + "|" +
		"transcript user tuesday|spoken turn_4|done turn_4 Tuesday it is.|transcript assistant Tuesday it is.|ended completed customer-ended-call"
	if got := strings.Join(s.events, "|"); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if len(b.said) != 1 || b.said[0] != MissedPrompt {
		t.Errorf("brain was told %q, want the ask again", b.said)
	}
}

// TestSpokenTurnCutUnheard: a turn cut before any of it was heard is still
// a transcript line — empty, interrupted — so seq has no gap.
func TestSpokenTurnCutUnheard(t *testing.T) {
	b := &scriptBrain{open: Reply{Text: "Hello there, how are you today?"}, replies: map[string]Reply{"stop": {Text: "Okay."}}}
	s, _ := runSpoken(t, b, func(turnID, text string) []Input {
		if turnID == "turn_1" {
			return []Input{{Kind: Interrupt, TurnID: turnID, Text: ""}, {Kind: UserText, Text: "stop"}}
		}
		return []Input{{Kind: Played, TurnID: turnID}, {Kind: Hangup}}
	})
	var got []string
	for _, tr := range s.turns {
		got = append(got, fmt.Sprintf("%d %s %q interrupted=%v", tr.Seq, tr.Role, tr.Text, tr.Interrupted))
	}
	want := []string{`1 assistant "" interrupted=true`, `2 user "stop" interrupted=false`, `3 assistant "Okay." interrupted=false`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("turns:\n got %q\nwant %q", got, want)
	}
	if ev := strings.Join(s.events, "|"); !strings.HasPrefix(ev, "spoken turn_1|done turn_1 |transcript assistant |") {
		t.Errorf("events %s: want turn_1 done and its (empty) transcript line first", ev)
	}
}
