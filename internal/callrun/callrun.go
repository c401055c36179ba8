// Package callrun is the call runtime: it runs one answered call's
// conversation — and, when the call's line carries audio, its voice
// pipeline — over a telephony.Line, whatever provider or transport the line
// comes from (the web gateway's websocket session, the sandbox persona, a
// SIP dialog, a Twilio media stream). It keeps the live calls of this node
// so that they can be controlled (end, say, transfer) and stopped at
// shutdown.
//
// Ownership: a Line handed to Start belongs to the runtime, which ends the
// call through its Ender (the state machine) and hangs the line up. See
// docs/ARCHITECTURE.md, "Lines and the call runtime".
package callrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/recording"
	"switchboard/internal/routing"
	"switchboard/internal/telephony"
	"switchboard/internal/vars"
	"switchboard/internal/voice"
)

// Store is what the runtime reads and writes.
type Store interface {
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	conversation.TurnStore
}

// Brains makes the reply engine of a call's assistant (a flow or a model);
// conversation.Brains does.
type Brains interface {
	New(ctx context.Context, c call.Call, a assistant.Assistant) (conversation.Brain, error)
}

// Config is the runtime's setup.
type Config struct {
	Store  Store
	Ender  conversation.Ender
	Brains Brains
	// Voices gives audio calls their speech engines; nil means this
	// server runs no audio calls (an audio line then ends voice-failed, a
	// web client asking for audio is refused).
	Voices voice.Voices
	// Observer watches the audio calls (metrics); may be nil.
	Observer voice.Observer
	// Recordings records the audio calls of assistants with recording on;
	// nil records nothing.
	Recordings *recording.Archive
	// Now is the clock of conversations and pipelines; nil means time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Runtime runs the answered calls of this node.
type Runtime struct {
	cfg Config

	mu      sync.Mutex
	stopped bool
	live    map[string]*run
	wg      sync.WaitGroup
	panics  atomic.Int64
}

// New returns a runtime.
func New(cfg Config) *Runtime {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Runtime{cfg: cfg, live: map[string]*run{}}
}

// run is one live call.
type run struct {
	call call.Call
	line telephony.Line
	caps telephony.Capabilities // the line's, read once
	out  *output
	in   chan conversation.Input
	// done is closed once the conversation has returned (or could not
	// start); closeDone closes it once.
	done     chan struct{}
	doneOnce sync.Once
	cancel   context.CancelFunc
	// ending is set once the conversation is ending the call itself: an
	// Ended notice for the call is then its own, not a reason to stop.
	ending atomic.Bool
	// endAsked is taken by the first API end of the call (End): only that
	// request's hangup reaches the conversation, so only it can be the
	// end the record holds.
	endAsked atomic.Bool
	// final is the end the conversation recorded, set once by runEnder
	// before recorded is closed.
	final        finalEnd
	recorded     chan struct{}
	recordedOnce sync.Once

	// mu guards the audio side, which a web line turns on mid-call.
	mu       sync.Mutex
	closed   bool // the conversation has returned: no pipeline may start
	recorder *recording.Recorder
	finished bool // the recording has been finished
}

func (rn *run) closeDone() { rn.doneOnce.Do(func() { close(rn.done) }) }

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
	// The conversation's context is canceled by Stop (shutdown), Cancel
	// and Ended: it then ends system-shutdown, or as its record says.
	ctx, cancel := context.WithCancel(context.Background())
	rn := &run{call: c, line: line, caps: line.Capabilities(), out: &output{line: line}, in: make(chan conversation.Input, inputBuffer), done: make(chan struct{}),
		recorded: make(chan struct{}), cancel: cancel}
	r.live[c.ID] = rn
	// Started under r.mu, so that Stop, which sets stopped under r.mu
	// before its Wait, always waits for this call.
	r.wg.Go(func() {
		defer cancel()
		r.run(ctx, rn)
	})
	return true
}

// Ended is told that call c ended, wherever that happened. A call that
// ended outside its own conversation (the API, housekeeping, another part
// of this node) stops at once: its line is hung up, and a line that is
// hears the record's outcome and reason (Listener.CallEnded).
// It does not block.
func (r *Runtime) Ended(c call.Call) { r.Cancel(c.ID) }

// Cancel stops live call callID's conversation now, as shutdown does: the
// call ends system-shutdown, unless it has already ended, in which case its
// line hears the recorded end. A call that is ending itself is left alone.
// It does not block.
func (r *Runtime) Cancel(callID string) {
	r.mu.Lock()
	rn := r.live[callID]
	r.mu.Unlock()
	if rn != nil && !rn.ending.Load() {
		rn.cancel()
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

// Panics is how many panics the runtime recovered (each failed its call,
// system-error).
func (r *Runtime) Panics() int64 { return r.panics.Load() }

// get returns the live call id of organization orgID.
func (r *Runtime) get(orgID, callID string) (*run, error) {
	r.mu.Lock()
	rn := r.live[callID]
	r.mu.Unlock()
	if rn == nil || rn.call.OrgID != orgID {
		// The API checked that the call is the caller's and live: it runs
		// elsewhere (another node, or it is not answered yet).
		return nil, apperr.Conflictf("call %s is not run by this node's call runtime", callID)
	}
	return rn, nil
}

// End ends live call callID as the API asked (completed, api-ended-call):
// its conversation ends it, recording what it gathered, and End returns
// once the end is recorded. ended is false, with a nil error, when the
// call does not run here (the caller ends it).
//
// Of the ends asked of one call, concurrent or not, exactly one reports
// ended: the first asks the conversation to hang up, and it reports
// ended only if the record holds that end (the conversation's end was
// the transition to ended, with api-ended-call). Every other end, and
// the first when the call ended another way first (the caller hung up,
// another node's end), waits for the record and is a Conflict naming the
// call's outcome and endedReason.
func (r *Runtime) End(ctx context.Context, orgID, callID string) (ended bool, err error) {
	rn, err := r.get(orgID, callID)
	if err != nil {
		return false, nil // not run here: the caller ends it
	}
	first := rn.endAsked.CompareAndSwap(false, true)
	if first {
		// Not bounded by ctx: a claim given up before its hangup is sent
		// would leave the other ends waiting for an end nobody asked.
		// The conversation reads its inputs while it runs, and done
		// closes when it returns.
		select {
		case rn.in <- conversation.Input{Kind: conversation.Hangup, Reason: call.ReasonAPIEnded}:
		case <-rn.done:
		}
	}
	select {
	case <-rn.recorded:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	f := rn.final
	switch {
	case f.err != nil:
		return false, f.err
	case first && f.recorded && f.reason == call.ReasonAPIEnded:
		return true, nil
	}
	return false, apperr.Conflictf("call %s has already ended (%s, %s)", callID, f.call.Outcome, f.call.EndedReason)
}

// finalEnd is the end a call's conversation recorded: the record, and
// whether this end was the transition to ended (recorded) with reason.
type finalEnd struct {
	call     call.Call
	reason   string
	recorded bool
	err      error
}

// OnceEnder is an Ender that also says whether its end is the one the
// record holds (callctl.Service.EndOnce): recorded is false when the call
// had ended already. With a plain Ender, an end counts as recorded when
// the record it returns is ended with its outcome and reason.
type OnceEnder interface {
	EndOnce(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (c call.Call, recorded bool, err error)
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
	if !rn.caps.Transfer {
		return apperr.Conflictf("call %s is a %s call: it has no phone line to transfer", callID, rn.call.Type)
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
	// A panic anywhere in the conversation fails this call, not the node.
	defer r.recoverCall(ctx, log, rn)
	a, err := r.cfg.Store.GetAssistant(ctx, c.OrgID, c.AssistantID)
	if err != nil {
		r.fail(ctx, log, rn, "assistant", call.ReasonModelFailed, err)
		return
	}
	// The assistant's texts are templates of the call's variables
	// (package vars); a flow renders its own as it runs.
	values := vars.Running(c.Variables, r.cfg.Now())
	if fm := routing.ParseRecord(c.Routing).FirstMessage; fm != "" {
		a.FirstMessage = fm // the routing endpoint's override for this call
	}
	a = a.Render(values)
	if m, _ := values["message"].(string); strings.TrimSpace(a.FirstMessage) == "" && c.Direction == call.Outbound && m != "" {
		// The seed's message opens an outbound call whose assistant has
		// no firstMessage of its own (docs/api.md, "Variables").
		a.FirstMessage = m
	}
	brain, err := r.cfg.Brains.New(ctx, c, a)
	if err != nil {
		r.fail(ctx, log, rn, "brain", call.ReasonModelFailed, err)
		return
	}
	// The line is the conversation's Control, when it has one: the
	// built-in sendDTMF and transferCall tools and the flow nodes act on it.
	cfg := conversation.Config{Call: c, Assistant: a, Brain: brain, Turns: r.cfg.Store, Log: log, Now: r.cfg.Now,
		Control: control(rn.line, rn.caps), Ender: runEnder{r: r, rn: rn}}
	r.converse(ctx, cfg, rn)
}

// converse runs the conversation while the line's Receive feeds it, with
// the voice pipeline alongside once the line carries audio (from the
// start, or from when a web client turns it on).
func (r *Runtime) converse(ctx context.Context, cfg conversation.Config, rn *run) {
	lineCtx, stopLine := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopLine()
	defer func() {
		rn.mu.Lock()
		rn.closed = true // no pipeline starts once wg may be waited on
		rn.mu.Unlock()
		rn.closeDone()
	}()
	start := func(f audio.Format) error { return r.startAudio(lineCtx, &wg, cfg, rn, f) }
	if f := rn.line.Format(); f != (audio.Format{}) {
		if err := start(f); err != nil {
			r.fail(ctx, cfg.Log, rn, "voice", call.ReasonVoiceFailed, err)
			return
		}
	}
	wg.Go(func() {
		end := rn.line.Receive(lineCtx, &receiver{rn: rn, start: start, log: cfg.Log})
		if lineCtx.Err() != nil {
			return // the call is over here; the line's end is ours
		}
		rn.send(endInput(end))
	})
	if ready := rn.caps.Ready; ready != nil {
		// The first message waits until the far end is ready for it (a
		// web client that turns audio on as it connects hears it).
		select {
		case <-ready:
		case <-ctx.Done():
		}
	}
	conversation.Run(ctx, cfg, rn.in, rn.out)
}

// startAudio turns the call's audio on in format f: its speech engines,
// recording, voicemail watcher and voice pipeline, whose goroutine joins
// wg and lives within ctx (the line's). It fails when the call has no
// speech engines or the conversation has returned.
func (r *Runtime) startAudio(ctx context.Context, wg *sync.WaitGroup, cfg conversation.Config, rn *run, f audio.Format) error {
	if r.cfg.Voices == nil {
		return errors.New("this server runs no speech engines")
	}
	stt, tts, err := r.cfg.Voices.For(cfg.Assistant)
	if err != nil {
		return err
	}
	c, a, log := rn.call, cfg.Assistant, cfg.Log
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.closed {
		return errors.New("the call is over")
	}
	if rn.out.voice() != nil {
		return errors.New("the call's audio is already on")
	}
	watch := newAMDWatch(c, a, f, rn.send, log)
	var machineNow bool // the provider found a machine: leave the message
	if amd := rn.caps.AMD; amd.Ran {
		watch = nil
		machineNow = amd.Machine && c.Direction == call.Outbound && a.Voicemail.Detect && a.Voicemail.LeavesMessage()
	}
	vcfg := voice.Settings(voice.Config{
		In: f, Out: f, Transcriber: stt, Synthesizer: tts,
		Input: rn.send, Log: log, Observer: r.cfg.Observer, Now: r.cfg.Now,
	}, a)
	rec := r.record(c, a, log)
	if rec != nil {
		vcfg.Recorder = rec
	}
	pipe, err := voice.New(vcfg, lineOutput{line: rn.line, watch: watch})
	if err != nil {
		if rec != nil {
			_ = rec.Close()
		}
		return err
	}
	rn.recorder = rec
	if watch != nil {
		watch.quiet = pipe.DisableBargeIn
	}
	rn.out.setVoice(pipe, watch)
	if machineNow {
		// A machine records: its noise must not cut the message. Queued
		// now, the message cuts the first message as it starts.
		log.Info("voicemail detection (the provider's): leaving the message")
		pipe.DisableBargeIn()
		wg.Go(func() {
			rn.send(conversation.Input{Kind: conversation.Say, Text: a.Voicemail.Message, Cut: true, Outcome: call.Voicemail, Reason: call.ReasonCustomerVoicemail})
		})
	}
	wg.Go(func() {
		defer r.recoverSide(log, rn, "voice")
		if err := pipe.Run(ctx); err != nil && ctx.Err() == nil {
			log.Warn("the voice pipeline stopped", "err", err)
		}
		// Finished in place, on the call, before the call's end is
		// recorded (runEnder) or when the call stops another way.
		r.finishRecording(ctx, rn)
	})
	return nil
}

// endInput is the conversation's last input when the line ends on its own.
func endInput(e telephony.End) conversation.Input {
	if e.Fault() {
		return conversation.Input{Kind: conversation.Fail, Reason: e.Reason}
	}
	return conversation.Input{Kind: conversation.Hangup, Reason: e.Reason}
}

// fail ends a call whose conversation could not start because what failed
// failed with err, and tells the line. When shutdown canceled ctx
// meanwhile, nothing failed: the call ends completed/system-shutdown, as a
// conversation that shutdown cancels later does. If the end cannot be
// recorded either, housekeeping ends the call as lost later.
func (r *Runtime) fail(ctx context.Context, log *slog.Logger, rn *run, what, reason string, err error) {
	rn.closeDone()
	outcome := call.Failed
	if ctx.Err() != nil {
		outcome, reason = call.Completed, call.ReasonSystemShutdown
	} else {
		log.Error("the call cannot go on: "+what, "err", err)
	}
	if _, err := (runEnder{r: r, rn: rn}).End(context.WithoutCancel(ctx), rn.call.ID, outcome, reason, call.Result{}); err != nil {
		log.Error("ending the call failed", "err", err)
	}
	rn.out.Ended(outcome, reason)
}

// recoverCall, deferred in the call's goroutine, turns a panic of its
// conversation into the call's failure (system-error) instead of the
// node's.
func (r *Runtime) recoverCall(ctx context.Context, log *slog.Logger, rn *run) {
	if p := recover(); p != nil {
		r.panicked(log, "conversation", p)
		r.fail(context.WithoutCancel(ctx), log, rn, "panic", call.ReasonSystemError, fmt.Errorf("panic: %v", p))
	}
}

// recoverSide, deferred in one of a call's other goroutines (its voice
// pipeline), fails the call through its conversation, which ends it.
func (r *Runtime) recoverSide(log *slog.Logger, rn *run, what string) {
	if p := recover(); p != nil {
		r.panicked(log, what, p)
		rn.send(conversation.Input{Kind: conversation.Fail, Reason: call.ReasonSystemError})
	}
}

func (r *Runtime) panicked(log *slog.Logger, what string, p any) {
	r.panics.Add(1)
	log.Error("panic in a call; failing the call", "goroutine", what, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// runEnder ends the call for its conversation: it marks the call as ending
// itself, finishes the recording first (so that the ended call, and its
// call.ended webhook, has it), and keeps the record the end returned, so
// that the line hears what the record says (output.Ended).
type runEnder struct {
	r  *Runtime
	rn *run
}

func (e runEnder) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	e.rn.ending.Store(true)
	e.r.finishRecording(ctx, e.rn)
	var (
		c        call.Call
		recorded bool
		err      error
	)
	if o, ok := e.r.cfg.Ender.(OnceEnder); ok {
		c, recorded, err = o.EndOnce(ctx, callID, outcome, reason, result)
	} else {
		c, err = e.r.cfg.Ender.End(ctx, callID, outcome, reason, result)
		recorded = err == nil && c.Status == call.Ended && c.Outcome == outcome && c.EndedReason == reason
	}
	if err == nil && c.Status == call.Ended {
		e.rn.out.recorded(c)
	}
	// The first end of the conversation is the one End reports on.
	e.rn.recordedOnce.Do(func() {
		e.rn.final = finalEnd{call: c, reason: reason, recorded: recorded, err: err}
		close(e.rn.recorded)
	})
	return c, err
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

// finishRecording puts rn's recording in place and on the call, once.
func (r *Runtime) finishRecording(ctx context.Context, rn *run) {
	rn.mu.Lock()
	rec := rn.recorder
	if rec == nil || rn.finished {
		rn.mu.Unlock()
		return
	}
	rn.finished = true
	rn.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordingTimeout)
	defer cancel()
	r.cfg.Recordings.Finish(ctx, rn.call.OrgID, rn.call.ID, rec)
}

// receiver takes what the caller sends over the line; StartAudio turns a
// text call's audio on (a web client's session.update).
type receiver struct {
	rn    *run
	start func(audio.Format) error
	log   *slog.Logger
}

func (rx *receiver) Audio(b []byte) {
	pipe, watch := rx.rn.out.voiceAndWatch()
	if pipe == nil {
		return
	}
	watch.audio(b)
	if err := pipe.Write(b); err != nil {
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
	if pipe := rx.rn.out.voice(); pipe != nil {
		pipe.Mark(turnID, playedMs)
	}
}

func (rx *receiver) StartAudio(f audio.Format) error { return rx.start(f) }

var _ telephony.Receiver = (*receiver)(nil)
