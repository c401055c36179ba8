package callrun

import (
	"sync"

	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/telephony"
	"switchboard/internal/voice"
)

// What a line may implement beyond telephony.Line, to be told more of the
// call. Each is optional: the runtime type-asserts the line.

// AudioEvents is implemented by lines whose far end follows the audio
// (the sandbox persona's ear ends each heard turn on AudioDone or
// AudioClear; the web client is told everything; a Twilio stream marks
// each turn's audio).
type AudioEvents interface {
	SpeechStarted()
	SpeechStopped()
	AudioStart(turnID string)
	AudioDone(turnID string)
	AudioClear(turnID string, playedMs int64)
}

// TextEvents is implemented by lines whose far end sees the conversation
// as text (the web client: deltas, finished turns, transcripts).
type TextEvents interface {
	Delta(turnID, text string)
	TurnDone(turnID, text string, interrupted bool)
	Transcript(role, text, turnID string, final bool)
}

// Ending is implemented by lines told how their call ended (the web
// gateway sends call.ended and picks its close code). outcome and reason
// are the call record's; elsewhere reports that the call was found ended
// by something other than its conversation (housekeeping, another node).
type Ending interface {
	CallEnded(outcome call.Outcome, reason string, elsewhere bool)
}

// Opening is implemented by lines whose far end must be ready before the
// assistant's first message: the conversation starts once Opened is
// closed (the web gateway closes it on the client's first frame, or after
// a short grace).
type Opening interface {
	Opened() <-chan struct{}
}

// Controls is implemented by lines that may have no keypad or transfer
// (web calls): when it reports false the conversation gets no Control, so
// models are not offered sendDTMF and transferCall, and transfers through
// the API are refused.
type Controls interface {
	Controls() bool
}

// MachineDetector is implemented by lines whose provider detects
// answering machines itself (Twilio's AMD): ran reports that it did for
// this call, and the runtime then runs no detector of its own; machine
// reports that a machine answered, and an assistant whose voicemail action
// is leaveMessage leaves its message at once (the provider waited for the
// greeting to end), then the call ends voicemail.
type MachineDetector interface {
	AnsweredBy() (ran, machine bool)
}

// control is the conversation's Control on line: the line, unless it says
// it has none.
func control(line telephony.Line) conversation.Control {
	if c, ok := line.(Controls); ok && !c.Controls() {
		return nil
	}
	return line
}

// output is the conversation's Output for one call. Until the call has
// audio, text goes to the line as text (TextEvents; a TextLine hears each
// finished turn); once it has, the voice pipeline speaks the turns and
// sends their events on (through lineOutput).
type output struct {
	line telephony.Line

	mu        sync.Mutex
	pipe      *voice.Pipeline
	watch     *machine // the voicemail watcher; nil unless the call is watched
	expecting []string // the last expected answers, for a pipeline that starts later
	record    *call.Call
}

var (
	_ conversation.Output   = (*output)(nil)
	_ conversation.Speaker  = (*output)(nil)
	_ conversation.Expecter = (*output)(nil)
)

func (o *output) voice() *voice.Pipeline {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pipe
}

func (o *output) voiceAndMachine() (*voice.Pipeline, *machine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pipe, o.watch
}

// setVoice turns the output over to pipe, which hears what the
// conversation expects next.
func (o *output) setVoice(pipe *voice.Pipeline, watch *machine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pipe, o.watch = pipe, watch
	if o.expecting != nil {
		pipe.Expect(o.expecting)
	}
}

// recorded keeps the record the call's end returned.
func (o *output) recorded(c call.Call) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.record = &c
}

func (o *output) text() TextEvents {
	t, _ := o.line.(TextEvents)
	return t
}

func (o *output) Delta(turnID, text string) {
	if p := o.voice(); p != nil {
		p.Delta(turnID, text)
		return
	}
	if t := o.text(); t != nil {
		t.Delta(turnID, text)
	}
}

func (o *output) TurnDone(turnID, text string, interrupted bool) {
	if p := o.voice(); p != nil {
		p.TurnDone(turnID, text, interrupted)
		return
	}
	if t := o.text(); t != nil {
		t.TurnDone(turnID, text, interrupted)
	}
	if tl, ok := o.line.(telephony.TextLine); ok {
		tl.Heard(text)
	}
}

func (o *output) Transcript(role, text, turnID string, final bool) {
	if p := o.voice(); p != nil {
		p.Transcript(role, text, turnID, final) // through lineOutput, which the watcher hears
		return
	}
	if t := o.text(); t != nil {
		t.Transcript(role, text, turnID, final)
	}
}

// Ended tells the line how the call ended: as the record says, which
// differs from what the conversation decided when the call had ended
// elsewhere first.
func (o *output) Ended(outcome call.Outcome, reason string) {
	o.mu.Lock()
	rec := o.record
	o.mu.Unlock()
	elsewhere := false
	if rec != nil && (rec.Outcome != outcome || rec.EndedReason != reason) {
		outcome, reason, elsewhere = rec.Outcome, rec.EndedReason, true
	}
	if e, ok := o.line.(Ending); ok {
		e.CallEnded(outcome, reason, elsewhere)
	}
}

// TextDone implements conversation.Speaker: a turn is spoken once the call
// has audio.
func (o *output) TextDone(turnID, text string) bool {
	if p := o.voice(); p != nil {
		return p.TextDone(turnID, text)
	}
	return false
}

// Cut implements conversation.Speaker.
func (o *output) Cut(turnID, shown string) (string, *call.Breakdown) {
	if p := o.voice(); p != nil {
		return p.Cut(turnID, shown)
	}
	return shown, nil
}

// Expect implements conversation.Expecter.
func (o *output) Expect(answers []string) {
	o.mu.Lock()
	p := o.pipe
	o.expecting = answers
	o.mu.Unlock()
	if p != nil {
		p.Expect(answers)
	}
}

// lineOutput is the voice pipeline's output: the audio goes to the line,
// and the events to the line when it wants them.
type lineOutput struct {
	line    telephony.Line
	machine *machine // hears the callee's transcripts; nil unless watched
}

var (
	_ voice.Output = lineOutput{}
	_ voice.Pauser = lineOutput{}
)

func (o lineOutput) audio() (AudioEvents, bool) { e, ok := o.line.(AudioEvents); return e, ok }

func (o lineOutput) text() (TextEvents, bool) { e, ok := o.line.(TextEvents); return e, ok }

func (o lineOutput) Audio(frame []byte) error { return o.line.Write(frame) }

func (o lineOutput) AudioClear(turnID string, playedMs int64) {
	o.line.Clear()
	if e, ok := o.audio(); ok {
		e.AudioClear(turnID, playedMs)
	}
}

func (o lineOutput) SpeechStarted() {
	if e, ok := o.audio(); ok {
		e.SpeechStarted()
	}
}

func (o lineOutput) SpeechStopped() {
	if e, ok := o.audio(); ok {
		e.SpeechStopped()
	}
}

func (o lineOutput) AudioStart(turnID string) {
	if e, ok := o.audio(); ok {
		e.AudioStart(turnID)
	}
}

func (o lineOutput) AudioDone(turnID string) {
	if e, ok := o.audio(); ok {
		e.AudioDone(turnID)
	}
}

// AudioPause and AudioResume reach lines whose far end buffers audio
// (voice.Pauser: the web client stops its own buffer too).
func (o lineOutput) AudioPause(turnID string, playedMs int64) {
	if p, ok := o.line.(voice.Pauser); ok {
		p.AudioPause(turnID, playedMs)
	}
}

func (o lineOutput) AudioResume(turnID string, playedMs int64) {
	if p, ok := o.line.(voice.Pauser); ok {
		p.AudioResume(turnID, playedMs)
	}
}

func (o lineOutput) Delta(turnID, text string) {
	if e, ok := o.text(); ok {
		e.Delta(turnID, text)
	}
}

func (o lineOutput) TurnDone(turnID, text string, interrupted bool) {
	if e, ok := o.text(); ok {
		e.TurnDone(turnID, text, interrupted)
	}
}

func (o lineOutput) Transcript(role, text, turnID string, final bool) {
	if role == call.RoleUser {
		o.machine.transcript(text)
	}
	if e, ok := o.text(); ok {
		e.Transcript(role, text, turnID, final)
	}
}

// Ended is never called: the conversation's end reaches the line through
// output.Ended, with the record's outcome.
func (o lineOutput) Ended(call.Outcome, string) {}
