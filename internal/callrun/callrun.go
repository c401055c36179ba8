// Package callrun is the call runtime: it runs one answered call's
// conversation — and, when the call's line carries audio, its voice
// pipeline — over a telephony.Line, whatever provider or transport the line
// comes from (the sandbox persona, a SIP dialog, later a Twilio media
// stream). It keeps the live calls of this node so that they can be
// controlled (say, transfer) and stopped at shutdown.
//
// Ownership: a Line handed to Start belongs to the runtime, which ends the
// call through its Ender (the state machine) and hangs the line up. See
// docs/ARCHITECTURE.md, "Lines and the call runtime".
package callrun

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/recording"
	"switchboard/internal/telephony"
	"switchboard/internal/voice"
)

// Store is what the runtime reads and writes.
type Store interface {
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	conversation.TurnStore
}

// Config is the runtime's setup.
type Config struct {
	Store  Store
	Ender  conversation.Ender
	Brains *conversation.Brains
	// Voices gives audio calls their speech engines; nil means this
	// server runs no audio calls (an audio line then ends voice-failed).
	Voices voice.Voices
	// Observer watches the audio calls (metrics); may be nil.
	Observer voice.Observer
	// Recordings records the audio calls of assistants with recording on;
	// nil records nothing.
	Recordings *recording.Archive
	Log        *slog.Logger
}

// Runtime runs the answered calls of this node.
type Runtime struct {
	cfg Config

	mu      sync.Mutex
	stopped bool
	live    map[string]*run
	wg      sync.WaitGroup
}

// New returns a runtime.
func New(cfg Config) *Runtime {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Runtime{cfg: cfg, live: map[string]*run{}}
}

// run is one live call.
type run struct {
	call   call.Call
	line   telephony.Line
	in     chan conversation.Input
	done   chan struct{} // closed once the conversation has returned
	cancel context.CancelFunc
}

// inputBuffer bounds what the line and live control may queue for the
// conversation while it is busy.
const inputBuffer = 16

// Start runs answered call c over line and returns at once. It reports
// false, and takes nothing, when the runtime is stopping: the caller then
// hangs the line up and records the end (system-shutdown).
func (r *Runtime) Start(c call.Call, line telephony.Line) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return false
	}
	if _, dup := r.live[c.ID]; dup {
		// A provider reported the answer twice: the first line runs.
		r.cfg.Log.Warn("a second line for a live call was refused", "call_id", c.ID)
		return false
	}
	// The conversation's context is canceled by Stop (shutdown): it then
	// ends system-shutdown.
	ctx, cancel := context.WithCancel(context.Background())
	rn := &run{call: c, line: line, in: make(chan conversation.Input, inputBuffer), done: make(chan struct{}), cancel: cancel}
	r.live[c.ID] = rn
	// Started under r.mu, so that Stop, which sets stopped under r.mu
	// before its Wait, always waits for this call.
	r.wg.Go(func() {
		defer cancel()
		r.run(ctx, rn)
	})
	return true
}

// Ended is told that call c ended elsewhere (the API, housekeeping, another
// part of this node): its line is hung up and its conversation stops.
func (r *Runtime) Ended(c call.Call) {
	r.mu.Lock()
	rn := r.live[c.ID]
	r.mu.Unlock()
	if rn != nil {
		rn.send(conversation.Input{Kind: conversation.Hangup})
	}
}

// Stop ends every live call (each ends system-shutdown) and waits for them.
// Calls answered from now on are refused by Start.
func (r *Runtime) Stop() {
	r.mu.Lock()
	r.stopped = true
	for _, rn := range r.live {
		rn.cancel()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// Live is how many calls run on this node.
func (r *Runtime) Live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.live)
}

// get returns the live call id of organization orgID.
func (r *Runtime) get(orgID, callID string) (*run, error) {
	r.mu.Lock()
	rn := r.live[callID]
	r.mu.Unlock()
	if rn == nil || rn.call.OrgID != orgID {
		// The API checked that the call is the caller's and live: it runs
		// elsewhere (a web call's websocket session, another node).
		return nil, apperr.Conflictf("call %s is not run by this node's call runtime", callID)
	}
	return rn, nil
}

// End ends live call callID as the API asked (completed, api-ended-call):
// its conversation ends it, recording what it gathered, and End returns
// once the conversation has. ended is false when the call does not run
// here.
func (r *Runtime) End(ctx context.Context, orgID, callID string) (ended bool, err error) {
	rn, err := r.get(orgID, callID)
	if err != nil {
		return false, nil // not run here: the caller ends it
	}
	select {
	case rn.in <- conversation.Input{Kind: conversation.Hangup, Reason: call.ReasonAPIEnded}:
	case <-rn.done:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
	select {
	case <-rn.done:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Say makes the assistant of live call callID say text now: with
// interrupt it cuts short what the assistant is saying, else it follows
// the turn under way. The text becomes an assistant turn of the transcript.
func (r *Runtime) Say(ctx context.Context, orgID, callID, text string, interrupt bool) error {
	rn, err := r.get(orgID, callID)
	if err != nil {
		return err
	}
	select {
	case rn.in <- conversation.Input{Kind: conversation.Say, Text: text, Cut: interrupt}:
		return nil
	case <-rn.done:
		return apperr.Conflictf("call %s has ended", callID)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transfer hands live call callID to destination (cold). The line ends once
// the far side accepted, and the call ends completed
// assistant-transferred-call; a refusal is a Conflict and the call goes on.
func (r *Runtime) Transfer(ctx context.Context, orgID, callID, destination string) error {
	rn, err := r.get(orgID, callID)
	if err != nil {
		return err
	}
	if err := rn.line.Transfer(ctx, destination); err != nil {
		if errors.Is(err, telephony.ErrTransferRefused) {
			return apperr.Conflictf("the transfer to %s was refused: %v", destination, err)
		}
		return err
	}
	return nil
}

// send queues an input for the conversation unless it has returned.
func (rn *run) send(in conversation.Input) bool {
	select {
	case rn.in <- in:
		return true
	case <-rn.done:
		return false
	}
}

// hangupTimeout bounds hanging a line up when its call is over.
const hangupTimeout = 5 * time.Second

// run runs call rn until its conversation ends, then hangs the line up.
func (r *Runtime) run(ctx context.Context, rn *run) {
	c := rn.call
	log := r.cfg.Log.With("call_id", c.ID)
	defer func() {
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hangupTimeout)
		if err := rn.line.Hangup(hctx); err != nil {
			log.Debug("hanging the line up failed", "err", err)
		}
		cancel()
		r.mu.Lock()
		delete(r.live, c.ID)
		r.mu.Unlock()
	}()
	a, err := r.cfg.Store.GetAssistant(ctx, c.OrgID, c.AssistantID)
	if err != nil {
		r.fail(ctx, log, rn, "assistant", call.ReasonModelFailed, err)
		return
	}
	brain, err := r.cfg.Brains.New(ctx, c, a)
	if err != nil {
		r.fail(ctx, log, rn, "brain", call.ReasonModelFailed, err)
		return
	}
	// The line is the conversation's Control: the built-in sendDTMF and
	// transferCall tools and the flow nodes act on it.
	cfg := conversation.Config{Call: c, Assistant: a, Brain: brain, Turns: r.cfg.Store, Ender: r.cfg.Ender, Log: log, Control: rn.line}
	if rn.line.Format() == (audio.Format{}) {
		r.converse(ctx, cfg, rn, textOutput{rn.line}, nil, nil)
		return
	}
	if r.cfg.Voices == nil {
		r.fail(ctx, log, rn, "voice", call.ReasonVoiceFailed, errors.New("this server runs no speech engines"))
		return
	}
	stt, tts, err := r.cfg.Voices.For(a)
	if err != nil {
		r.fail(ctx, log, rn, "voice", call.ReasonVoiceFailed, err)
		return
	}
	f := rn.line.Format()
	watch := newMachine(c, a, f, rn.send, log)
	vcfg := voice.Settings(voice.Config{
		In: f, Out: f, Transcriber: stt, Synthesizer: tts,
		Input: rn.send, Log: log, Observer: r.cfg.Observer,
	}, a)
	if rec := r.record(c, a, log); rec != nil {
		// The recording is finished (in place, on the call) before the
		// call's end is recorded, or when the call stops another way.
		finish := func() { r.finishRecording(ctx, c, rec) }
		defer finish()
		vcfg.Recorder = rec
		cfg.Ender = recordingEnder{Ender: cfg.Ender, finish: finish}
	}
	pipe, err := voice.New(vcfg, lineOutput{line: rn.line, machine: watch})
	if err != nil {
		r.fail(ctx, log, rn, "voice", call.ReasonVoiceFailed, err)
		return
	}
	if watch != nil {
		watch.quiet = pipe.DisableBargeIn
	}
	r.converse(ctx, cfg, rn, pipe, pipe, watch)
}

// converse runs the conversation with out as its output while the line's
// Receive feeds it (and pipe, when the call has audio, runs alongside).
func (r *Runtime) converse(ctx context.Context, cfg conversation.Config, rn *run, out conversation.Output, pipe *voice.Pipeline, watch *machine) {
	lineCtx, stopLine := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopLine()
	defer close(rn.done)
	if pipe != nil {
		wg.Go(func() { _ = pipe.Run(lineCtx) })
	}
	wg.Go(func() {
		end := rn.line.Receive(lineCtx, &receiver{rn: rn, pipe: pipe, log: cfg.Log, machine: watch})
		if lineCtx.Err() != nil {
			return // the call is over here; the line's end is ours
		}
		rn.send(endInput(end))
	})
	conversation.Run(ctx, cfg, rn.in, out)
}

// endInput is the conversation's last input when the line ends on its own.
func endInput(e telephony.End) conversation.Input {
	if e.Fault() {
		return conversation.Input{Kind: conversation.Fail, Reason: e.Reason}
	}
	return conversation.Input{Kind: conversation.Hangup, Reason: e.Reason}
}

// fail ends a call whose conversation could not start because what failed
// failed with err. When shutdown canceled ctx meanwhile, nothing failed:
// the call ends completed/system-shutdown, as a conversation that shutdown
// cancels later does. If the end cannot be recorded either, housekeeping
// ends the call as lost later.
func (r *Runtime) fail(ctx context.Context, log *slog.Logger, rn *run, what, reason string, err error) {
	close(rn.done)
	outcome := call.Failed
	if ctx.Err() != nil {
		outcome, reason = call.Completed, call.ReasonSystemShutdown
	} else {
		log.Error("the call cannot start: "+what, "err", err)
	}
	if _, err := r.cfg.Ender.End(context.WithoutCancel(ctx), rn.call.ID, outcome, reason, call.Result{}); err != nil {
		log.Error("ending a call that cannot start failed", "err", err)
	}
}

// receiver takes what the caller sends over the line.
type receiver struct {
	rn      *run
	pipe    *voice.Pipeline // nil on text lines
	log     *slog.Logger
	machine *machine // nil unless the call is watched for a voicemail
}

func (rx *receiver) Audio(b []byte) {
	if rx.pipe == nil {
		return
	}
	rx.machine.audio(b)
	if err := rx.pipe.Write(b); err != nil {
		rx.log.Debug("caller audio refused", "err", err)
	}
}

func (rx *receiver) DTMF(digit byte) {
	rx.rn.send(conversation.Input{Kind: conversation.DTMF, Text: string(digit)})
}

func (rx *receiver) Text(s string) {
	rx.rn.send(conversation.Input{Kind: conversation.UserText, Text: s})
}

func (rx *receiver) Mark(turnID string, playedMs int64) {
	if rx.pipe != nil {
		rx.pipe.Mark(turnID, playedMs)
	}
}

// textOutput is the conversation's output on a text line.
type textOutput struct{ line telephony.Line }

func (textOutput) Delta(string, string)                    {}
func (textOutput) Transcript(string, string, string, bool) {}
func (textOutput) Ended(call.Outcome, string)              {}
func (o textOutput) TurnDone(_, text string, _ bool) {
	if tl, ok := o.line.(telephony.TextLine); ok {
		tl.Heard(text)
	}
}

// lineOutput is the voice pipeline's output on an audio line: the audio
// goes to the line, and the events to the line when it wants them.
type lineOutput struct {
	line    telephony.Line
	machine *machine // hears the callee's transcripts; nil unless watched
}

// AudioEvents is implemented by lines whose far end follows the audio
// (the sandbox persona's ear ends each heard turn on AudioDone or
// AudioClear; the web client is told everything).
type AudioEvents interface {
	SpeechStarted()
	SpeechStopped()
	AudioStart(turnID string)
	AudioDone(turnID string)
	AudioClear(turnID string, playedMs int64)
}

// A line that also implements conversation.Output is told the
// conversation's text events (deltas, transcripts, turns, the end).

func (o lineOutput) audio() (AudioEvents, bool) { e, ok := o.line.(AudioEvents); return e, ok }

func (o lineOutput) text() (conversation.Output, bool) {
	e, ok := o.line.(conversation.Output)
	return e, ok
}

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

func (o lineOutput) Ended(outcome call.Outcome, reason string) {
	if e, ok := o.text(); ok {
		e.Ended(outcome, reason)
	}
}

// recordingTimeout bounds finishing a recording (the file's last writes
// and the store).
const recordingTimeout = 10 * time.Second

// record starts the call's recording when its assistant wants one; nil
// when not (or when it cannot start: the call goes on unrecorded).
func (r *Runtime) record(c call.Call, a assistant.Assistant, log *slog.Logger) *recording.Recorder {
	if !a.Recording.Enabled || r.cfg.Recordings == nil {
		return nil
	}
	rec, err := r.cfg.Recordings.Start(c.OrgID, c.ID)
	if err != nil {
		log.Warn("the call's recording did not start; the call goes on unrecorded", "err", err)
		return nil
	}
	return rec
}

func (r *Runtime) finishRecording(ctx context.Context, c call.Call, rec *recording.Recorder) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordingTimeout)
	defer cancel()
	r.cfg.Recordings.Finish(ctx, c.OrgID, c.ID, rec)
}

// recordingEnder finishes the call's recording before its end is recorded,
// so that the ended call (and its call.ended webhook) has its recording.
type recordingEnder struct {
	conversation.Ender
	finish func()
}

func (e recordingEnder) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	e.finish()
	return e.Ender.End(ctx, callID, outcome, reason, result)
}
