// Package lifecycle is the one contract of Switchboard's long-lived parts
// (riverqueue/river's startstop shape): a part starts with a context and
// stops within a deadline. It owns the contract (Service, and Reporter for
// a part that is given what it reports upward as it starts), the helper
// for a part whose stop can only be waited for (Blocking), and the runner
// (Parts) that starts a list of parts in order and stops it in reverse,
// each part by its share of the shutdown budget. It imports nothing of
// Switchboard. See docs/ARCHITECTURE.md, "Wiring and lifecycle".
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Service is a long-lived part of the server: a listener, a loop, a pool
// of calls. Its constructor takes what it calls downward; Start and Stop
// are its life.
type Service interface {
	// Start begins the part's work and returns once it is under way (a
	// socket bound, a node joined). The goroutines it starts are the
	// part's own, ended by Stop; ctx bounds the start only, not the
	// part's life.
	Start(ctx context.Context) error
	// Stop ends the part's work and returns once it has ended, or when
	// ctx is done, whichever comes first: ctx's deadline is the part's
	// share of the shutdown. A part that can cut its work short (cancel
	// its dials, cut its sockets) does so when ctx is done; work that
	// still runs then goes on ending by itself, Stop says so in its error
	// (or logs it, when the part is gone either way), and a part that has
	// such work reports when it has ended (Lingerer). Stop is safe on a
	// part that never started, and twice.
	Stop(ctx context.Context) error
}

// Lingerer is a Service whose Stop may return, by its deadline, while
// work of the part still ends (a cut web session recording its call's
// end, a dial that ignores its cancellation): Stopped is closed once all
// of it has ended, so that the database closes only then. Before Stop it
// may be nil.
type Lingerer interface {
	Service
	Stopped() <-chan struct{}
}

// Reporter is a long-lived part that reports upward (events to call
// control, calls to the runtime above it): it is given what it reports
// to, a small interface its own package names, as it starts, so that it
// cannot be started without it. Bind makes it a Service for a list.
type Reporter[U any] interface {
	Start(ctx context.Context, to U) error
	Stop(ctx context.Context) error
}

// Bind is r, started with to, as a Service. It is a Lingerer whatever r
// is: Stopped is r's when r has one, else closed once r's Stop returned.
func Bind[U any](r Reporter[U], to U) Lingerer {
	return &bound[U]{r: r, to: to, stopped: make(chan struct{})}
}

type bound[U any] struct {
	r       Reporter[U]
	to      U
	once    sync.Once
	stopped chan struct{} // closed once r's Stop returned (r without Stopped)
}

func (b *bound[U]) Start(ctx context.Context) error { return b.r.Start(ctx, b.to) }

func (b *bound[U]) Stop(ctx context.Context) error {
	defer b.once.Do(func() { close(b.stopped) })
	return b.r.Stop(ctx)
}

func (b *bound[U]) Stopped() <-chan struct{} {
	if l, ok := b.r.(interface{ Stopped() <-chan struct{} }); ok {
		return l.Stopped()
	}
	return b.stopped
}

// ErrOverran is what a Blocking stop returns when its deadline came
// first: the part goes on stopping by itself.
var ErrOverran = errors.New("did not end in time")

// Blocking makes a part's stop that can only be waited for (a pool of
// goroutines that return when they have ended their calls) into a Stop
// that returns by its deadline: the stop runs once, in a goroutine of its
// own, and Stopped is closed when it has returned. Its zero value is
// ready; a part keeps one as a field.
type Blocking struct {
	once sync.Once
	mu   sync.Mutex
	done chan struct{}
	err  error // read once done is closed
}

// Stop runs stop (the first call does; later ones wait for that run) and
// waits for it to return, or for ctx to be done: then it returns
// ErrOverran with ctx's error, and stop goes on.
func (b *Blocking) Stop(ctx context.Context, stop func() error) error {
	done := b.doneChan()
	b.once.Do(func() {
		go func() {
			defer close(done)
			b.err = stop()
		}()
	})
	select {
	case <-done:
		return b.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrOverran, ctx.Err())
	}
}

// Stopped is closed once the stop Stop ran has returned.
func (b *Blocking) Stopped() <-chan struct{} { return b.doneChan() }

func (b *Blocking) doneChan() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done == nil {
		b.done = make(chan struct{})
	}
	return b.done
}

// Part is one entry of a list of parts.
type Part struct {
	// Name names the part in errors ("stop dialer: …").
	Name    string
	Service Service
	// By is when the part must have stopped, in tenths of the stop budget
	// counted from the start of Stop (10: by the end of the budget). A
	// part that stops early leaves its time to the next. 0: the part has
	// no share; it stops once the parts with one have stopped and the
	// work they left has ended (or the budget is spent), and is waited
	// for as long as it takes: it bounds its own stop. Such parts come
	// first in the list.
	By int
	// Hint is added to the part's start error: what the operator can
	// change (a flag).
	Hint string
}

// Parts is a list of parts in the order they start; they stop in reverse.
// A part whose Service is nil (not built: off by configuration, or a
// start that failed before it was built) is left out.
type Parts []Part

// Start starts the parts in order and returns the first error, naming
// its part; the parts after it are not started. The caller then stops the
// list (Stop is safe on the parts that did not start).
func (ps Parts) Start(ctx context.Context) error {
	for _, p := range ps {
		if p.Service == nil {
			continue
		}
		if err := p.Service.Start(ctx); err != nil {
			if p.Hint != "" {
				return fmt.Errorf("start %s: %w (%s)", p.Name, err, p.Hint)
			}
			return fmt.Errorf("start %s: %w", p.Name, err)
		}
	}
	return nil
}

// Stop stops the parts in reverse order, the parts with a share each by
// its deadline: one that overruns (its Stop returns with an error, or
// leaves work that still ends) does not take the next one's time. Then
// the parts without a share stop, once the work the others left has
// ended or the budget is spent. The error names each part that did not
// stop cleanly. left is nil when nothing the parts left still runs;
// otherwise it is closed once all of that has ended, whenever that is.
func (ps Parts) Stop(ctx context.Context, budget time.Duration) (left <-chan struct{}, err error) {
	began := time.Now()
	var (
		errs    []error
		running []<-chan struct{}
		settled bool
	)
	for i := len(ps) - 1; i >= 0; i-- {
		p := ps[i]
		if p.Service == nil {
			continue
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if p.By > 0 {
			sctx, cancel = context.WithDeadline(ctx, began.Add(budget*time.Duration(p.By)/10))
		} else if !settled {
			running, settled = settle(running, began.Add(budget)), true
		}
		if err := p.Service.Stop(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", p.Name, err))
		}
		cancel()
		if l, ok := p.Service.(interface{ Stopped() <-chan struct{} }); ok {
			if ch := l.Stopped(); ch != nil {
				running = append(running, ch)
			}
		}
	}
	running = settle(running, time.Time{})
	if len(running) == 0 {
		return nil, errors.Join(errs...)
	}
	all := make(chan struct{})
	go func() {
		defer close(all)
		for _, ch := range running {
			<-ch
		}
	}()
	return all, errors.Join(errs...)
}

// settle waits until every channel of running is closed or until (zero:
// not at all) and returns those still open.
func settle(running []<-chan struct{}, until time.Time) []<-chan struct{} {
	var timeout <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		timeout = t.C
	}
	open := running[:0]
	for _, ch := range running {
		select {
		case <-ch:
			continue
		default:
		}
		if timeout != nil {
			select {
			case <-ch:
				continue
			case <-timeout:
				timeout = nil // spent: only look at the rest
			}
		}
		open = append(open, ch)
	}
	return open
}
