package campaign

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/store"
)

// startDialer starts a dialer on the bundle's store and clock that dials
// with dial (nil: the service's DialAttempts), in batches of 2; Stop runs
// at cleanup.
func (b *testBundle) startDialer(t *testing.T, workers int, dial func(ctx context.Context, ds []store.Dial) error) *Dialer {
	t.Helper()
	if dial == nil {
		dial = b.svc.DialAttempts
	}
	clock := b.clock
	d := &Dialer{Store: b.store, Dial: dial, Workers: workers, Batch: 2, Every: 5 * time.Millisecond, now: func() time.Time { return clock }}
	must(t, d.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.StopAndCancel(ctx); err != nil {
			t.Error(err)
		}
	})
	return d
}

// waitPlaced waits until the provider has placed n calls (at most 10 s).
func (b *testBundle) waitPlaced(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := b.provider.placed()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDialers: two nodes' dialers, a few workers each, dial every attempt
// the promoter handed out, each once; attempts not handed out wait.
func TestDialers(t *testing.T) {
	b := setup(t, Config{MaxLeased: 40})
	b.schedule(t, 50)
	if got := b.promote(t); len(got) != 40 {
		t.Fatalf("Promote() handed out %d attempts; want MaxLeased, 40", len(got))
	}
	b.startDialer(t, 3, nil)
	b.startDialer(t, 2, nil)
	b.waitPlaced(t, 40)
	time.Sleep(50 * time.Millisecond) // any extra dial would show now
	got := b.provider.placed()
	if len(got) != 40 || len(unique(got)) != 40 {
		t.Fatalf("two dialers placed %d calls (%d distinct); want the 40 handed out, each once", len(got), len(unique(got)))
	}
	if rest := b.promote(t); len(rest) != 10 {
		t.Fatalf("Promote() after the first 40 were dialed handed out %d; want the other 10", len(rest))
	}
	if got := b.waitPlaced(t, 50); len(unique(got)) != 50 {
		t.Fatalf("placed %d distinct calls; want 50", len(unique(got)))
	}
}

// TestDialerRefuses: a draining node's dialer claims nothing; another
// node's takes the attempts.
func TestDialerRefuses(t *testing.T) {
	b := setup(t, Config{})
	b.schedule(t, 5)
	b.promote(t)
	var refused atomic.Int64
	clock := b.clock
	d := &Dialer{Store: b.store, Dial: b.svc.DialAttempts, Every: 5 * time.Millisecond, now: func() time.Time { return clock },
		Refuse: func() bool { refused.Add(1); return true }}
	must(t, d.Start(t.Context()))
	for refused.Load() < 5 {
		time.Sleep(5 * time.Millisecond)
	}
	if got := b.provider.placed(); len(got) != 0 {
		t.Fatalf("a refusing dialer placed %v; want nothing", got)
	}
	must(t, d.Stop(t.Context()))
	b.startDialer(t, 2, nil)
	if got := b.waitPlaced(t, 5); len(unique(got)) != 5 {
		t.Fatalf("the other dialer placed %v; want the 5 attempts", got)
	}
}

// untilCanceled is a Dial that says it started on started, then returns
// only once its context is canceled.
func untilCanceled(started chan<- struct{}) func(ctx context.Context, _ []store.Dial) error {
	return func(ctx context.Context, _ []store.Dial) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
}

// TestDialerStop: Stop waits for the dials under way and says so when
// they overrun; StopAndCancel cancels them and they return.
func TestDialerStop(t *testing.T) {
	b := setup(t, Config{})
	b.schedule(t, 2)
	b.promote(t)
	started := make(chan struct{}, 2)
	clock := b.clock
	d := &Dialer{Store: b.store, Every: 5 * time.Millisecond, now: func() time.Time { return clock }, Batch: 1,
		Dial: untilCanceled(started)}
	must(t, d.Start(t.Context()))
	<-started
	<-started
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := d.Stop(short); err == nil {
		t.Fatal("Stop with two dials that never end = nil; want an error saying they did not finish")
	}
	must(t, d.StopAndCancel(t.Context()))
	select {
	case <-d.Stopped():
	default:
		t.Fatal("Stopped() not closed after StopAndCancel returned")
	}
}

// TestDialerStopCancels: with CancelGrace, Stop waits for the dials under
// way until that close to its deadline, then cancels them; one that
// returns then lets Stop return by the deadline, saying they were
// canceled. A dialer never started stops at once.
func TestDialerStopCancels(t *testing.T) {
	never := &Dialer{}
	must(t, never.Stop(t.Context()))
	select {
	case <-never.Stopped():
	default:
		t.Error("Stopped() of a dialer stopped before it started is open")
	}
	b := setup(t, Config{})
	b.schedule(t, 1)
	b.promote(t)
	started := make(chan struct{}, 1)
	clock := b.clock
	d := &Dialer{Store: b.store, Every: 5 * time.Millisecond, now: func() time.Time { return clock }, CancelGrace: 100 * time.Millisecond,
		Dial: untilCanceled(started)}
	must(t, d.Start(t.Context()))
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := d.Stop(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not finish in time") || !strings.HasSuffix(err.Error(), "they were canceled") {
		t.Errorf("Stop with a dial that waits for its cancellation = %v; want it canceled", err)
	}
	if took := time.Since(began); took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("Stop took %v; want about 200 ms (the deadline less CancelGrace, then the dial's return)", took)
	}
	select {
	case <-d.Stopped():
	default:
		t.Error("Stopped() not closed after the canceled dial returned")
	}
}

// TestDialerHoldEnds: attempts held by a dialer that died (its dials never
// returned) are dialed by another once the hold ends, within the hand-out.
func TestDialerHoldEnds(t *testing.T) {
	b := setup(t, Config{})
	b.schedule(t, 3)
	b.promote(t)
	clock := b.clock
	as, err := b.store.ClaimDials(t.Context(), clock, DefaultDialHold, 10) // the dead dialer's claim
	must(t, err)
	if len(as) != 3 {
		t.Fatalf("ClaimDials = %d attempts; want 3", len(as))
	}
	b.clock = clock.Add(DefaultDialHold - time.Millisecond)
	d := b.startDialer(t, 2, nil)
	time.Sleep(50 * time.Millisecond)
	if got := b.provider.placed(); len(got) != 0 {
		t.Fatalf("while the dead dialer's hold lasts another placed %v; want nothing", got)
	}
	must(t, d.Stop(t.Context()))
	b.clock = clock.Add(DefaultDialHold)
	b.startDialer(t, 2, nil)
	if got := b.waitPlaced(t, 3); len(unique(got)) != 3 {
		t.Fatalf("after the hold ended another dialer placed %v; want the 3 attempts", got)
	}
}
