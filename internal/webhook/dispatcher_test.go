package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/store"
)

// fakeOutbox holds one message. refuse decides whether RecordDelivery
// fails, the way a database refuses bytes it cannot store.
type fakeOutbox struct {
	mu       sync.Mutex
	msg      store.OutboxMessage
	claimed  bool
	refuse   func(call int, d store.Delivery) error
	calls    []store.Delivery // every RecordDelivery call
	recorded []store.Delivery // the calls that succeeded
	state    string
	next     time.Time
	expired  []time.Time // every ExpireListeners call's now
}

func (f *fakeOutbox) ClaimOutbox(context.Context, time.Time, time.Duration, int) ([]store.OutboxMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.claimed || f.state != store.OutboxPending {
		return nil, nil
	}
	f.claimed = true
	return []store.OutboxMessage{f.msg}, nil
}

func (f *fakeOutbox) ExpireListeners(_ context.Context, now time.Time) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.expired = append(f.expired, now)
	return 0, nil
}

func (f *fakeOutbox) RecordDelivery(_ context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, d)
	if err := f.refuse(len(f.calls), d); err != nil {
		return err
	}
	f.recorded = append(f.recorded, d)
	f.state, f.next = state, next
	return nil
}

func (f *fakeOutbox) snapshot() (calls, recorded []store.Delivery, state string, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.Delivery(nil), f.calls...), append([]store.Delivery(nil), f.recorded...), f.state, f.next
}

// runDispatcher delivers f's message to a receiver answering with respond,
// until done(f) holds or 5 s pass.
func runDispatcher(t *testing.T, f *fakeOutbox, respond http.HandlerFunc, done func(f *fakeOutbox) bool) {
	t.Helper()
	b := setup(t, respond)
	f.msg = store.OutboxMessage{ID: b.msg.ID, OrgID: "org_x", WebhookID: "wh_x", URL: b.srv.URL, Secrets: []string{NewSecret()},
		Type: b.msg.Type, Payload: b.msg.Body, State: store.OutboxPending, CreatedAt: b.msg.Timestamp}
	f.state = store.OutboxPending
	ctx, cancel := context.WithCancel(context.Background())
	d := &Dispatcher{Store: f, Sender: b.sender, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Every: 5 * time.Millisecond}
	stopped := make(chan struct{})
	go func() { d.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if done(f) {
			return
		}
	}
}

var errRefused = errors.New(`ERROR: invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`)

// TestDispatcherRecordsWithoutTheAnswer: when the store refuses the
// record of a delivery, the dispatcher records it again without the
// receiver's text, so the message still reaches its state (delivered here)
// instead of being sent again every lease.
func TestDispatcherRecordsWithoutTheAnswer(t *testing.T) {
	t.Parallel()
	f := &fakeOutbox{refuse: func(call int, _ store.Delivery) error {
		if call == 1 {
			return errRefused
		}
		return nil
	}}
	runDispatcher(t, f, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") },
		func(f *fakeOutbox) bool { _, rec, _, _ := f.snapshot(); return len(rec) > 0 })
	calls, rec, state, _ := f.snapshot()
	if len(calls) != 2 || len(rec) != 1 || state != store.OutboxDelivered {
		t.Fatalf("after a refused record: %d RecordDelivery calls, %d recorded, state %q; want 2 calls, 1 recorded, delivered", len(calls), len(rec), state)
	}
	first, second := calls[0], calls[1]
	if first.Response != "ok" || second.Status != 200 || second.Attempt != 1 || second.Error != "" || second.ID == first.ID {
		t.Errorf("records = %+v then %+v; want the first with the answer, the second a new record of the same 200 attempt, no error", first, second)
	}
	if !strings.Contains(second.Response, "could not be stored") {
		t.Errorf("second record's Response = %q, want a note that the answer could not be stored", second.Response)
	}
}

// TestDispatcherRecordsFailureWithoutTheAnswer: a failed attempt whose
// record is refused is still scheduled by backoff, with its status.
func TestDispatcherRecordsFailureWithoutTheAnswer(t *testing.T) {
	t.Parallel()
	f := &fakeOutbox{refuse: func(call int, _ store.Delivery) error {
		if call == 1 {
			return errRefused
		}
		return nil
	}}
	start := time.Now()
	runDispatcher(t, f, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "d\u00e9j\u00e0 \x00 vu")
	}, func(f *fakeOutbox) bool { _, rec, _, _ := f.snapshot(); return len(rec) > 0 })
	calls, rec, state, next := f.snapshot()
	if len(rec) != 1 || state != store.OutboxPending || next.Before(start.Add(4*time.Second)) {
		t.Fatalf("after a refused record of a 503: %d calls, %d recorded, state %q, next in %v; want recorded, pending, next after the 5 s backoff",
			len(calls), len(rec), state, next.Sub(start))
	}
	if got := rec[0]; got.Status != 503 || got.Error != "endpoint answered 503 Service Unavailable" || got.Attempt != 1 {
		t.Errorf("recorded %+v, want attempt 1, status 503 and its error", got)
	}
}

// TestDispatcherGivesUpAfterTheFallback: a store that refuses every record
// gets two tries per attempt, not a loop.
func TestDispatcherGivesUpAfterTheFallback(t *testing.T) {
	t.Parallel()
	f := &fakeOutbox{refuse: func(int, store.Delivery) error { return errRefused }}
	runDispatcher(t, f, func(w http.ResponseWriter, r *http.Request) {},
		func(f *fakeOutbox) bool { calls, _, _, _ := f.snapshot(); return len(calls) >= 2 })
	// runDispatcher has stopped the dispatcher and waited for its deliveries.
	if calls, _, _, _ := f.snapshot(); len(calls) != 2 {
		t.Errorf("a store refusing every record got %d RecordDelivery calls for one attempt, want 2", len(calls))
	}
}

// TestDispatcherExpiresListeners: every dispatcher deletes the expired
// listeners at its first poll, then every ExpireEvery of its clock, with
// that clock's time.
func TestDispatcherExpiresListeners(t *testing.T) {
	t.Parallel()
	f := &fakeOutbox{refuse: func(int, store.Delivery) error { return nil }}
	var mu sync.Mutex
	clock := time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	calls := func() []time.Time { f.mu.Lock(); defer f.mu.Unlock(); return append([]time.Time(nil), f.expired...) }
	d := &Dispatcher{Store: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Every: 2 * time.Millisecond,
		ExpireEvery: time.Minute, Now: now}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { d.Run(ctx); close(stopped) }()
	defer func() { cancel(); <-stopped }()
	waitFor := func(what string, n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); len(calls()) < n; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: ExpireListeners called at %v; want %d calls", what, calls(), n)
			}
		}
	}
	waitFor("the first poll", 1)
	start := now()
	advance(59 * time.Second)
	time.Sleep(20 * time.Millisecond) // polls go on; none may expire before the minute
	if got := calls(); len(got) != 1 {
		t.Fatalf("59 s after the first expiry: ExpireListeners called at %v; want once", got)
	}
	advance(time.Second)
	waitFor("a minute later", 2)
	if got := calls(); !got[0].Equal(start) || !got[1].Equal(start.Add(time.Minute)) {
		t.Errorf("ExpireListeners called at %v; want %v then a minute later, the dispatcher's clock", got, start)
	}
}
