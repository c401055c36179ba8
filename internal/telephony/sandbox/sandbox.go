// Package sandbox is a simulated phone network implementing
// telephony.Network. It is the default network and the one tests use, so
// every phone endpoint works offline and deterministically: the fate of a call
// is chosen by the last four digits of its destination (see Network.Place).
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/internal/lifecycle"
	"switchboard/internal/telephony"
)

// providerName is the name the sandbox reports and stamps on its numbers.
const providerName = "sandbox"

// Destination suffixes that select a scripted call outcome in Place. Any
// other destination is answered and completes normally.
const (
	// SuffixBusy makes a call ring for RingTime, then end busy.
	SuffixBusy = "0001"
	// SuffixNoAnswer makes a call ring for NoAnswerTimeout, then end no-answer.
	SuffixNoAnswer = "0002"
	// SuffixVoicemail makes a call ring for RingTime, get answered by a
	// machine, then end voicemail right away.
	SuffixVoicemail = "0003"
	// SuffixFailed makes a call ring for RingTime, then end failed.
	SuffixFailed = "0004"
)

// Outcomes and reasons the sandbox puts on Ended events.
const (
	outcomeCompleted = "completed"
	outcomeBusy      = "busy"
	outcomeNoAnswer  = "no-answer"
	outcomeVoicemail = "voicemail"
	outcomeFailed    = "failed"
	outcomeCanceled  = "canceled"

	reasonShutdown = "system-shutdown"
)

// Errors returned by Place, so callers and tests can tell them apart with
// errors.Is.
var (
	// ErrClosed is returned by Place once Close has been called.
	ErrClosed = errors.New("sandbox: network closed")
	// ErrNoCallID is returned by Place for a request without a CallID,
	// because every event must be attributable to a call.
	ErrNoCallID = errors.New("sandbox: call id is required")
	// ErrDuplicateCall is returned by Place when a call with the same CallID
	// is still live; an ended call's id may be reused.
	ErrDuplicateCall = errors.New("sandbox: call id already live")
)

// Config tunes the simulated network. Zero fields take the defaults listed
// on each field, so Config{} is a ready-to-use network.
type Config struct {
	// Numbers is the inventory offered for purchase; empty means DefaultNumbers().
	Numbers []telephony.Number
	// RingTime is how long a destination rings before it answers, is busy or
	// fails; default 1s.
	RingTime time.Duration
	// NoAnswerTimeout is how long a no-answer destination rings before the
	// network gives up; default 30s.
	NoAnswerTimeout time.Duration
	// TalkTime is how long an answered call lasts before the callee hangs
	// up; default 10 minutes.
	TalkTime time.Duration
	// Lines, when set, hands every call the persona answers to the call
	// runtime as a Line (Event.Line on Answered); the network then sends
	// no Ended event for it: the line ends (the persona hangs up, TalkTime
	// passes, Hangup or Close) and the runtime records the end. Without
	// Lines the network only signals (its tests, and servers that run no
	// conversations).
	Lines *Lines
}

// withDefaults returns c with every zero (or negative) field replaced by its
// default.
func (c Config) withDefaults() Config {
	if len(c.Numbers) == 0 {
		c.Numbers = DefaultNumbers()
	}
	if c.RingTime <= 0 {
		c.RingTime = time.Second
	}
	if c.NoAnswerTimeout <= 0 {
		c.NoAnswerTimeout = 30 * time.Second
	}
	if c.TalkTime <= 0 {
		c.TalkTime = 10 * time.Minute
	}
	return c
}

// Network is the simulated phone network. It is safe for concurrent use.
// Each live call is driven by one goroutine owned by the Network, which is
// the only emitter of that call's events, so a call's events reach the sink
// in order and exactly one Ended, always last, is sent per placed call.
type Network struct {
	cfg       Config
	available map[string]struct{}
	sink      telephony.EventSink
	admit     telephony.Admitter // Start's; CallIn asks it
	log       *slog.Logger

	mu     sync.Mutex
	closed bool
	calls  map[string]*call // live calls by CallID; membership means live
	wg     sync.WaitGroup   // one per call goroutine
	// voiceSlots bounds the audio lines at once (Lines.VoiceCalls).
	voiceSlots chan struct{}
	stopping   lifecycle.Blocking
}

// call is the shared state of one live call.
type call struct {
	// stop is closed by Hangup or Close, after removing the call from
	// Network.calls, to end the call early.
	stop chan struct{}
	// reason is the Reason of the Ended event for an early end. It is
	// written under Network.mu before stop is closed.
	reason string
	// to is the number whose persona talks: the destination of a placed
	// call, the caller of one that called in.
	to string
}

// Compile-time checks that Network is a telephony.Network and a
// long-lived part that reports to call control.
var (
	_ telephony.Network                         = (*Network)(nil)
	_ lifecycle.Reporter[telephony.CallControl] = (*Network)(nil)
)

// New returns a sandbox network configured by cfg (zero fields take
// defaults); a nil log discards log output. It reports to the call control
// it is started with (Start); the caller must stop it (Stop or Close) to
// end its calls.
func New(cfg Config, log *slog.Logger) *Network {
	cfg = cfg.withDefaults()
	cfg.Numbers = cloneNumbers(cfg.Numbers)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	available := make(map[string]struct{}, len(cfg.Numbers))
	for _, num := range cfg.Numbers {
		available[num.Number] = struct{}{}
	}
	slots := 0
	if cfg.Lines != nil {
		slots = cfg.Lines.VoiceCalls
		if slots <= 0 {
			slots = 4
		}
	}
	return &Network{
		voiceSlots: make(chan struct{}, slots),
		cfg:        cfg,
		available:  available,
		sink:       func(telephony.Event) {},
		admit:      telephony.CallControlFuncs{}.Admit,
		log:        log.With("provider", providerName),
		calls:      make(map[string]*call),
	}
}

// Start makes cc hear the progress of the calls placed from now on, and
// decide the calls that come in (CallIn); nothing else runs until a call
// is placed or comes in.
func (n *Network) Start(_ context.Context, cc telephony.CallControl) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	n.sink, n.admit = cc.HandleEvent, cc.Admit
	return nil
}

// ErrNoLines is CallIn's answer on a network that hands no lines over (a
// server that runs no conversations).
var ErrNoLines = fmt.Errorf("%w: sandbox: inbound calls need the call runtime's lines", telephony.ErrUnavailable)

// CallIn has the persona of number from call to, a number organization
// orgID bought from the sandbox: an inbound call, decided as a trunk's would be (the call control's
// Admitter: the number, its inbound assistant, the organization's
// routing). An admitted call is answered at once and its line handed to
// the runtime; the persona talks as it does when it answers (Alex, or the
// behaviour its number's suffix selects). It returns the call's id, or the
// Admitter's refusal (telephony.ErrUnknownNumber, ErrNoInboundAgent,
// ErrBusy, *Forward, …).
func (n *Network) CallIn(ctx context.Context, orgID, from, to string) (string, error) {
	n.mu.Lock()
	admit, closed := n.admit, n.closed
	n.mu.Unlock()
	switch {
	case closed:
		return "", fmt.Errorf("%w: %w", telephony.ErrUnavailable, ErrClosed)
	case n.cfg.Lines == nil:
		return "", ErrNoLines
	}
	callID, err := admit(ctx, telephony.Incoming{Provider: providerName, OrgID: orgID, To: to, From: from, ProviderCallID: "sb_in_" + strings.TrimPrefix(from, "+")})
	if err != nil {
		return "", err
	}
	c := &call{stop: make(chan struct{}), to: from}
	n.mu.Lock()
	closed, dup := n.closed, n.calls[callID] != nil
	if !closed && !dup {
		n.calls[callID] = c
		steps := []step{{kind: telephony.Answered}, {wait: n.cfg.TalkTime, kind: telephony.Ended, outcome: outcomeCompleted}}
		n.wg.Go(func() { n.run(callID, c, steps) })
	}
	n.mu.Unlock()
	switch {
	case closed:
		// Admitted (stored) as the network closed: end it, outside the lock.
		n.emit(telephony.Event{CallID: callID, Kind: telephony.Ended, Outcome: outcomeCanceled, Reason: reasonShutdown})
		return "", fmt.Errorf("%w: %w", telephony.ErrUnavailable, ErrClosed)
	case dup:
		return "", ErrDuplicateCall
	}
	n.log.Debug("sandbox call came in", "call_id", callID, "to", to)
	return callID, nil
}

// Stop is Close within ctx: when ctx ends first, Stop returns and the
// calls go on ending (Stopped says when they have).
func (n *Network) Stop(ctx context.Context) error { return n.stopping.Stop(ctx, n.Close) }

// Stopped is closed once Stop's Close has returned.
func (n *Network) Stopped() <-chan struct{} { return n.stopping.Stopped() }

// Name returns "sandbox", the provider's name in the API.
func (n *Network) Name() string { return providerName }

// Inventory returns a copy of the configured numbers in configuration order,
// so callers may modify the result freely.
func (n *Network) Inventory(ctx context.Context) ([]telephony.Number, error) {
	return cloneNumbers(n.cfg.Numbers), nil
}

// Purchase returns nil when number is in the inventory and
// telephony.ErrNumberUnavailable otherwise. It reserves nothing: which
// organization owns a number is tracked by the database, not the sandbox.
func (n *Network) Purchase(ctx context.Context, number string) error {
	if _, ok := n.available[number]; !ok {
		return telephony.ErrNumberUnavailable
	}
	return nil
}

// Release always returns nil, even for numbers the sandbox does not offer,
// because the sandbox keeps no ownership state to undo.
func (n *Network) Release(ctx context.Context, number string) error {
	return nil
}

// Place starts a simulated call and returns at once; its events follow on the
// sink. The call's fate depends on the last four digits of req.To:
//
//   - SuffixBusy ("0001"): Ringing, then after RingTime Ended busy/customer-busy.
//   - SuffixNoAnswer ("0002"): Ringing, then after NoAnswerTimeout Ended
//     no-answer/customer-did-not-answer.
//   - SuffixVoicemail ("0003"): Ringing, after RingTime Answered, then at once
//     Ended voicemail/customer-voicemail.
//   - SuffixFailed ("0004"): Ringing, then after RingTime Ended
//     failed/provider-failed.
//   - anything else: Ringing, after RingTime Answered, then after TalkTime
//     Ended completed/customer-ended-call.
//
// Place fails, and no event follows, when the network is closed (ErrClosed),
// req.CallID is empty (ErrNoCallID) or already live (ErrDuplicateCall), or ctx
// is already done. ctx only bounds the placing: the call itself outlives it
// and is ended by its script, Hangup or Close.
func (n *Network) Place(ctx context.Context, req telephony.PlaceRequest) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req.CallID == "" {
		return ErrNoCallID
	}
	steps := n.script(req.To)

	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if _, live := n.calls[req.CallID]; live {
		return ErrDuplicateCall
	}
	c := &call{stop: make(chan struct{}), to: req.To}
	n.calls[req.CallID] = c
	n.wg.Go(func() { n.run(req.CallID, c, steps) })
	n.log.Debug("sandbox call placed", "call_id", req.CallID, "from", req.From, "to", req.To)
	return nil
}

// Hangup ends the live call callID at once: an Ended event with outcome
// canceled (not yet answered) or completed (answered) and an empty Reason
// follows from the call's goroutine, possibly after Hangup returns. Hanging
// up an unknown or already ended call returns nil and emits nothing.
// Hangup does not wait for the Ended event, so the sink may call it.
func (n *Network) Hangup(ctx context.Context, callID string) error {
	n.stop(callID, "")
	return nil
}

// Close ends every live call, each with an Ended event (canceled if not yet
// answered, else completed; Reason "system-shutdown"), waits until every call
// goroutine has exited and makes later Place calls fail with ErrClosed. It is
// idempotent and always returns nil. Because it waits for the call
// goroutines, it must not be called from the sink.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	for id, c := range n.calls {
		c.reason = reasonShutdown
		close(c.stop)
		delete(n.calls, id)
	}
	n.mu.Unlock()
	n.wg.Wait()
	return nil
}

// Live returns the number of calls placed and not yet ended, for tests and
// metrics. A call stops counting as soon as its end is decided, which may be
// just before its Ended event reaches the sink.
func (n *Network) Live() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.calls)
}

// stop ends the live call callID early with the given Ended reason; it does
// nothing if the call is not live.
func (n *Network) stop(callID, reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c, ok := n.calls[callID]
	if !ok {
		return
	}
	c.reason = reason
	close(c.stop)
	delete(n.calls, callID)
}

// step is one scripted stage of a call: wait, then emit kind (with outcome
// and reason if kind is Ended).
type step struct {
	wait            time.Duration
	kind            telephony.EventKind
	outcome, reason string
}

// script returns the steps of a call to destination to.
func (n *Network) script(to string) []step {
	ringing := step{kind: telephony.Ringing}
	answered := step{wait: n.cfg.RingTime, kind: telephony.Answered}
	ended := func(wait time.Duration, outcome, reason string) step {
		return step{wait: wait, kind: telephony.Ended, outcome: outcome, reason: reason}
	}
	switch {
	case strings.HasSuffix(to, SuffixBusy):
		return []step{ringing, ended(n.cfg.RingTime, outcomeBusy, "customer-busy")}
	case strings.HasSuffix(to, SuffixNoAnswer):
		return []step{ringing, ended(n.cfg.NoAnswerTimeout, outcomeNoAnswer, "customer-did-not-answer")}
	case strings.HasSuffix(to, SuffixVoicemail):
		return []step{ringing, answered, ended(0, outcomeVoicemail, "customer-voicemail")}
	case strings.HasSuffix(to, SuffixFailed):
		return []step{ringing, ended(n.cfg.RingTime, outcomeFailed, "provider-failed")}
	default:
		return []step{ringing, answered, ended(n.cfg.TalkTime, outcomeCompleted, "customer-ended-call")}
	}
}

// run drives call id through steps, emitting its events, until the script
// ends or the call is stopped by Hangup or Close. It is the only emitter of
// the call's events and always emits exactly one Ended, last.
func (n *Network) run(id string, c *call, steps []step) {
	answered := false
	for i, s := range steps {
		if !sleep(c.stop, s.wait) {
			n.endEarly(id, c, answered)
			return
		}
		if s.kind == telephony.Ended {
			if !n.finish(id, c) {
				// Hangup or Close won the race for this call's end.
				n.endEarly(id, c, answered)
				return
			}
			n.emit(telephony.Event{CallID: id, Kind: telephony.Ended, Outcome: s.outcome, Reason: s.reason})
			return
		}
		if s.kind == telephony.Answered && n.cfg.Lines != nil && i+1 < len(steps) && steps[i+1].outcome == outcomeCompleted {
			n.handOver(id, c, steps[i+1].wait)
			return
		}
		n.emit(telephony.Event{CallID: id, Kind: s.kind})
		if s.kind == telephony.Answered {
			answered = true
		}
	}
	// Unreachable with well-formed scripts, but never leave a call without
	// its Ended event.
	n.finish(id, c)
	n.emit(telephony.Event{CallID: id, Kind: telephony.Ended, Outcome: outcomeFailed, Reason: "provider-failed"})
}

// handOver answers call id with a persona line and hands the line to the
// sink's runtime: the line ends when the persona hangs up, after talk, or
// when the call is stopped (Hangup, Close), and no Ended event follows.
func (n *Network) handOver(id string, c *call, talk time.Duration) {
	l := n.newLine(c.to)
	n.emit(telephony.Event{CallID: id, Kind: telephony.Answered, Line: l})
	if sleep(c.stop, talk) && n.finish(id, c) {
		l.finish(endCustomer)
		return
	}
	l.finish(telephony.End{})
	// Hangup or Close removed the call; Close asked for system-shutdown.
}

// finish removes call id from the live set for a scripted end. It reports
// false if Hangup or Close already removed it, in which case the early end
// applies instead.
func (n *Network) finish(id string, c *call) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.calls[id] != c {
		return false
	}
	delete(n.calls, id)
	return true
}

// endEarly emits the Ended event of a call stopped by Hangup or Close.
func (n *Network) endEarly(id string, c *call, answered bool) {
	outcome := outcomeCanceled
	if answered {
		outcome = outcomeCompleted
	}
	// c.reason was written under n.mu before c.stop was closed, and we got
	// here only after observing either the close or (in finish) the removal
	// under n.mu, so this read is ordered after the write.
	n.emit(telephony.Event{CallID: id, Kind: telephony.Ended, Outcome: outcome, Reason: c.reason})
}

// emit stamps ev with the current time, logs it and hands it to the sink.
// It must be called without holding n.mu.
func (n *Network) emit(ev telephony.Event) {
	ev.At = time.Now()
	if ev.Kind == telephony.Ended {
		n.log.Debug("sandbox call ended", "call_id", ev.CallID, "outcome", ev.Outcome, "reason", ev.Reason)
	}
	n.sink(ev)
}

// sleep waits for d or until stop is closed, and reports whether the full
// wait elapsed without a stop. A stop that has already happened wins over a
// timer firing at the same moment. A zero d only checks stop.
func sleep(stop <-chan struct{}, d time.Duration) bool {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-stop:
			return false
		case <-t.C:
		}
	}
	select {
	case <-stop:
		return false
	default:
		return true
	}
}

// cloneNumbers deep-copies nums, Capabilities included, so neither the
// caller's config nor Inventory results alias the network's inventory.
func cloneNumbers(nums []telephony.Number) []telephony.Number {
	out := slices.Clone(nums)
	for i := range out {
		out[i].Capabilities = slices.Clone(out[i].Capabilities)
	}
	return out
}
