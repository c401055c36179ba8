package webhook

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/store"
)

// fakeListenerStore holds one listener's messages: ClaimListener hands
// out the pending ones not held, RecordDelivery settles them.
type fakeListenerStore struct {
	mu       sync.Mutex
	org, wh  string
	msgs     []store.OutboxMessage
	held     map[string]bool
	state    map[string]string
	next     map[string]time.Time
	recorded []store.Delivery
	renewals []time.Time
	gone     bool
}

func newFakeListenerStore(t *testing.T, n int) *fakeListenerStore {
	f := &fakeListenerStore{org: "org_a", wh: "wh_a", held: map[string]bool{}, state: map[string]string{}, next: map[string]time.Time{}}
	secret := NewSecret()
	for range n {
		m, err := NewMessage("call.ended", time.Date(2026, 3, 1, 14, 5, 9, 0, time.UTC), map[string]any{"call": map[string]any{"id": "call_x"}})
		if err != nil {
			t.Fatal(err)
		}
		f.msgs = append(f.msgs, store.OutboxMessage{ID: m.ID, OrgID: f.org, WebhookID: f.wh, Secrets: []string{secret}, Type: m.Type,
			Payload: m.Body, State: store.OutboxPending, CreatedAt: m.Timestamp})
		f.state[m.ID] = store.OutboxPending
	}
	return f
}

func (f *fakeListenerStore) ClaimListener(_ context.Context, org, wh string, _ time.Time, _ time.Duration, limit int) ([]store.OutboxMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if org != f.org || wh != f.wh || f.gone {
		return nil, apperr.NotFoundf("webhook listener not found")
	}
	var out []store.OutboxMessage
	for i, m := range f.msgs {
		if len(out) < limit && f.state[m.ID] == store.OutboxPending && !f.held[m.ID] {
			f.held[m.ID] = true
			out = append(out, f.msgs[i])
		}
	}
	return out, nil
}

func (f *fakeListenerStore) RenewListener(_ context.Context, org, wh string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if org != f.org || wh != f.wh || f.gone {
		return apperr.NotFoundf("webhook listener not found")
	}
	f.renewals = append(f.renewals, until)
	return nil
}

func (f *fakeListenerStore) RecordDelivery(_ context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, d)
	f.state[m.ID], f.next[m.ID] = state, next
	f.held[m.ID] = false
	for i := range f.msgs {
		if f.msgs[i].ID == m.ID {
			f.msgs[i].Attempts = d.Attempt
		}
	}
	return nil
}

func (f *fakeListenerStore) snapshot() ([]store.Delivery, map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := map[string]string{}
	for k, v := range f.state {
		st[k] = v
	}
	return slices.Clone(f.recorded), st
}

// fakeListenConn is the stream's far end: frames come out on sent, acks
// go in on acks; closing end ends the stream.
type fakeListenConn struct {
	sent chan ListenFrame
	acks chan ListenAck
	end  chan struct{}
	once sync.Once
}

func newFakeListenConn() *fakeListenConn {
	return &fakeListenConn{sent: make(chan ListenFrame, 64), acks: make(chan ListenAck), end: make(chan struct{})}
}

var errStreamEnded = errors.New("stream ended")

func (c *fakeListenConn) Send(ctx context.Context, f ListenFrame) error {
	select {
	case c.sent <- f:
		return nil
	case <-c.end:
		return errStreamEnded
	}
}

func (c *fakeListenConn) Recv(ctx context.Context) (ListenAck, error) {
	select {
	case a := <-c.acks:
		return a, nil
	case <-c.end:
		return ListenAck{}, errStreamEnded
	case <-ctx.Done():
		return ListenAck{}, ctx.Err()
	}
}

func (c *fakeListenConn) close() { c.once.Do(func() { close(c.end) }) }

// serve runs a Listener on f over c until the test ends; it returns what
// Serve returned, once it has.
func serve(t *testing.T, l *Listener, f *fakeListenerStore, c *fakeListenConn) <-chan error {
	t.Helper()
	l.Store, l.Log = f, slog.New(slog.NewTextHandler(io.Discard, nil))
	if l.Every == 0 {
		l.Every = 2 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, stopped := make(chan error, 1), make(chan struct{})
	go func() {
		done <- l.Serve(ctx, f.org, f.wh, c)
		close(stopped)
	}()
	t.Cleanup(func() {
		cancel()
		c.close()
		<-stopped
	})
	return done
}

func next(t *testing.T, c *fakeListenConn) ListenFrame {
	t.Helper()
	select {
	case f := <-c.sent:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery frame within 5 s")
	}
	return ListenFrame{}
}

func ack(t *testing.T, c *fakeListenConn, a ListenAck) {
	t.Helper()
	select {
	case c.acks <- a:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream took no ack within 5 s")
	}
}

// waitRecorded waits until n attempts are recorded.
func waitRecorded(t *testing.T, f *fakeListenerStore, n int) []store.Delivery {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if rec, _ := f.snapshot(); len(rec) >= n {
			return rec
		}
		if time.Now().After(deadline) {
			rec, _ := f.snapshot()
			t.Fatalf("%d attempts recorded within 5 s (%+v); want %d", len(rec), rec, n)
		}
	}
}

// TestListenerDeliversSigned: a delivery frame carries the raw body and
// headers that verify with the endpoint's secret exactly as an HTTP
// attempt's do; an ok ack records the attempt delivered with the local
// receiver's status and answer, made printable.
func TestListenerDeliversSigned(t *testing.T) {
	t.Parallel()
	f, c := newFakeListenerStore(t, 1), newFakeListenConn()
	serve(t, &Listener{}, f, c)
	fr := next(t, c)
	m := f.msgs[0]
	if fr.Type != FrameDelivery || fr.MessageID != m.ID || fr.Event != "call.ended" || fr.Attempt != 1 || fr.Body != string(m.Payload) {
		t.Fatalf("delivery frame = %+v; want type delivery, message %s, event call.ended, attempt 1, the raw body", fr, m.ID)
	}
	h := http.Header{}
	for k, v := range fr.Headers {
		h.Set(k, v)
	}
	if err := Verify(m.Secrets, h, []byte(fr.Body), time.Now(), 0); err != nil {
		t.Errorf("Verify(the frame's headers and body) = %v; want nil", err)
	}
	for _, name := range []string{"content-type", "user-agent", "webhook-id", "webhook-timestamp", "webhook-signature"} {
		if fr.Headers[name] == "" {
			t.Errorf("delivery frame headers %v lack %s", fr.Headers, name)
		}
	}
	ack(t, c, ListenAck{Type: FrameAck, MessageID: m.ID, OK: true, Status: 204, Response: "ok\x00\x1b"})
	rec := waitRecorded(t, f, 1)
	if _, st := f.snapshot(); st[m.ID] != store.OutboxDelivered || rec[0].Status != 204 || rec[0].Error != "" || rec[0].Attempt != 1 ||
		rec[0].Response != `ok\x00\x1b` {
		t.Errorf("after an ok ack: state %s, recorded %+v; want delivered, attempt 1, status 204, response %q", st[m.ID], rec[0], `ok\x00\x1b`)
	}
}

// TestListenerFailedAckIsRetried: a failed ack (the listener could not
// verify the signature, or its receiver answered 500) is a failed attempt
// with the listener's reason, pending for the retry schedule's next try.
func TestListenerFailedAckIsRetried(t *testing.T) {
	t.Parallel()
	f, c := newFakeListenerStore(t, 1), newFakeListenConn()
	serve(t, &Listener{}, f, c)
	fr := next(t, c)
	start := time.Now()
	ack(t, c, ListenAck{Type: FrameAck, MessageID: fr.MessageID, OK: false, Status: 500, Error: "signature not verified: webhook: no matching signature"})
	rec := waitRecorded(t, f, 1)
	_, st := f.snapshot()
	f.mu.Lock()
	nextAt := f.next[fr.MessageID]
	f.mu.Unlock()
	if st[fr.MessageID] != store.OutboxPending || rec[0].Status != 500 || !strings.Contains(rec[0].Error, "no matching signature") ||
		nextAt.Before(start.Add(4*time.Second)) {
		t.Errorf("after a failed ack: state %s, recorded %+v, next in %v; want pending, status 500, the listener's error, next after the 5 s backoff",
			st[fr.MessageID], rec[0], nextAt.Sub(start))
	}
}

// TestListenerStreamEndLosesNothing: deliveries sent and not acknowledged
// when the stream ends are failed attempts, pending again (retried by the
// next stream), not lost; an ack for a message the stream did not send
// changes nothing.
func TestListenerStreamEndLosesNothing(t *testing.T) {
	t.Parallel()
	f, c := newFakeListenerStore(t, 3), newFakeListenConn()
	done := serve(t, &Listener{}, f, c)
	var got []string
	for range 3 {
		got = append(got, next(t, c).MessageID)
	}
	ack(t, c, ListenAck{Type: FrameAck, MessageID: "msg_not_sent_here", OK: true})
	ack(t, c, ListenAck{Type: FrameAck, MessageID: got[0], OK: true})
	waitRecorded(t, f, 1)
	c.close()
	if err := <-done; !errors.Is(err, errStreamEnded) {
		t.Errorf("Serve after the stream ended = %v; want the stream's error", err)
	}
	rec, st := f.snapshot()
	if len(rec) != 3 {
		t.Fatalf("recorded %+v; want 3 attempts (1 acknowledged, 2 cut short)", rec)
	}
	for _, mid := range got[1:] {
		if st[mid] != store.OutboxPending {
			t.Errorf("message %s unacknowledged when the stream ended: state %s; want pending (retried)", mid, st[mid])
		}
	}
	for _, d := range rec[1:] {
		if !strings.Contains(d.Error, "stream ended before it acknowledged") {
			t.Errorf("attempt cut short recorded %+v; want an error saying the stream ended first", d)
		}
	}
	if st[got[0]] != store.OutboxDelivered || st["msg_not_sent_here"] != "" {
		t.Errorf("states %v; want %s delivered and nothing for an unknown id", st, got[0])
	}
}

// TestListenerAckTimeout: a delivery with no ack within AckTimeout is a
// failed attempt, and the stream sends the next due message meanwhile.
func TestListenerAckTimeout(t *testing.T) {
	t.Parallel()
	f, c := newFakeListenerStore(t, 1), newFakeListenConn()
	serve(t, &Listener{AckTimeout: 20 * time.Millisecond}, f, c)
	fr := next(t, c)
	rec := waitRecorded(t, f, 1)
	if rec[0].MessageID != fr.MessageID || !strings.Contains(rec[0].Error, "did not acknowledge") {
		t.Errorf("recorded %+v; want a failure of %s saying it was not acknowledged", rec[0], fr.MessageID)
	}
}

// TestListenerGone: a stream whose listener is deleted ends with
// ErrListenerGone; one on a listener that does not exist never starts.
func TestListenerGone(t *testing.T) {
	t.Parallel()
	f, c := newFakeListenerStore(t, 0), newFakeListenConn()
	done := serve(t, &Listener{}, f, c)
	f.mu.Lock()
	f.gone = true
	f.mu.Unlock()
	select {
	case err := <-done:
		if !errors.Is(err, ErrListenerGone) {
			t.Errorf("Serve after the listener was deleted = %v; want ErrListenerGone", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve went on for 5 s after its listener was deleted")
	}
	l := &Listener{Store: f, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if err := l.Serve(context.Background(), "org_other", f.wh, newFakeListenConn()); !errors.Is(err, ErrListenerGone) {
		t.Errorf("Serve(another organization's listener) = %v; want ErrListenerGone", err)
	}
}
