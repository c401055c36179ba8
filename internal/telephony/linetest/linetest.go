// Package linetest is the conformance suite of telephony.Line, in the shape
// of store/storetest: every line — the SIP dialog, the Twilio media stream,
// the sandbox persona, the web gateway's session — runs it from its own
// package's tests, with a factory that makes a live call over that line's
// real parts (loopback UDP, loopback websockets) and hands over the line
// and a handle on its far party.
//
// The suite plays the call runtime's part (Receive on one goroutine, paced
// writes from another, the Listener's events, CallEnded then Hangup at the
// end) and checks what every line promises the runtime: a hang-up from
// either side ends the call with its classified end, and is idempotent; a
// write after the end fails; Clear is safe at any time; keys go both ways
// on a line with a keypad; the far end's playback reports (marks) come in
// order; the Receiver is called from one goroutine, never after Receive
// returned. See docs/ARCHITECTURE.md, "Lines and the call runtime".
package linetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// Timeout bounds every wait of the suite: for the far party, for Receive,
// for a method that must not block for long. It is generous, for a loaded
// machine; a line that keeps its promises takes milliseconds.
const Timeout = 10 * time.Second

// Case is one live call the factory made for one test.
type Case struct {
	// Line is the line under test, as it is handed to the runtime: nothing
	// has been called on it yet.
	Line telephony.Line
	// Far is the call's far party.
	Far Far
	// Frame is one 20 ms frame of the assistant's audio in the format the
	// line carries (for a line that starts as text, the format its far end
	// turns audio on in; the suite waits for Receiver.StartAudio before it
	// writes). Nil for a text line, which the runtime writes no audio to.
	Frame []byte
	// HungUp is how Receive ends when the far party hangs up.
	HungUp telephony.End
	// Marks reports that the far end tells what it has played
	// (Receiver.Mark: a Twilio stream, a web client). A line whose far end
	// buffers nothing must never call Mark.
	Marks bool
}

// Far is the far party of a Case's call, as the test drives it. Every
// method may be called after the call is over and must then do nothing
// harmful; it fails the test (t.Fatal) only when the far party itself
// breaks.
type Far interface {
	// Hangup hangs up on the far party's side.
	Hangup(t *testing.T)
	// Gone waits until the far party's side of the call is over (after
	// this side hung up) and fails the test if it is not within Timeout.
	Gone(t *testing.T)
	// Press presses keys (0-9, *, #, A-D) on the far party's keypad, in
	// order. Called on Keypad lines only.
	Press(t *testing.T, keys string)
	// Keys waits until the far party has heard n keys of what this side
	// sent (SendDTMF) and returns all it heard, or what it heard by
	// Timeout. Called on Keypad lines only.
	Keys(t *testing.T, n int) string
}

// Run runs the suite. newCase makes a fresh live call for each test and
// registers its own cleanups (closing the provider, a leak check), which
// run after the suite's: the suite ends every call it was given, as the
// runtime does (CallEnded, then Hangup), and waits for Receive to return.
func Run(t *testing.T, newCase func(t *testing.T) Case) {
	for _, test := range []struct {
		name string
		run  func(*testing.T, Case)
	}{
		{"Capabilities", testCapabilities},
		{"FarHangsUp", testFarHangsUp},
		{"HangsUp", testHangsUp},
		{"BothHangUp", testBothHangUp},
		{"HangsUpBeforeReceive", testHangsUpBeforeReceive},
		{"Clear", testClear},
		{"DTMF", testDTMF},
		{"Marks", testMarks},
	} {
		t.Run(test.name, func(t *testing.T) {
			c := newCase(t)
			t.Cleanup(func() { // also when the test skipped or failed early
				c.Line.CallEnded(call.Completed, call.ReasonAPIEnded, false)
				hangup(t, c.Line, "at the end of the test")
			})
			test.run(t, c)
		})
	}
}

// testCapabilities: Capabilities is a fixed value; a line without a keypad
// refuses SendDTMF and one without transfer refuses Transfer.
func testCapabilities(t *testing.T, c Case) {
	caps := c.Line.Capabilities()
	if again := c.Line.Capabilities(); again != caps {
		t.Errorf("Capabilities() = %+v, then %+v: want one value for the call", caps, again)
	}
	rc := receive(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if !caps.Keypad {
		if err := c.Line.SendDTMF(ctx, "1"); err == nil {
			t.Error("SendDTMF(1) on a line without a keypad = nil, want an error")
		}
	}
	if !caps.Transfer {
		if err := c.Line.Transfer(ctx, "+14155550123"); err == nil {
			t.Error("Transfer on a line that cannot transfer = nil, want an error")
		}
	}
	rc.hangUp(t)
}

// testFarHangsUp: the far party hangs up: Receive returns the line's
// HungUp end, writes fail from then on, and the runtime's end (CallEnded,
// Hangup, twice) and every event are harmless.
func testFarHangsUp(t *testing.T, c Case) {
	rc := receive(t, c)
	rc.waitAudio(t)
	if c.Frame != nil {
		if err := c.Line.Write(c.Frame); err != nil {
			t.Fatalf("Write while the call is up = %v, want nil", err)
		}
	}
	c.Far.Hangup(t)
	if e := rc.wait(t); e != c.HungUp {
		t.Errorf("Receive after the far party hung up = %+v, want %+v", e, c.HungUp)
	}
	writeFails(t, c, "after the far party hung up")
	rc.hangUp(t)
	afterEnd(t, c, "after the far party hung up and Hangup")
}

// testHangsUp: this side hangs up (CallEnded, then Hangup, as the runtime
// does): Receive returns the zero End, the far party's side ends, Hangup
// again does nothing, writes fail.
func testHangsUp(t *testing.T, c Case) {
	rc := receive(t, c)
	rc.waitAudio(t)
	rc.hangUp(t)
	if e := rc.wait(t); e != (telephony.End{}) {
		t.Errorf("Receive after Hangup = %+v, want the zero End (this side ended the call)", e)
	}
	c.Far.Gone(t)
	afterEnd(t, c, "after Hangup")
}

// testBothHangUp: both sides hang up at once; either end is Receive's,
// Hangup returns nil, and the line is over as after either alone.
func testBothHangUp(t *testing.T, c Case) {
	rc := receive(t, c)
	rc.waitAudio(t)
	var wg sync.WaitGroup
	wg.Go(func() { rc.hangUp(t) })
	c.Far.Hangup(t)
	wg.Wait()
	if e := rc.wait(t); e != (telephony.End{}) && e != c.HungUp {
		t.Errorf("Receive after both sides hung up = %+v, want the zero End or %+v", e, c.HungUp)
	}
	c.Far.Gone(t)
	afterEnd(t, c, "after both sides hung up")
}

// testHangsUpBeforeReceive: a line the runtime refuses (it is stopping) is
// hung up before Receive: Hangup returns, the far party's side ends, and a
// late Receive returns at once.
func testHangsUpBeforeReceive(t *testing.T, c Case) {
	c.Line.CallEnded(call.Completed, call.ReasonSystemShutdown, false)
	hangup(t, c.Line, "before Receive")
	c.Far.Gone(t)
	afterEnd(t, c, "after Hangup before Receive")
	rc := receive(t, c)
	if e := rc.wait(t); e != (telephony.End{}) {
		t.Errorf("Receive after Hangup = %+v, want the zero End", e)
	}
}

// testClear: Clear before Receive, between writes, concurrently with
// writes from the pacer's goroutine, after a cut and after the end: it
// never blocks for long, and the line carries on.
func testClear(t *testing.T, c Case) {
	bounded(t, "Clear before Receive", c.Line.Clear)
	rc := receive(t, c)
	rc.waitAudio(t)
	bounded(t, "Clear before any audio", c.Line.Clear)
	if c.Frame != nil {
		c.Line.AudioStart("turn_clear")
		var wg sync.WaitGroup
		var werr atomic.Value
		wg.Go(func() { // the pacer
			tick := time.NewTicker(audio.FrameDuration)
			defer tick.Stop()
			for range 25 {
				if err := c.Line.Write(c.Frame); err != nil {
					werr.Store(err)
					return
				}
				<-tick.C
			}
		})
		for range 10 {
			bounded(t, "Clear during writes", c.Line.Clear)
			time.Sleep(30 * time.Millisecond)
		}
		wg.Wait()
		if err, _ := werr.Load().(error); err != nil {
			t.Errorf("Write between Clears = %v, want nil: the line carries on", err)
		}
		bounded(t, "Clear after a turn", c.Line.Clear)
		c.Line.AudioClear("turn_clear", 500)
		c.Line.AudioStart("turn_after")
		if err := c.Line.Write(c.Frame); err != nil {
			t.Errorf("Write after a Clear = %v, want nil", err)
		}
		c.Line.AudioDone("turn_after")
	}
	rc.hangUp(t)
	bounded(t, "Clear after the end", c.Line.Clear)
	bounded(t, "Clear again after the end", c.Line.Clear)
}

// testDTMF: on a line with a keypad the far party hears the keys SendDTMF
// plays, in order, and its presses reach Receiver.DTMF, in order.
func testDTMF(t *testing.T, c Case) {
	if !c.Line.Capabilities().Keypad {
		t.Skip("the line has no keypad (Capabilities)")
	}
	rc := receive(t, c)
	rc.waitAudio(t)
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := c.Line.SendDTMF(ctx, "1#9"); err != nil {
		t.Fatalf("SendDTMF(1#9) = %v, want nil", err)
	}
	if got := c.Far.Keys(t, 3); got != "1#9" {
		t.Errorf("the far party heard keys %q, want %q", got, "1#9")
	}
	c.Far.Press(t, "4*")
	if got := rc.rx.waitKeys(t, 2); got != "4*" {
		t.Errorf("Receiver.DTMF got %q from the far party's presses, want %q", got, "4*")
	}
	rc.hangUp(t)
	if got := rc.rx.keysNow(); got != "4*" {
		t.Errorf("Receiver.DTMF got %q by the end, want %q (each press once)", got, "4*")
	}
}

// The turns testMarks plays: written frames each, and whether the turn is
// cut after them.
var markTurns = []struct {
	id     string
	frames int
	cut    bool
}{
	{"turn_1", 10, false},
	{"turn_2", 10, true},
	{"turn_3", 5, false},
}

// testMarks plays three turns, the second cut (Clear, AudioClear), and
// checks the far end's playback reports: where the far end reports, each
// names a turn that was played, per turn the played milliseconds never go
// back nor beyond what was written, no turn's report follows a later
// turn's, and a turn played to its end is reported to its end; elsewhere
// nothing is reported.
func testMarks(t *testing.T, c Case) {
	if c.Frame == nil {
		t.Skip("a text line: no audio is written to it")
	}
	rc := receive(t, c)
	rc.waitAudio(t)
	written := map[string]int64{}
	tick := time.NewTicker(audio.FrameDuration)
	defer tick.Stop()
	for _, turn := range markTurns {
		c.Line.AudioStart(turn.id)
		for i := range turn.frames {
			if err := c.Line.Write(c.Frame); err != nil {
				t.Fatalf("Write of frame %d of %s = %v, want nil", i, turn.id, err)
			}
			written[turn.id] += audio.FrameDuration.Milliseconds()
			<-tick.C
		}
		if turn.cut {
			c.Line.Clear()
			c.Line.AudioClear(turn.id, written[turn.id])
		} else {
			c.Line.AudioDone(turn.id)
		}
	}
	if !c.Marks {
		time.Sleep(300 * time.Millisecond) // a report would be in by now; receive's cleanup checks there is none
		rc.hangUp(t)
		return
	}
	last := markTurns[len(markTurns)-1]
	rc.rx.waitMarks(t, func(ms []mark) bool {
		return reached(ms, markTurns[0].id, written[markTurns[0].id]) && reached(ms, last.id, written[last.id])
	})
	rc.hangUp(t)
	checkMarks(t, rc.rx.marksNow(), written)
}

// reached reports whether turn has been reported played to ms.
func reached(marks []mark, turn string, ms int64) bool {
	for _, m := range marks {
		if m.turn == turn && m.ms >= ms {
			return true
		}
	}
	return false
}

// checkMarks checks the order of the playback reports of the turns
// written (turn → ms written), played in markTurns' order.
func checkMarks(t *testing.T, marks []mark, written map[string]int64) {
	t.Helper()
	order := map[string]int{}
	for i, turn := range markTurns {
		order[turn.id] = i
	}
	latest := map[string]int64{}
	furthest := -1 // the latest turn reported so far
	for i, m := range marks {
		k, known := order[m.turn]
		switch {
		case !known:
			t.Errorf("mark %d %+v names a turn that was not played", i, m)
			continue
		case m.ms < 0 || m.ms > written[m.turn]:
			t.Errorf("mark %d %+v: %d ms played of %s, of which %d ms were written", i, m, m.ms, m.turn, written[m.turn])
		case m.ms < latest[m.turn]:
			t.Errorf("mark %d %+v goes back: %s was reported played to %d ms before", i, m, m.turn, latest[m.turn])
		case k < furthest:
			t.Errorf("mark %d %+v comes after a mark of %s, a later turn", i, m, markTurns[furthest].id)
		}
		latest[m.turn] = max(latest[m.turn], m.ms)
		furthest = max(furthest, k)
	}
}

// --- what the suite does as the runtime ---

// receiving is one Receive of a Case's line, on its own goroutine.
type receiving struct {
	c      Case
	rx     *recorder
	done   chan struct{} // closed when Receive has returned
	e      telephony.End // Receive's result, once done
	cancel context.CancelFunc
	once   sync.Once // the runtime's end: CallEnded, then Hangup
}

// receive starts c.Line.Receive with a recording Receiver. Its cleanup ends
// the call as the runtime does, if the test did not, waits for Receive to
// return, and checks how the Receiver was called.
func receive(t *testing.T, c Case) *receiving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rc := &receiving{c: c, rx: newRecorder(), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(rc.done)
		rc.e = c.Line.Receive(ctx, rc.rx)
		rc.rx.returned()
	}()
	t.Cleanup(func() {
		rc.hangUp(t)
		select {
		case <-rc.done:
		case <-time.After(Timeout):
			t.Errorf("Receive did not return within %v of Hangup", Timeout)
		}
		cancel() // the runtime's own end of Receive, in case it hangs
		select {
		case <-rc.done:
		case <-time.After(Timeout):
			t.Errorf("Receive did not return within %v of its context's end", Timeout)
			return
		}
		rc.rx.check(t)
		if m := rc.rx.marksNow(); !c.Marks && len(m) > 0 {
			t.Errorf("Receiver.Mark was called %d times (first %+v); the line's far end buffers nothing and reports nothing", len(m), m[0])
		}
	})
	return rc
}

// waitAudio waits, for a line that starts as text and has audio to carry
// (Frame), until its far end has turned audio on (Receiver.StartAudio).
func (rc *receiving) waitAudio(t *testing.T) {
	t.Helper()
	if rc.c.Frame == nil || rc.c.Line.Format() != (audio.Format{}) {
		return
	}
	rc.rx.waitFor(t, "Receiver.StartAudio", func(r *recorder) bool { return len(r.started) > 0 })
}

// wait waits for Receive to return and returns its End.
func (rc *receiving) wait(t *testing.T) telephony.End {
	t.Helper()
	select {
	case <-rc.done:
		return rc.e
	case <-time.After(Timeout):
		t.Fatalf("Receive did not return within %v", Timeout)
		return telephony.End{}
	}
}

// hangUp ends the call as the runtime does, once: the line hears how the
// call ended (CallEnded: the line's own end when Receive has returned one,
// else an end asked through the API), then it is hung up, and Receive
// returns. It may be called from any goroutine.
func (rc *receiving) hangUp(t *testing.T) {
	t.Helper()
	rc.once.Do(func() {
		outcome, reason := call.Completed, call.ReasonAPIEnded
		select {
		case <-rc.done:
			if rc.e != (telephony.End{}) {
				outcome, reason = call.Outcome(rc.e.Outcome), rc.e.Reason
			}
		default:
		}
		rc.c.Line.CallEnded(outcome, reason, false)
		hangup(t, rc.c.Line, "")
		select {
		case <-rc.done:
		case <-time.After(Timeout):
			t.Errorf("Receive did not return within %v of Hangup", Timeout)
		}
	})
}

// hangup calls line.Hangup, which must return nil within Timeout.
func hangup(t *testing.T, line telephony.Line, when string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	start := time.Now()
	if err := line.Hangup(ctx); err != nil {
		t.Errorf("Hangup %s = %v after %v, want nil", when, err, time.Since(start).Round(time.Millisecond))
	}
}

// afterEnd checks a line that has ended: Hangup again returns nil, a write
// fails, and every event of the Listener is harmless.
func afterEnd(t *testing.T, c Case, when string) {
	t.Helper()
	hangup(t, c.Line, "again, "+when)
	writeFails(t, c, when)
	eventsAfterEnd(t, c.Line)
}

// writeFails checks that a write fails once the line has ended.
func writeFails(t *testing.T, c Case, when string) {
	t.Helper()
	if c.Frame == nil {
		return
	}
	var err error
	bounded(t, "Write "+when, func() { err = c.Line.Write(c.Frame) })
	if err == nil {
		t.Errorf("Write %s = nil, want an error: the line is gone", when)
	}
}

// eventsAfterEnd sends every event of the Listener to an ended line: each
// must return, and promptly.
func eventsAfterEnd(t *testing.T, l telephony.Line) {
	t.Helper()
	bounded(t, "the runtime's events after the end", func() {
		l.SpeechStarted()
		l.SpeechStopped()
		l.AudioStart("turn_late")
		l.AudioPause("turn_late", 20)
		l.AudioResume("turn_late", 20)
		l.AudioClear("turn_late", 20)
		l.AudioDone("turn_late")
		l.Delta("turn_late", "late")
		l.TurnDone("turn_late", "late", false)
		l.Transcript(call.RoleAssistant, "late", "turn_late", true)
		l.CallEnded(call.Completed, call.ReasonCustomerEnded, true)
	})
}

// bounded runs fn and fails the test if it takes longer than Timeout.
func bounded(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(Timeout):
		t.Errorf("%s did not return within %v", what, Timeout)
		<-done
	}
}

// --- the Receiver ---

// mark is one Receiver.Mark.
type mark struct {
	turn string
	ms   int64
}

// recorder is the Receiver the suite hands to Receive. It keeps what it is
// given and counts calls that broke the contract: two at once (Receive
// calls it from one goroutine) or any after Receive returned.
type recorder struct {
	busy atomic.Int32

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every call
	bytes    int
	keys     []byte
	texts    []string
	marks    []mark
	started  []audio.Format
	overlaps int
	late     int
	done     bool
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

var _ telephony.Receiver = (*recorder)(nil)

// call runs one Receiver call under the recorder's lock, counting what
// breaks the contract.
func (r *recorder) call(fn func()) {
	if r.busy.Add(1) != 1 {
		r.mu.Lock()
		r.overlaps++
		r.mu.Unlock()
	}
	defer r.busy.Add(-1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		r.late++
	}
	fn()
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *recorder) Audio(b []byte)  { r.call(func() { r.bytes += len(b) }) }
func (r *recorder) DTMF(digit byte) { r.call(func() { r.keys = append(r.keys, digit) }) }
func (r *recorder) Text(s string)   { r.call(func() { r.texts = append(r.texts, s) }) }

func (r *recorder) Mark(turnID string, playedMs int64) {
	r.call(func() { r.marks = append(r.marks, mark{turn: turnID, ms: playedMs}) })
}

func (r *recorder) StartAudio(f audio.Format) error {
	var err error
	r.call(func() {
		if len(r.started) > 0 {
			err = errors.New("linetest: the call's audio is already on")
			return
		}
		r.started = append(r.started, f)
	})
	return err
}

// returned marks Receive's return: no call may follow.
func (r *recorder) returned() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done = true
}

// check reports the calls that broke the contract.
func (r *recorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.overlaps > 0 {
		t.Errorf("the Receiver was called from two goroutines at once %d times; Receive must call it from its own only", r.overlaps)
	}
	if r.late > 0 {
		t.Errorf("the Receiver was called %d times after Receive returned", r.late)
	}
}

// waitFor waits until cond holds under the recorder's lock.
func (r *recorder) waitFor(t *testing.T, what string, cond func(*recorder) bool) {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		r.mu.Lock()
		ok, ch := cond(r), r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s did not come within %v", what, Timeout)
		}
	}
}

// waitKeys waits for n keys and returns them all.
func (r *recorder) waitKeys(t *testing.T, n int) string {
	t.Helper()
	r.waitFor(t, fmt.Sprintf("%d keys (Receiver.DTMF)", n), func(r *recorder) bool { return len(r.keys) >= n })
	return r.keysNow()
}

func (r *recorder) keysNow() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.keys)
}

// waitMarks waits until cond holds for the marks so far.
func (r *recorder) waitMarks(t *testing.T, cond func([]mark) bool) {
	t.Helper()
	r.waitFor(t, "the far end's playback reports (Receiver.Mark) of every turn played to its end", func(r *recorder) bool { return cond(r.marks) })
}

func (r *recorder) marksNow() []mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]mark(nil), r.marks...)
}
