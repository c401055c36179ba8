// Package conversation is the engine every call runs: one goroutine per
// call owns the dialogue, takes the caller's turns as text (and keypad
// entries) and streams the assistant's replies as text. Transports (the
// web gateway, the sandbox persona, the audio pipeline over a phone line)
// feed it Inputs and receive its Output; a Brain (a scripted flow or a
// language model) writes the replies, and acts on the phone line through
// the call's Control (keys, transfer).
package conversation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// Brain writes the assistant's side of a conversation. Calls come from the
// conversation's goroutine only, one at a time.
type Brain interface {
	// Open returns what the assistant says first, after the assistant's
	// firstMessage (empty when it waits for the caller).
	Open(ctx context.Context, emit func(delta string)) (Reply, error)
	// Respond answers one caller turn, streaming text through emit.
	Respond(ctx context.Context, text string, emit func(delta string)) (Reply, error)
	// Said tells the brain what the assistant said outside its replies
	// (the firstMessage), so a model keeps it in its history.
	Said(text string)
	// Result is what the conversation leaves for analysis.
	Result() call.Result
}

// Reply is one complete assistant reply.
type Reply struct {
	// Text is the whole reply (the concatenation of the emitted deltas).
	Text string
	// End asks to end the call once Text is said.
	End bool
	// Transfer asks to transfer the call once Text is said: the engine
	// says Transfer.Message, calls Control.Transfer and ends the call
	// (assistant-transferred-call), or, when the transfer is refused,
	// tells a Transferrer brain and goes on. End is then ignored.
	Transfer *Transfer
}

// Output is the transport's side: where the assistant's words and the
// call's end go. Methods are called from the conversation's goroutine and
// must not block for long (transports buffer, bounded). An Output that also
// speaks the replies implements Speaker.
type Output interface {
	Delta(turnID, text string)
	TurnDone(turnID, text string, interrupted bool)
	Transcript(role, text, turnID string, final bool)
	Ended(outcome call.Outcome, reason string)
}

// Speaker is implemented by an Output that speaks the assistant's turns
// (the voice pipeline). The engine then finishes a turn only when it has
// been heard: it waits for a Played or Interrupt input for it, so the stored
// turn, the model's history and assistant.turn.done hold what the caller
// actually heard.
type Speaker interface {
	// TextDone says turnID's text is complete. spoken reports that the
	// turn is being spoken: a Played or Interrupt input for it follows.
	TextDone(turnID, text string) (spoken bool)
	// Cut stops speaking turnID now (the caller typed, hung up, or the
	// reply failed) and returns what the caller heard of it, and the
	// turn's latency breakdown when there is one. shown is the text sent
	// so far; a turn that was not spoken was heard as shown.
	Cut(turnID, shown string) (heard string, breakdown *call.Breakdown)
}

// Expecter is implemented by an Output that listens (the voice pipeline):
// after each assistant turn it is told what the caller is expected to say
// next (a flow's expected answers; nil for anything), so speech
// recognition can listen for exactly that.
type Expecter interface {
	Expect(answers []string)
}

// Expectant is implemented by brains that know what answers they expect
// (flows).
type Expectant interface {
	Expected() []string
}

// Truncater is implemented by brains that keep a history: the caller heard
// only text of the brain's last reply (a barge-in), and the history is
// truncated to match.
type Truncater interface {
	Heard(text string)
}

// InputKind is what a transport reports.
type InputKind int

// Inputs from the transport.
const (
	// UserText is a caller turn (typed, or transcribed upstream).
	UserText InputKind = iota + 1
	// Hangup is the caller ending the call.
	Hangup
	// Played: turn TurnID's audio has been played in full.
	Played
	// Interrupt: the caller barged in on turn TurnID; its audio is
	// stopped and Text is what the caller heard of it.
	Interrupt
	// Activity: the caller is speaking; the silence timeout starts over.
	Activity
	// Fail: the voice path failed for good (its providers and their
	// fallbacks); the call ends failed with endedReason Reason.
	Fail
	// DTMF: the caller pressed keys on the phone's keypad; Text holds one
	// or more of 0-9, *, #, A-D, in order. The engine gathers them into
	// keypad entries (see Keypad); like a caller turn, a key cuts short
	// what the assistant is saying.
	DTMF
	// Say: live control (POST /v1/calls/{id}/say) makes the assistant say
	// Text now, as an assistant turn the brain is told of. With Cut it
	// cuts short what the assistant is saying; without, it waits for the
	// turn under way to finish.
	Say
	// Missed: the caller said something that speech recognition lost (it
	// gave no result in time). When the engine is waiting for the caller,
	// the assistant asks for it again (MissedPrompt); while it is
	// replying, nothing happens.
	Missed
)

// MissedPrompt is what the assistant says when speech recognition lost
// what the caller said (a Missed input).
const MissedPrompt = "Sorry, I didn't catch that. Could you say it again?"

// Input is one event from the transport. Closing the input channel means
// the caller went away.
type Input struct {
	Kind InputKind
	Text string
	// TurnID is the assistant turn a Played or Interrupt input is about.
	TurnID string
	// Breakdown is the turn's latency breakdown (Played, Interrupt).
	Breakdown *call.Breakdown
	// Reason is a Fail input's endedReason, and a Hangup's when the line
	// ended for a reason of its own (empty: customer-ended-call).
	Reason string
	// Cut: a Say input interrupts the assistant's turn under way.
	Cut bool
	// Outcome is a Hangup's outcome when the line ended for a reason of
	// its own (empty: completed). A Say with Reason ends the call with
	// Outcome and Reason once it is said (a message left on a machine).
	Outcome call.Outcome
}

// Ender ends the call record (callctl.Service does, through the state machine).
type Ender interface {
	End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error)
}

// TurnStore persists transcript turns as they complete.
type TurnStore interface {
	AppendTurn(ctx context.Context, t call.Turn) error
}

// OptOuts is implemented by a TurnStore that keeps the organization's
// do-not-call list (store.DoNotCall does): a phone caller who says one of the
// assistant's opt-out phrases is added to it (see optOut).
type OptOuts interface {
	AddDNC(ctx context.Context, orgID string, entries []phone.DNCEntry) (store.DNCAdded, error)
}

// Config is one conversation's setup.
type Config struct {
	Call      call.Call
	Assistant assistant.Assistant
	Brain     Brain
	Turns     TurnStore
	Ender     Ender
	Log       *slog.Logger
	// Now is the clock (tests may fake it); nil means time.Now.
	Now func() time.Time
	// TurnTimeout bounds one reply of the brain (default 30 s).
	TurnTimeout time.Duration
	// Control acts on the call's phone line: a model's built-in sendDTMF
	// and transferCall tools and a flow's sendDTMF and transfer nodes use
	// it. nil for calls without one (web and text calls): the tools are
	// not offered and the nodes fail (they take their onError). Run hands
	// it to the brains Brains.New makes.
	Control Control
	// InterDigitTimeout is the pause after the caller's last key that ends
	// a keypad entry (default 2 s).
	InterDigitTimeout time.Duration
	// TransferTimeout bounds Control.Transfer (default 30 s).
	TransferTimeout time.Duration
}

// Fallback is said when the brain fails and the call must end.
const Fallback = "I'm sorry, I'm having trouble right now. Please try again later. Goodbye."

// Run runs the conversation until the call ends, and ends it exactly once.
// It returns the reason the call ended.
func Run(ctx context.Context, cfg Config, in <-chan Input, out Output) string {
	r := &runner{cfg: cfg, out: out}
	r.speaker, _ = out.(Speaker)
	if r.cfg.Now == nil {
		r.cfg.Now = time.Now
	}
	if r.cfg.TurnTimeout <= 0 {
		r.cfg.TurnTimeout = 30 * time.Second
	}
	if r.cfg.InterDigitTimeout <= 0 {
		r.cfg.InterDigitTimeout = DefaultInterDigitTimeout
	}
	if r.cfg.TransferTimeout <= 0 {
		r.cfg.TransferTimeout = 30 * time.Second
	}
	if c, ok := r.cfg.Brain.(controlled); ok {
		c.useControl(r.cfg.Control)
	}
	if r.cfg.Log == nil {
		r.cfg.Log = slog.New(slog.DiscardHandler)
	}
	if dnc, ok := r.cfg.Turns.(OptOuts); ok && r.cfg.Call.Type == call.Phone {
		r.dnc, r.optOuts = dnc, phone.NewOptOuts(r.cfg.Assistant.OptOutPhrases)
	}
	return r.run(ctx, in)
}

type runner struct {
	cfg     Config
	out     Output
	speaker Speaker // out, when it speaks; nil for text transports
	in      <-chan Input
	// queue holds inputs taken from in but not handled yet (the input that
	// interrupted a reply, keys of an Input past the first), oldest first;
	// the main loop handles it before reading in again. Each reply adds at
	// most one, so it stays short.
	queue    []Input
	seq      int
	lastUser time.Time // end of the caller's last turn, for latency
	maxDur   *time.Timer
	// expired is set when the maximum duration passed while the engine
	// was waiting on a spoken turn (the timer's tick was consumed there).
	expired bool
	// silence ends the call when the caller says nothing for silenceAfter.
	silence      *time.Timer
	silenceAfter time.Duration
	// keys is the keypad entry in progress (at most MaxKeypadEntry keys).
	keys string
	// optedOut: the caller said an opt-out phrase; the number is listed once.
	optedOut bool
	// dnc and optOuts are set on a phone call whose store keeps the
	// do-not-call list: the assistant's opt-out phrases, normalized once.
	dnc     OptOuts
	optOuts phone.OptOuts
}

func (r *runner) run(ctx context.Context, in <-chan Input) string {
	r.in = in
	a := r.cfg.Assistant
	r.maxDur = time.NewTimer(time.Duration(a.MaxDurationSeconds) * time.Second)
	defer r.maxDur.Stop()
	r.silenceAfter = time.Duration(a.SilenceTimeoutSeconds) * time.Second
	r.silence = time.NewTimer(r.silenceAfter)
	defer r.silence.Stop()
	keyPause := time.NewTimer(r.cfg.InterDigitTimeout)
	keyPause.Stop()
	defer keyPause.Stop()

	if first := strings.TrimSpace(a.FirstMessage); first != "" {
		if heard := r.say(ctx, first); heard != "" {
			r.cfg.Brain.Said(heard)
		}
	}
	reply, err := r.reply(ctx, func(ctx context.Context, emit func(string)) (Reply, error) { return r.cfg.Brain.Open(ctx, emit) })
	if done, reason := r.after(ctx, reply, err); done {
		return reason
	}
	r.expect()
	resetTimer(r.silence, r.silenceAfter)
	for {
		var ev Input
		ok := true
		if r.expired {
			return r.end(call.Completed, call.ReasonMaxDuration)
		}
		var paused <-chan time.Time // a keypad entry in progress ends at a pause
		if r.keys != "" {
			paused = keyPause.C
		}
		if len(r.queue) > 0 { // inputs that came while the last reply was made
			ev, r.queue = r.queue[0], r.queue[1:]
		} else {
			select {
			case <-ctx.Done():
				return r.end(call.Completed, call.ReasonSystemShutdown)
			case <-r.maxDur.C:
				return r.end(call.Completed, call.ReasonMaxDuration)
			case <-r.silence.C:
				return r.end(call.Completed, call.ReasonSilenceTimeout)
			case <-paused:
				if done, reason := r.keypadEntry(ctx); done {
					return reason
				}
				continue
			case ev, ok = <-in:
			}
		}
		if !ok || ev.Kind == Hangup {
			// A line that ended on its own says how (a transfer the
			// far side carried out); otherwise the caller hung up.
			return r.end(cmp.Or(ev.Outcome, call.Completed), cmp.Or(ev.Reason, call.ReasonCustomerEnded))
		}
		switch ev.Kind {
		case Fail:
			return r.end(call.Failed, ev.Reason)
		case Activity:
			resetTimer(r.silence, r.silenceAfter)
			continue
		case Missed:
			if len(r.queue) == 0 && r.keys == "" { // nothing else from the caller to answer
				if heard := r.say(ctx, MissedPrompt); heard != "" {
					r.cfg.Brain.Said(heard)
				}
			}
			resetTimer(r.silence, r.silenceAfter)
			continue
		case Say:
			if text := strings.TrimSpace(ev.Text); text != "" {
				if heard := r.say(ctx, text); heard != "" {
					r.cfg.Brain.Said(heard)
				}
			}
			if ev.Reason != "" {
				return r.end(cmp.Or(ev.Outcome, call.Completed), ev.Reason)
			}
			if r.expired {
				return r.end(call.Completed, call.ReasonMaxDuration)
			}
			resetTimer(r.silence, r.silenceAfter)
			continue
		case DTMF:
			resetTimer(r.silence, r.silenceAfter)
			keys := keypadKeys(ev.Text)
			if keys == "" {
				continue
			}
			r.keys += keys[:1] // one key at a time: an Input's keys may hold several entries
			if len(keys) > 1 {
				r.queue = append([]Input{{Kind: DTMF, Text: keys[1:]}}, r.queue...)
			}
			if !r.entryComplete() {
				resetTimer(keyPause, r.cfg.InterDigitTimeout)
				continue
			}
			keyPause.Stop()
			if done, reason := r.keypadEntry(ctx); done {
				return reason
			}
			continue
		}
		text := strings.TrimSpace(ev.Text)
		if ev.Kind != UserText || text == "" {
			continue
		}
		if r.keys != "" { // the caller's words end the keypad entry before them
			keyPause.Stop()
			r.queue = append([]Input{ev}, r.queue...)
			if done, reason := r.keypadEntry(ctx); done {
				return reason
			}
			continue
		}
		if done, reason := r.answer(ctx, text, func(ctx context.Context, emit func(string)) (Reply, error) {
			return r.cfg.Brain.Respond(ctx, text, emit)
		}); done {
			return reason
		}
	}
}

// answer records a caller turn (said: its transcript text) and has the
// brain (fn) reply to it.
func (r *runner) answer(ctx context.Context, said string, fn func(context.Context, func(string)) (Reply, error)) (bool, string) {
	r.silence.Stop()
	r.turn(ctx, call.RoleUser, said, r.cfg.Now(), 0, false)
	r.optOut(ctx, said)
	r.lastUser = r.cfg.Now()
	reply, err := r.reply(ctx, fn)
	if done, reason := r.after(ctx, reply, err); done {
		return true, reason
	}
	r.expect()
	resetTimer(r.silence, r.silenceAfter)
	return false, ""
}

// errInterrupted marks a reply cut short by the caller: a new turn or key
// (queued, handled next) or a hang-up.
var errInterrupted = errors.New("conversation: reply interrupted by the caller")

// reply runs one brain call with the turn timeout, streaming its deltas as
// one assistant turn, and retries once when the failure is transient. The
// caller may interrupt it: a caller turn or a hang-up arriving meanwhile
// cancels the brain, keeps what was already said as an interrupted turn,
// and is handled next.
func (r *runner) reply(ctx context.Context, fn func(context.Context, func(string)) (Reply, error)) (Reply, error) {
	var lastErr error
	for attempt := range 2 {
		turnID := r.nextTurnID()
		started := r.cfg.Now()
		var first time.Time
		var b strings.Builder
		tctx, cancel := context.WithTimeout(ctx, r.cfg.TurnTimeout)
		type outcome struct {
			rep   Reply
			err   error
			panic any
		}
		done := make(chan outcome, 1)
		go func() { // owned: reply waits for it on every path
			defer func() {
				if p := recover(); p != nil {
					done <- outcome{panic: p}
				}
			}()
			rep, err := fn(tctx, func(delta string) {
				if delta == "" {
					return
				}
				if first.IsZero() {
					first = r.cfg.Now()
				}
				b.WriteString(delta)
				r.out.Delta(turnID, delta)
			})
			done <- outcome{rep: rep, err: err}
		}()
		var res outcome
		var cutBy *Input // the input that interrupted the reply
	wait:
		for {
			select {
			case res = <-done:
				break wait
			case ev, ok := <-r.in:
				if !ok {
					ev = Input{Kind: Hangup}
				}
				switch {
				case ev.Kind == Activity, ev.Kind == Missed, ev.Kind == Played, ev.Kind == Interrupt && ev.TurnID != turnID:
					continue // nothing to do with this reply
				case ev.Kind == Say && !ev.Cut:
					r.queue = append(r.queue, ev) // said once this reply is
					continue
				}
				cancel()
				res = <-done
				cutBy = &ev
				if ev.Kind != Interrupt { // a barge-in is done with once the turn is cut
					r.queue = append(r.queue, ev)
				}
				break wait
			}
		}
		cancel()
		if res.panic != nil {
			panic(res.panic) // on the conversation's goroutine, where its owner recovers
		}
		rep, err := res.rep, res.err
		bargedIn := cutBy != nil && cutBy.Kind == Interrupt
		if cutBy != nil && (err != nil || bargedIn) {
			// Keep what was delivered (heard, when spoken), marked
			// interrupted. A reply that completed anyway stands whole and
			// the input is handled next — unless the caller barged in on
			// its audio, which was cut whether or not the brain finished.
			heard, bd := r.delivered(turnID, b.String(), cutBy)
			if b.Len() > 0 {
				r.truncateBrain(heard)
				r.finishTurn(ctx, turnID, call.RoleAssistant, heard, started, r.latency(first, bd), true, bd)
			} else {
				r.seq--
			}
			if err == nil { // the brain decided on a transfer: cutting its words does not undo it
				return Reply{Transfer: rep.Transfer}, errInterrupted
			}
			return Reply{}, errInterrupted
		}
		if err == nil {
			if rep.Text == "" {
				rep.Text = b.String()
			}
			if strings.TrimSpace(rep.Text) != "" {
				if b.Len() == 0 { // a brain that did not stream: one delta
					first = r.cfg.Now()
					r.out.Delta(turnID, rep.Text)
				}
				heard, intr, bd := r.spoken(ctx, turnID, rep.Text, cutBy)
				if intr {
					r.truncateBrain(heard)
				}
				r.finishTurn(ctx, turnID, call.RoleAssistant, heard, started, r.latency(first, bd), intr, bd)
				if intr {
					return Reply{Transfer: rep.Transfer}, errInterrupted
				}
			} else {
				r.seq-- // nothing said: the turn id is free again
			}
			return rep, nil
		}
		lastErr = err
		if b.Len() > 0 {
			// Part of a reply was shown: keep it as an interrupted turn.
			heard, bd := r.delivered(turnID, b.String(), nil)
			r.finishTurn(ctx, turnID, call.RoleAssistant, heard, started, 0, true, bd)
		} else {
			r.seq--
		}
		if ctx.Err() != nil || !Retryable(err) || attempt == 1 {
			break
		}
		r.cfg.Log.Warn("assistant reply failed; retrying once", "call_id", r.cfg.Call.ID, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(min(RetryAfter(err), 2*time.Second)):
		}
	}
	return Reply{}, lastErr
}

// latency is from the end of the caller's last turn to the first output:
// the first audio, when the turn was spoken.
func (r *runner) latency(first time.Time, bd *call.Breakdown) time.Duration {
	if bd != nil {
		return bd.Total
	}
	if r.lastUser.IsZero() || first.IsZero() {
		return 0
	}
	return first.Sub(r.lastUser)
}

// delivered is what the caller got of a turn cut short: what they heard of
// it when it is spoken (the barge-in says, or the speaker is asked), what
// was shown otherwise.
func (r *runner) delivered(turnID, shown string, cutBy *Input) (string, *call.Breakdown) {
	switch {
	case cutBy != nil && cutBy.Kind == Interrupt && cutBy.TurnID == turnID:
		return cutBy.Text, cutBy.Breakdown
	case r.speaker != nil:
		return r.speaker.Cut(turnID, shown)
	}
	return shown, nil
}

// spoken hands a complete turn to a speaking transport and waits until it
// has been heard in full (Played) or cut (Interrupt, or the caller typing,
// hanging up, the call failing or running out of time). It returns what was
// heard. Text transports return at once with the whole text.
func (r *runner) spoken(ctx context.Context, turnID, text string, cutBy *Input) (heard string, interrupted bool, bd *call.Breakdown) {
	if r.speaker == nil || !r.speaker.TextDone(turnID, text) {
		return text, false, nil
	}
	cut := func(ev *Input) (string, bool, *call.Breakdown) {
		heard, bd := r.speaker.Cut(turnID, text)
		if ev != nil {
			r.queue = append(r.queue, *ev)
		}
		return heard, heard != text, bd
	}
	for {
		select {
		case <-ctx.Done():
			return cut(nil)
		case <-r.maxDur.C:
			r.expired = true
			return cut(nil)
		case ev, ok := <-r.in:
			if !ok {
				ev = Input{Kind: Hangup}
			}
			switch ev.Kind {
			case Activity, Missed: // the assistant is speaking: nothing to ask again
			case Played:
				if ev.TurnID == turnID {
					return text, false, ev.Breakdown
				}
			case Interrupt:
				if ev.TurnID == turnID {
					return ev.Text, true, ev.Breakdown
				}
			case Say:
				if !ev.Cut {
					r.queue = append(r.queue, ev) // said once this turn is
					continue
				}
				return cut(&ev)
			default: // the caller typed, pressed a key or hung up, or the voice path failed
				return cut(&ev)
			}
		}
	}
}

// expect tells a listening transport what the brain expects next.
func (r *runner) expect() {
	if e, ok := r.out.(Expecter); ok {
		var answers []string
		if b, ok := r.cfg.Brain.(Expectant); ok {
			answers = b.Expected()
		}
		e.Expect(answers)
	}
}

// truncateBrain tells a brain with a history what the caller heard.
func (r *runner) truncateBrain(heard string) {
	if t, ok := r.cfg.Brain.(Truncater); ok {
		t.Heard(heard)
	}
}

// after acts on a reply: transfers the call or ends it when asked to, or
// on failure.
func (r *runner) after(ctx context.Context, rep Reply, err error) (bool, string) {
	if rep.Transfer != nil && (err == nil || errors.Is(err, errInterrupted)) {
		return r.transfer(ctx, rep.Transfer)
	}
	if errors.Is(err, errInterrupted) {
		return false, "" // the caller's input is handled next
	}
	if err != nil {
		if ctx.Err() != nil {
			return true, r.end(call.Completed, call.ReasonSystemShutdown)
		}
		r.cfg.Log.Error("assistant reply failed; ending the call", "call_id", r.cfg.Call.ID, "err", err)
		r.say(ctx, Fallback)
		for _, ev := range r.queue {
			if ev.Kind == Fail {
				return true, r.end(call.Failed, ev.Reason)
			}
		}
		return true, r.end(call.Failed, call.ReasonModelFailed)
	}
	if rep.End || r.endPhrase(rep.Text) {
		return true, r.end(call.Completed, call.ReasonAssistantEnded)
	}
	return false, ""
}

// endPhrase reports whether text contains one of the assistant's end-call phrases.
func (r *runner) endPhrase(text string) bool {
	t := strings.ToLower(text)
	for _, p := range r.cfg.Assistant.EndCallPhrases {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" && strings.Contains(t, p) {
			return true
		}
	}
	return false
}

// say sends a whole assistant turn that no brain wrote (firstMessage,
// fallback). When it is cut short while spoken, the brain hears of it and
// the input that cut it is handled next.
func (r *runner) say(ctx context.Context, text string) (heard string) {
	turnID := r.nextTurnID()
	now := r.cfg.Now()
	r.out.Delta(turnID, text)
	heard, intr, bd := r.spoken(ctx, turnID, text, nil)
	r.finishTurn(ctx, turnID, call.RoleAssistant, heard, now, r.latency(time.Time{}, bd), intr, bd)
	return heard
}

func (r *runner) nextTurnID() string {
	r.seq++
	return fmt.Sprintf("turn_%d", r.seq)
}

// optOut puts the far party of a phone call on the organization's
// do-not-call list, with the call as evidence, the first time one of its
// final turns says one of the assistant's opt-out phrases. The
// conversation goes on as the brain decides: the list stops later dials,
// not this call.
func (r *runner) optOut(ctx context.Context, said string) {
	c := r.cfg.Call
	if r.optedOut || r.dnc == nil || !r.optOuts.Said(said) {
		return
	}
	r.optedOut = true
	number := c.To // the called party
	if c.Direction == call.Inbound {
		number = c.From // the caller
	}
	number, err := phone.NormalizeE164(number)
	if err != nil { // an inbound caller id such as "anonymous": nothing to list
		r.cfg.Log.Warn("a caller opted out but its number cannot be listed", "call_id", c.ID, "org_id", c.OrgID, "err", err)
		return
	}
	e := phone.DNCEntry{Number: number, Reason: "the caller asked not to be called: " + truncate(said, 200), Source: phone.DNCSourceOptOut,
		CallID: c.ID, CreatedAt: r.cfg.Now().UTC()}
	if _, err := r.dnc.AddDNC(context.WithoutCancel(ctx), c.OrgID, []phone.DNCEntry{e}); err != nil {
		r.cfg.Log.Error("adding an opted-out caller to the do-not-call list failed", "call_id", c.ID, "org_id", c.OrgID, "err", err)
		return
	}
	r.cfg.Log.Info("caller opted out: number added to the do-not-call list", "call_id", c.ID, "org_id", c.OrgID)
}

// truncate cuts s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// turn records a caller turn.
func (r *runner) turn(ctx context.Context, role, text string, started time.Time, latency time.Duration, interrupted bool) {
	turnID := r.nextTurnID()
	r.persist(ctx, turnID, role, text, started, latency, interrupted, nil)
	r.out.Transcript(role, text, turnID, true)
}

// finishTurn closes an assistant turn: persisted, then announced. It is
// the one place that decides what a turn that reached the line stores:
// every turn whose text went out (a delta) is a transcript line with what
// the caller got of it — all of it, or when cut what was heard, possibly
// nothing (then "", interrupted) — so seq has no gaps. A reply that said
// nothing gives its turn id back instead (reply).
func (r *runner) finishTurn(ctx context.Context, turnID, role, text string, started time.Time, latency time.Duration, interrupted bool, bd *call.Breakdown) {
	if interrupted && strings.TrimSpace(text) == "" {
		text = ""
	}
	r.persist(ctx, turnID, role, text, started, latency, interrupted, bd)
	r.out.TurnDone(turnID, text, interrupted)
	r.out.Transcript(role, text, turnID, true)
}

func (r *runner) persist(ctx context.Context, turnID, role, text string, started time.Time, latency time.Duration, interrupted bool, bd *call.Breakdown) {
	seq, _ := strconv.Atoi(strings.TrimPrefix(turnID, "turn_")) // nextTurnID's own format
	t := call.Turn{ID: id.New("turn"), OrgID: r.cfg.Call.OrgID, CallID: r.cfg.Call.ID, Seq: seq, Role: role, Text: text,
		StartedAt: started, EndedAt: r.cfg.Now(), Interrupted: interrupted, Latency: latency, Breakdown: bd}
	if err := r.cfg.Turns.AppendTurn(context.WithoutCancel(ctx), t); err != nil {
		r.cfg.Log.Error("persisting a turn failed", "call_id", r.cfg.Call.ID, "seq", seq, "err", err)
	}
}

// end ends the call record and tells the transport; it returns the reason.
func (r *runner) end(outcome call.Outcome, reason string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.cfg.Ender.End(ctx, r.cfg.Call.ID, outcome, reason, r.cfg.Brain.Result()); err != nil {
		r.cfg.Log.Error("ending the call failed", "call_id", r.cfg.Call.ID, "err", err)
	}
	r.out.Ended(outcome, reason)
	return reason
}

func resetTimer(t *time.Timer, d time.Duration) {
	t.Stop()
	t.Reset(d)
}

// retryable is implemented by errors that say whether a retry may help.
type retryable interface {
	Temporary() bool
}

// Retryable reports whether err is worth one retry: errors that say so
// (llm.Error), and deadline overruns of a single turn.
func Retryable(err error) bool {
	var t retryable
	if errors.As(err, &t) {
		return t.Temporary()
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// RetryAfter is how long an error asks to wait, if it says (else 500 ms).
func RetryAfter(err error) time.Duration {
	var ra interface{ RetryDelay() time.Duration }
	if errors.As(err, &ra) && ra.RetryDelay() > 0 {
		return ra.RetryDelay()
	}
	return 500 * time.Millisecond
}
