package lifecycle_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/lifecycle"
)

// recorder notes what the parts of a test did, in order.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// part is a Service that notes its start and stop; stop, when set, is
// its stop's work (ctx is the part's share).
type part struct {
	name     string
	rec      *recorder
	startErr error
	stop     func(ctx context.Context) error
}

var _ lifecycle.Service = (*part)(nil)

func (p *part) Start(context.Context) error {
	p.rec.note("start " + p.name)
	return p.startErr
}

func (p *part) Stop(ctx context.Context) error {
	p.rec.note("stop " + p.name)
	if p.stop != nil {
		return p.stop(ctx)
	}
	return nil
}

// lingering is a part whose Stop returns at once and leaves its work to
// end when done is closed.
type lingering struct {
	part
	done chan struct{}
}

var _ lifecycle.Lingerer = (*lingering)(nil)

func (l *lingering) Stopped() <-chan struct{} { return l.done }

// TestOrder: parts start in order and stop in reverse; a part not built
// (nil) is left out; a failed start names its part and hint, and the parts
// after it do not start.
func TestOrder(t *testing.T) {
	rec := &recorder{}
	ps := lifecycle.Parts{
		{Name: "a", Service: &part{name: "a", rec: rec}},
		{Name: "off"},
		{Name: "b", Service: &part{name: "b", rec: rec}, By: 5},
		{Name: "c", Service: &part{name: "c", rec: rec}, By: 10},
	}
	if err := ps.Start(t.Context()); err != nil {
		t.Fatalf("Start = %v", err)
	}
	left, err := ps.Stop(t.Context(), time.Second)
	if err != nil || left != nil {
		t.Fatalf("Stop = %v, %v; want nil, nil", left, err)
	}
	want := []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}
	if got := rec.list(); !slices.Equal(got, want) {
		t.Errorf("Start then Stop did %q, want %q", got, want)
	}

	rec = &recorder{}
	ps = lifecycle.Parts{
		{Name: "a", Service: &part{name: "a", rec: rec}},
		{Name: "sip", Service: &part{name: "sip", rec: rec, startErr: errors.New("address in use")}, Hint: "--sip-addr off disables it"},
		{Name: "c", Service: &part{name: "c", rec: rec}},
	}
	err = ps.Start(t.Context())
	if err == nil || err.Error() != "start sip: address in use (--sip-addr off disables it)" {
		t.Errorf("Start with a failing part = %v, want it named with its hint", err)
	}
	if got, want := rec.list(), []string{"start a", "start sip"}; !slices.Equal(got, want) {
		t.Errorf("Start with a failing part did %q, want %q", got, want)
	}
}

// TestShares: each part with a share stops by its own deadline, counted
// from the start of Stop; one that overruns takes none of the next one's
// time, and its error names it; a part that stops early leaves its time
// to the next.
func TestShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		began := time.Now()
		deadlines := map[string]time.Duration{}
		var mu sync.Mutex
		at := func(name string, block bool) func(ctx context.Context) error {
			return func(ctx context.Context) error {
				d, _ := ctx.Deadline()
				mu.Lock()
				deadlines[name] = d.Sub(began)
				mu.Unlock()
				if block {
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			}
		}
		ps := lifecycle.Parts{
			{Name: "last", Service: &part{name: "last", rec: rec, stop: at("last", false)}, By: 10},
			{Name: "slow", Service: &part{name: "slow", rec: rec, stop: at("slow", true)}, By: 4},
			{Name: "quick", Service: &part{name: "quick", rec: rec, stop: at("quick", false)}, By: 2},
		}
		_, err := ps.Stop(context.Background(), 10*time.Second)
		if err == nil || !strings.Contains(err.Error(), "stop slow: context deadline exceeded") || strings.Contains(err.Error(), "quick") {
			t.Errorf("Stop with an overrunning part = %v, want only it named", err)
		}
		want := map[string]time.Duration{"quick": 2 * time.Second, "slow": 4 * time.Second, "last": 10 * time.Second}
		for name, d := range want {
			if deadlines[name] != d {
				t.Errorf("part %s stopped with a deadline %v after Stop began, want %v", name, deadlines[name], d)
			}
		}
		if took := time.Since(began); took != 4*time.Second {
			t.Errorf("Stop took %v, want 4s (the overrunning part's share, then the rest at once)", took)
		}
	})
}

// TestLeftOver: work a part leaves running is waited for before the parts
// without a share stop, within the budget; what still runs after it is
// left, and the returned channel closes once it has ended.
func TestLeftOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		quick := &lingering{part: part{name: "quick", rec: rec}, done: make(chan struct{})}
		stuck := &lingering{part: part{name: "stuck", rec: rec}, done: make(chan struct{})}
		began := time.Now()
		var leftAt time.Duration
		last := &part{name: "leave", rec: rec, stop: func(ctx context.Context) error {
			if _, ok := ctx.Deadline(); ok {
				t.Error("a part without a share got a deadline")
			}
			leftAt = time.Since(began)
			return nil
		}}
		ps := lifecycle.Parts{
			{Name: "leave", Service: last},
			{Name: "stuck", Service: stuck, By: 10},
			{Name: "quick", Service: quick, By: 2},
		}
		go func() {
			time.Sleep(time.Second)
			close(quick.done)
		}()
		left, err := ps.Stop(context.Background(), 5*time.Second)
		if err != nil {
			t.Errorf("Stop = %v, want nil (the parts' Stop returned nil)", err)
		}
		if leftAt != 5*time.Second {
			t.Errorf("the part without a share stopped %v after Stop began, want 5s (the budget: stuck still ran)", leftAt)
		}
		if left == nil {
			t.Fatal("Stop left nothing running, want stuck's work")
		}
		select {
		case <-left:
			t.Fatal("left closed while stuck's work runs")
		default:
		}
		close(stuck.done)
		synctest.Wait()
		select {
		case <-left:
		default:
			t.Error("left still open once the work ended")
		}
		if got, want := rec.list(), []string{"stop quick", "stop stuck", "stop leave"}; !slices.Equal(got, want) {
			t.Errorf("Stop did %q, want %q", got, want)
		}
	})
}

// TestBlocking: a stop that can only be waited for returns ErrOverran at
// its deadline and goes on; Stopped closes when it has returned, and a
// second Stop waits for the same run.
func TestBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b lifecycle.Blocking
		release := make(chan struct{})
		runs := 0
		stop := func() error {
			runs++
			<-release
			return errors.New("closed badly")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := b.Stop(ctx, stop); !errors.Is(err, lifecycle.ErrOverran) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop past its deadline = %v, want ErrOverran and the deadline", err)
		}
		select {
		case <-b.Stopped():
			t.Fatal("Stopped closed while the stop runs")
		default:
		}
		close(release)
		synctest.Wait()
		select {
		case <-b.Stopped():
		default:
			t.Fatal("Stopped open once the stop returned")
		}
		if err := b.Stop(context.Background(), stop); err == nil || err.Error() != "closed badly" || runs != 1 {
			t.Errorf("second Stop = %v after %d runs, want the first run's error and one run", err, runs)
		}
	})
}

// reporter is a Reporter of string: it notes what it was started with.
type reporter struct{ to string }

var _ lifecycle.Reporter[string] = (*reporter)(nil)

func (r *reporter) Start(_ context.Context, to string) error {
	r.to = to
	return nil
}

func (r *reporter) Stop(context.Context) error { return nil }

// TestBind: a bound Reporter starts with what it was bound to; its
// Stopped closes once its Stop returned.
func TestBind(t *testing.T) {
	r := &reporter{}
	s := lifecycle.Bind[string](r, "call control")
	if err := s.Start(t.Context()); err != nil || r.to != "call control" {
		t.Fatalf("Start = %v, started with %q; want nil, %q", err, r.to, "call control")
	}
	select {
	case <-s.Stopped():
		t.Fatal("Stopped closed before Stop")
	default:
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Stopped():
	default:
		t.Error("Stopped open after Stop returned")
	}
}
