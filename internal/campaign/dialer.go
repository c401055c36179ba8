package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/lifecycle"
	"switchboard/internal/store"
)

// Defaults of Dialer.
const (
	// DefaultDialers is how many attempts a node dials at once (their
	// providers' Place under way), in batches of DefaultDialBatch. 400 in
	// batches of 200 dialed a burst about a fifth faster than 200 in
	// batches of 100 (bench-scheduler): fewer, larger transactions.
	DefaultDialers = 400
	// DefaultDialEvery is how often a dialer looks for handed-out attempts
	// (a promotion on the same node wakes it at once: Nudge).
	DefaultDialEvery = 100 * time.Millisecond
	// DefaultDialHold is how long a dialer holds an attempt it claimed
	// before another may take it: longer than a dial takes to reach its
	// claim (a few reads, then CreateCall), a third of the hand-out
	// (DefaultDialLease), so that the attempts of a dialer that died are
	// dialed by the others within it.
	DefaultDialHold = DefaultDialLease / 3
	// DefaultDialTimeout bounds one batch of dials (the providers' Place
	// included).
	DefaultDialTimeout = time.Minute
	// DefaultDialBatch is the most attempts dialed as one batch: their
	// calls are stored in one transaction (callctl.PlacePhoneCalls).
	DefaultDialBatch = 200
)

// Dialer is a node's share of the dialing: it claims the attempts the
// promoter handed out (store.ClaimDials, the one lease claimer) and dials
// them in batches of at most Batch (Dial: Service.DialAttempts), at most
// Workers attempts at once. It owns its loop and every batch's goroutine:
// Stop ends them. It is a lifecycle.Service.
type Dialer struct {
	Store store.Attempts
	// Dial places the calls of a batch of attempts.
	Dial    func(ctx context.Context, ds []store.Dial) error
	Workers int
	Batch   int
	Every   time.Duration
	Hold    time.Duration
	Timeout time.Duration
	// Refuse, when it reports true, makes the dialer claim nothing (a
	// draining node): the others take what is handed out.
	Refuse func() bool
	// CancelGrace is the end of Stop's time kept for canceled dials to
	// return: once Stop's deadline is that close, the dials still under
	// way are canceled (StopAndCancel). 0: Stop only waits.
	CancelGrace time.Duration
	Log         *slog.Logger
	now         func() time.Time

	init    sync.Once
	nudge   chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	// cancel cancels the dials' context (StopAndCancel); nil until Start.
	cancel context.CancelFunc
	// started is set by Start; a Stop before it closes stopped itself.
	mu      sync.Mutex
	started bool
	once    sync.Once
}

var _ lifecycle.Service = (*Dialer)(nil)

// channels makes the dialer's channels once, so that Nudge and Stopped
// may come before Start (the promoter may hand out before the dialer
// starts).
func (d *Dialer) channels() {
	d.init.Do(func() {
		d.nudge, d.stop, d.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	})
}

// Start begins claiming and dialing; it returns at once. ctx bounds
// nothing: the dials run until Stop.
func (d *Dialer) Start(context.Context) error {
	d.Workers = cmp.Or(d.Workers, DefaultDialers)
	d.Batch = cmp.Or(d.Batch, DefaultDialBatch)
	d.Every = cmp.Or(d.Every, DefaultDialEvery)
	d.Hold = cmp.Or(d.Hold, DefaultDialHold)
	d.Timeout = cmp.Or(d.Timeout, DefaultDialTimeout)
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = id.Now
	}
	d.channels()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return errors.New("dialer: already started")
	}
	select {
	case <-d.stop:
		return errors.New("dialer: stopped before it started")
	default:
	}
	d.started = true
	work, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go d.run(work)
	return nil
}

// Nudge makes the dialer look for handed-out attempts now (the promoter
// on this node just handed some out); it never blocks.
func (d *Dialer) Nudge() {
	d.channels()
	select {
	case d.nudge <- struct{}{}:
	default:
	}
}

func (d *Dialer) run(work context.Context) {
	var dials sync.WaitGroup
	defer close(d.stopped)
	defer d.cancel()
	defer dials.Wait()
	slots := make(chan struct{}, d.Workers)
	tick := time.NewTicker(d.Every)
	defer tick.Stop()
	var lastErr time.Time
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		case <-d.nudge:
		}
		free := d.Workers - len(slots)
		if free <= 0 || (d.Refuse != nil && d.Refuse()) {
			continue
		}
		as, err := d.Store.ClaimDials(work, d.now(), d.Hold, free)
		if err != nil {
			if work.Err() == nil && time.Since(lastErr) > 10*time.Second {
				d.Log.Warn("claiming handed-out attempts failed", "err", err)
				lastErr = time.Now()
			}
			continue
		}
		for batch := range slices.Chunk(as, d.Batch) {
			for range batch {
				slots <- struct{}{} // never blocks: free slots were counted
			}
			dials.Go(func() {
				defer func() {
					for range batch {
						<-slots
					}
					d.Nudge() // slots are free: more may be handed out
				}()
				ctx, cancel := context.WithTimeout(work, d.Timeout)
				defer cancel()
				if err := d.Dial(ctx, batch); err != nil && work.Err() == nil {
					d.Log.Warn("dialing scheduled attempts failed; another dial tries them once the hold ends",
						"attempts", len(batch), "hold", d.Hold.String(), "err", err)
				}
			})
		}
		if len(as) == free {
			d.Nudge() // there may be more: look again at once
		}
	}
}

// Stop stops claiming and waits for the dials under way, up to ctx's
// deadline. With CancelGrace, it waits until CancelGrace before the
// deadline, then cancels the dials still under way and waits for them to
// return until the deadline (StopAndCancel), saying in its error that it
// had to. A dialer never started is stopped at once.
func (d *Dialer) Stop(ctx context.Context) error {
	if !d.begin() {
		return nil
	}
	deadline, ok := ctx.Deadline()
	if d.CancelGrace <= 0 || !ok {
		return d.wait(ctx)
	}
	gctx, cancel := context.WithDeadline(ctx, deadline.Add(-d.CancelGrace))
	err := d.wait(gctx)
	cancel()
	if err == nil {
		return nil
	}
	if cerr := d.StopAndCancel(ctx); cerr != nil {
		return fmt.Errorf("%w; %w", err, cerr)
	}
	return fmt.Errorf("%w; they were canceled", err)
}

// wait waits for the stopping dialer's dials, until ctx is done.
func (d *Dialer) wait(ctx context.Context) error {
	select {
	case <-d.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dialer: stop: dials under way did not finish in time: %w", ctx.Err())
	}
}

// begin stops claiming; it reports false, having closed stopped, for a
// dialer never started.
func (d *Dialer) begin() bool {
	d.channels()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.once.Do(func() {
		close(d.stop)
		if !d.started {
			close(d.stopped)
		}
	})
	return d.started
}

// StopAndCancel cancels the dials still under way and waits for them to
// return, up to ctx's deadline: for after a Stop that ran out of time, so
// that no dial outlives the database.
func (d *Dialer) StopAndCancel(ctx context.Context) error {
	if !d.begin() {
		return nil
	}
	d.cancel()
	select {
	case <-d.stopped:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dialer: stop: canceled dials did not return in time: %w", ctx.Err())
	}
}

// Stopped is closed once the dialer has stopped and every dial returned,
// whenever that is (at once for a dialer stopped before it started).
func (d *Dialer) Stopped() <-chan struct{} {
	d.channels()
	return d.stopped
}
