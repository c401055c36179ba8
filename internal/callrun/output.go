package callrun

import (
	"context"
	"sync"

	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/telephony"
	"switchboard/internal/voice"
)

// control is the conversation's Control on a line with capabilities caps:
// none when the line has neither a keypad nor transfer (a web call), so
// that models are not offered sendDTMF and transferCall; the line itself
// when it has both; otherwise the line with the missing one refused.
func control(line telephony.Line, caps telephony.Capabilities) conversation.Control {
	switch {
	case caps.Keypad && caps.Transfer:
		return line
	case !caps.Keypad && !caps.Transfer:
		return nil
	}
	return partialControl{line: line, caps: caps}
}

// partialControl is the Control of a line with a keypad or transfer, not
// both.
type partialControl struct {
	line telephony.Line
	caps telephony.Capabilities
}

func (c partialControl) SendDTMF(ctx context.Context, digits string) error {
	if !c.caps.Keypad {
		return conversation.ErrNoControl
	}
	return c.line.SendDTMF(ctx, digits)
}

func (c partialControl) Transfer(ctx context.Context, destination string) error {
	if !c.caps.Transfer {
		return conversation.ErrNoControl
	}
	return c.line.Transfer(ctx, destination)
}

// output is the conversation's Output for one call. Until the call has
// audio, text goes to the line as text; once it has, the voice pipeline
// speaks the turns and sends their events on as they are played (through
// lineOutput).
type output struct {
	line telephony.Line

	mu        sync.Mutex
	pipe      *voice.Pipeline
	watch     *amdWatch // the answering-machine watcher; nil unless the call is watched
	expecting []string  // the last expected answers, for a pipeline that starts later
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

func (o *output) voiceAndWatch() (*voice.Pipeline, *amdWatch) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pipe, o.watch
}

// setVoice turns the output over to pipe, which hears what the
// conversation expects next.
func (o *output) setVoice(pipe *voice.Pipeline, watch *amdWatch) {
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

func (o *output) Delta(turnID, text string) {
	if p := o.voice(); p != nil {
		p.Delta(turnID, text)
		return
	}
	o.line.Delta(turnID, text)
}

func (o *output) TurnDone(turnID, text string, interrupted bool) {
	if p := o.voice(); p != nil {
		p.TurnDone(turnID, text, interrupted)
		return
	}
	o.line.TurnDone(turnID, text, interrupted)
}

func (o *output) Transcript(role, text, turnID string, final bool) {
	if p := o.voice(); p != nil {
		p.Transcript(role, text, turnID, final) // through lineOutput, which the watcher hears
		return
	}
	o.line.Transcript(role, text, turnID, final)
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
	o.line.CallEnded(outcome, reason, elsewhere)
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

// lineOutput is the voice pipeline's output: the audio and the events go
// to the line (and the callee's transcripts to the voicemail watcher).
type lineOutput struct {
	line  telephony.Line
	watch *amdWatch // hears the callee's transcripts; nil unless watched
}

var _ voice.Output = lineOutput{}

func (o lineOutput) Audio(frame []byte) error { return o.line.Write(frame) }

func (o lineOutput) AudioClear(turnID string, playedMs int64) {
	o.line.Clear()
	o.line.AudioClear(turnID, playedMs)
}

func (o lineOutput) SpeechStarted()           { o.line.SpeechStarted() }
func (o lineOutput) SpeechStopped()           { o.line.SpeechStopped() }
func (o lineOutput) AudioStart(turnID string) { o.line.AudioStart(turnID) }
func (o lineOutput) AudioDone(turnID string)  { o.line.AudioDone(turnID) }

func (o lineOutput) AudioPause(turnID string, playedMs int64) {
	o.line.AudioPause(turnID, playedMs)
}

func (o lineOutput) AudioResume(turnID string, playedMs int64) {
	o.line.AudioResume(turnID, playedMs)
}

func (o lineOutput) Delta(turnID, text string) { o.line.Delta(turnID, text) }

func (o lineOutput) TurnDone(turnID, text string, interrupted bool) {
	o.line.TurnDone(turnID, text, interrupted)
}

func (o lineOutput) Transcript(role, text, turnID string, final bool) {
	if role == call.RoleUser {
		o.watch.transcript(text)
	}
	o.line.Transcript(role, text, turnID, final)
}

// Ended is never called: the conversation's end reaches the line through
// output.Ended, with the record's outcome.
func (o lineOutput) Ended(call.Outcome, string) {}
