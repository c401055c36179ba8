package callrun

import (
	"context"
	"sync"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/telephony"
)

// recordEnder is a store's end of a call: the first end is recorded (the
// transition to ended), later ones find it ended (callctl.EndOnce).
type recordEnder struct {
	mu  sync.Mutex
	rec *call.Call
}

func (e *recordEnder) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	c, _, err := e.EndOnce(ctx, callID, outcome, reason, result)
	return c, err
}

func (e *recordEnder) EndOnce(_ context.Context, callID string, outcome call.Outcome, reason string, _ call.Result) (call.Call, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rec != nil {
		return *e.rec, false, nil
	}
	e.rec = &call.Call{ID: callID, Status: call.Ended, Outcome: outcome, EndedReason: reason}
	return *e.rec, true, nil
}

// endAll asks End of the call n times at once and returns how many
// reported ended and the errors of the others.
func endAll(t *testing.T, r *Runtime, n int) (ended int, errs []error) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			ok, err := r.End(t.Context(), "org_1", phoneCall.ID)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				ended++
			}
			if err != nil || !ok {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	return ended, errs
}

// TestEndOnce: of many ends asked of one live call at once, exactly one
// reports it ended; every other is a Conflict naming the recorded end,
// and so is an end asked while the line is still being hung up.
func TestEndOnce(t *testing.T) {
	for range 20 { // the timing differs each round
		end := &recordEnder{}
		r := New(Config{Store: &fakeStore{a: flowAssistant(t)}, Ender: end, Brains: &conversation.Brains{}})
		line := newTextLine()
		// The hang-up waits until every End has answered: the runtime
		// holds the call all along, as a SIP BYE on a slow network keeps it.
		block := make(chan struct{})
		r.Start(phoneCall, &slowHangup{textLine: line, block: block})
		recv(t, line.heard)
		const n = 16
		ended, errs := endAll(t, r, n)
		if ended != 1 || len(errs) != n-1 {
			t.Fatalf("%d concurrent Ends: %d reported ended, %d did not; want 1 and %d", n, ended, len(errs), n-1)
		}
		for _, err := range errs {
			if !apperr.Is(err, apperr.Conflict) || err.Error() != "call call_1 has already ended (completed, api-ended-call)" {
				t.Fatalf("a concurrent End that did not end the call = %v; want a Conflict %q", err, "call call_1 has already ended (completed, api-ended-call)")
			}
		}
		if ok, err := r.End(t.Context(), "org_1", phoneCall.ID); ok || !apperr.Is(err, apperr.Conflict) {
			t.Fatalf("End while the line is being hung up = %v, %v; want false, a Conflict", ok, err)
		}
		close(block)
		waitFor(t, func() bool { return r.Live() == 0 })
		if ok, err := r.End(t.Context(), "org_1", phoneCall.ID); ok || err != nil {
			t.Fatalf("End once the runtime let the call go = %v, %v; want false, nil (the caller's store says it ended)", ok, err)
		}
		r.Stop()
	}
}

// TestEndAfterCallerHungUp: a call whose caller hung up before the API's
// end arrived is not the API's end: End is a Conflict naming how it
// ended, even for the first end asked.
func TestEndAfterCallerHungUp(t *testing.T) {
	end := &recordEnder{}
	r := New(Config{Store: &fakeStore{a: flowAssistant(t)}, Ender: end, Brains: &conversation.Brains{}})
	t.Cleanup(r.Stop)
	line := newTextLine()
	// Hold the hang-up so that the runtime still holds the call when End
	// comes.
	block := make(chan struct{})
	r.Start(phoneCall, &slowHangup{textLine: line, block: block})
	recv(t, line.heard)
	line.end <- telephony.End{Outcome: "completed", Reason: call.ReasonCustomerEnded}
	waitFor(t, func() bool { end.mu.Lock(); defer end.mu.Unlock(); return end.rec != nil })
	ok, err := r.End(t.Context(), "org_1", phoneCall.ID)
	close(block)
	if ok || !apperr.Is(err, apperr.Conflict) || err.Error() != "call call_1 has already ended (completed, customer-ended-call)" {
		t.Errorf("End after the caller hung up = %v, %v; want false, Conflict naming customer-ended-call", ok, err)
	}
}

// slowHangup is a line whose hang-up waits for block (a SIP BYE that
// takes its time): the runtime holds the call meanwhile.
type slowHangup struct {
	*textLine
	block chan struct{}
}

func (l *slowHangup) Hangup(ctx context.Context) error {
	select {
	case <-l.block:
	case <-ctx.Done():
	}
	return l.textLine.Hangup(ctx)
}
