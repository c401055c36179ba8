package conversation

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
)

// scriptBrain replies from a script: each caller text maps to a reply.
type scriptBrain struct {
	open    Reply
	replies map[string]Reply
	errs    []error // returned (and consumed) before replying
	said    []string
}

func (b *scriptBrain) Open(ctx context.Context, emit func(string)) (Reply, error) {
	emit(b.open.Text)
	return b.open, nil
}

func (b *scriptBrain) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	if len(b.errs) > 0 {
		err := b.errs[0]
		b.errs = b.errs[1:]
		return Reply{}, err
	}
	r := b.replies[text]
	for _, w := range strings.SplitAfter(r.Text, " ") {
		emit(w)
	}
	return r, nil
}

func (b *scriptBrain) Said(text string)    { b.said = append(b.said, text) }
func (b *scriptBrain) Result() call.Result { return call.Result{Vars: map[string]any{"k": "v"}} }

// recorder is the transport and the stores.
type recorder struct {
	mu      sync.Mutex
	events  []string
	turns   []call.Turn
	ended   string
	outcome call.Outcome
	result  call.Result
}

func (r *recorder) add(s string)              { r.mu.Lock(); r.events = append(r.events, s); r.mu.Unlock() }
func (r *recorder) Delta(turnID, text string) {}
func (r *recorder) TurnDone(turnID, text string, interrupted bool) {
	r.add("done " + turnID + " " + text)
}
func (r *recorder) Transcript(role, text, turnID string, final bool) {
	r.add("transcript " + role + " " + text)
}
func (r *recorder) Ended(outcome call.Outcome, reason string) {
	r.add("ended " + string(outcome) + " " + reason)
}
func (r *recorder) AppendTurn(ctx context.Context, t call.Turn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.turns = append(r.turns, t)
	return nil
}
func (r *recorder) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended, r.outcome, r.result = reason, outcome, result
	return call.Call{}, nil
}

func testAssistant() assistant.Assistant {
	a := assistant.Defaults(assistant.DefaultProviders())
	a.FirstMessage = "Hello!"
	a.MaxDurationSeconds, a.SilenceTimeoutSeconds = 600, 30
	return a
}

func run(t *testing.T, a assistant.Assistant, b Brain, inputs ...Input) (*recorder, string) {
	t.Helper()
	rec := &recorder{}
	in := make(chan Input, len(inputs))
	for _, i := range inputs {
		in <- i
	}
	reason := Run(context.Background(), Config{Call: call.Call{ID: "call_x", OrgID: "org_x"}, Assistant: a, Brain: b, Turns: rec, Ender: rec}, in, rec)
	return rec, reason
}

func TestConversationTurns(t *testing.T) {
	b := &scriptBrain{open: Reply{Text: "How can I help?"}, replies: map[string]Reply{"book tuesday": {Text: "Booked for Tuesday."}}}
	rec, reason := run(t, testAssistant(), b, Input{Kind: UserText, Text: "book tuesday"}, Input{Kind: Hangup})
	if reason != call.ReasonCustomerEnded || rec.ended != call.ReasonCustomerEnded || rec.outcome != call.Completed {
		t.Errorf("Run ended %q (recorded %q %q), want %s completed", reason, rec.ended, rec.outcome, call.ReasonCustomerEnded)
	}
	want := []string{
		"done turn_1 Hello!", "transcript assistant Hello!",
		"done turn_2 How can I help?", "transcript assistant How can I help?",
		"transcript user book tuesday",
		"done turn_4 Booked for Tuesday.", "transcript assistant Booked for Tuesday.",
		"ended completed customer-ended-call",
	}
	if strings.Join(rec.events, "|") != strings.Join(want, "|") {
		t.Errorf("events:\n got %q\nwant %q", rec.events, want)
	}
	if len(rec.turns) != 4 || rec.turns[2].Role != call.RoleUser || rec.turns[3].Seq != 4 || rec.turns[3].Text != "Booked for Tuesday." {
		t.Errorf("turns = %+v", rec.turns)
	}
	if rec.turns[3].Latency < 0 {
		t.Errorf("assistant turn latency = %v", rec.turns[3].Latency)
	}
	if len(b.said) != 1 || b.said[0] != "Hello!" {
		t.Errorf("brain was told %q, want the first message", b.said)
	}
	if rec.result.Vars["k"] != "v" {
		t.Errorf("result = %+v, want the brain's", rec.result)
	}
}

func TestConversationEnds(t *testing.T) {
	bye := &scriptBrain{replies: map[string]Reply{"thanks": {Text: "Goodbye!", End: true}}}
	if _, reason := run(t, testAssistant(), bye, Input{Kind: UserText, Text: "thanks"}); reason != call.ReasonAssistantEnded {
		t.Errorf("brain End: reason %q, want %s", reason, call.ReasonAssistantEnded)
	}
	a := testAssistant()
	a.EndCallPhrases = []string{"have a nice day"}
	phrase := &scriptBrain{replies: map[string]Reply{"ok": {Text: "Great, have a nice day!"}}}
	if _, reason := run(t, a, phrase, Input{Kind: UserText, Text: "ok"}); reason != call.ReasonAssistantEnded {
		t.Errorf("end-call phrase: reason %q, want %s", reason, call.ReasonAssistantEnded)
	}
	// The caller goes away: the input channel closes.
	rec := &recorder{}
	gone := make(chan Input)
	close(gone)
	if reason := Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: testAssistant(), Brain: &scriptBrain{}, Turns: rec, Ender: rec}, gone, rec); reason != call.ReasonCustomerEnded {
		t.Errorf("closed input: reason %q, want %s", reason, call.ReasonCustomerEnded)
	}
}

type tempErr struct{ temp bool }

func (e tempErr) Error() string   { return "provider failed" }
func (e tempErr) Temporary() bool { return e.temp }

func TestConversationBrainFailure(t *testing.T) {
	// A transient failure is retried once.
	b := &scriptBrain{errs: []error{tempErr{true}}, replies: map[string]Reply{"hi": {Text: "Hello there."}}}
	quick := testAssistant()
	quick.SilenceTimeoutSeconds = 1 // ends the call after the reply
	rec, _ := run(t, quick, b, Input{Kind: UserText, Text: "hi"})
	if !strings.Contains(strings.Join(rec.events, "|"), "transcript assistant Hello there.") {
		t.Errorf("after one transient failure: events %q, want the reply", rec.events)
	}
	// A permanent failure says the fallback and ends the call failed.
	b = &scriptBrain{errs: []error{tempErr{false}}}
	rec, reason := run(t, testAssistant(), b, Input{Kind: UserText, Text: "hi"})
	if reason != call.ReasonModelFailed || rec.outcome != call.Failed {
		t.Errorf("permanent failure: reason %q outcome %q, want %s failed", reason, rec.outcome, call.ReasonModelFailed)
	}
	if !strings.Contains(strings.Join(rec.events, "|"), Fallback) {
		t.Errorf("permanent failure: events %q, want the fallback said", rec.events)
	}
	// Two transient failures in a row end the call too.
	b = &scriptBrain{errs: []error{tempErr{true}, tempErr{true}}}
	if _, reason := run(t, testAssistant(), b, Input{Kind: UserText, Text: "hi"}); reason != call.ReasonModelFailed {
		t.Errorf("two transient failures: reason %q, want %s", reason, call.ReasonModelFailed)
	}
	if Retryable(errors.New("x")) {
		t.Errorf("Retryable(plain error) = true")
	}
}

func TestConversationTimers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := testAssistant()
		a.SilenceTimeoutSeconds = 10
		in := make(chan Input)
		rec := &recorder{}
		start := time.Now()
		reason := Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: &scriptBrain{}, Turns: rec, Ender: rec}, in, rec)
		if reason != call.ReasonSilenceTimeout || time.Since(start) != 10*time.Second {
			t.Errorf("silence: reason %q after %s, want %s after 10s", reason, time.Since(start), call.ReasonSilenceTimeout)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		a := testAssistant()
		a.MaxDurationSeconds, a.SilenceTimeoutSeconds = 20, 15
		in := make(chan Input)
		rec := &recorder{}
		b := &scriptBrain{replies: map[string]Reply{"still here": {Text: "Good."}}}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { // keep talking every 10 s so silence never fires
			for {
				select {
				case <-done:
					return
				case <-time.After(10 * time.Second):
				}
				select {
				case in <- Input{Kind: UserText, Text: "still here"}:
				case <-done:
					return
				}
			}
		})
		start := time.Now()
		reason := Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: b, Turns: rec, Ender: rec}, in, rec)
		close(done)
		wg.Wait()
		if reason != call.ReasonMaxDuration || time.Since(start) != 20*time.Second {
			t.Errorf("max duration: reason %q after %s, want %s after 20s", reason, time.Since(start), call.ReasonMaxDuration)
		}
	})
}

var timeNow = time.Now

// slowBrain streams words slowly until its context is canceled.
type slowBrain struct {
	scriptBrain
	started chan struct{}
}

func (b *slowBrain) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	if text != "tell me a long story" {
		return b.scriptBrain.Respond(ctx, text, emit)
	}
	emit("Once upon a time")
	close(b.started)
	<-ctx.Done()
	return Reply{}, ctx.Err()
}

// TestConversationInterrupt: a caller turn during a streaming reply cuts it
// short; the transcript keeps what was said, marked interrupted, and the
// new turn is answered.
func TestConversationInterrupt(t *testing.T) {
	b := &slowBrain{scriptBrain: scriptBrain{replies: map[string]Reply{"stop, book tuesday": {Text: "Booked."}}}, started: make(chan struct{})}
	rec := &recorder{}
	in := make(chan Input)
	go func() {
		in <- Input{Kind: UserText, Text: "tell me a long story"}
		<-b.started
		in <- Input{Kind: UserText, Text: "stop, book tuesday"}
		in <- Input{Kind: Hangup}
	}()
	Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: testAssistant(), Brain: b, Turns: rec, Ender: rec}, in, rec)
	var got []string
	for _, tr := range rec.turns {
		s := tr.Role + ":" + tr.Text
		if tr.Interrupted {
			s += "(interrupted)"
		}
		got = append(got, s)
	}
	want := []string{"assistant:Hello!", "user:tell me a long story", "assistant:Once upon a time(interrupted)", "user:stop, book tuesday", "assistant:Booked."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("turns:\n got %q\nwant %q", got, want)
	}
}
