package audio

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sink records what a Pacer sends and when, relative to t0.
type sink struct {
	t0    time.Time
	delay func(k int) time.Duration // time send takes for the k-th frame
	fail  int                       // send k fails when k == fail (0: never)

	mu     sync.Mutex
	at     []time.Duration
	frames []byte // first byte of each frame
}

func newSink() *sink { return &sink{t0: time.Now()} }

func (s *sink) send(f []byte) error {
	s.mu.Lock()
	k := len(s.at)
	s.at = append(s.at, time.Since(s.t0))
	s.frames = append(s.frames, f[0])
	s.mu.Unlock()
	if s.fail != 0 && k+1 == s.fail {
		return errSend
	}
	if s.delay != nil {
		time.Sleep(s.delay(k))
	}
	return nil
}

func (s *sink) times() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

func (s *sink) sent() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.frames)
}

var errSend = errors.New("socket closed")

// run starts p.Run in a goroutine of the bubble and returns a stop function
// that cancels it and returns Run's error.
func run(p *Pacer) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() error {
		cancel()
		return <-done
	}
}

func frame(i int) []byte { return []byte{byte(i), 0, 0} }

func ms(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Millisecond
	}
	return out
}

// TestPacerSchedule checks send times against the ideal schedule for several
// send-delay profiles: frames leave exactly every 20 ms, the time spent in
// send does not accumulate (drift correction), a late frame is followed by
// on-time ones, and a stall longer than MaxPacerLag restarts the schedule
// instead of bursting the backlog.
func TestPacerSchedule(t *testing.T) {
	tests := []struct {
		name        string
		delay       func(k int) time.Duration
		want        []time.Duration
		wantMaxLate time.Duration
		wantResyncs uint64
	}{
		{"exact cadence", nil, ms(0, 20, 40, 60, 80, 100, 120, 140), 0, 0},
		{"send takes 7 ms each", func(int) time.Duration { return 7 * time.Millisecond },
			ms(0, 20, 40, 60, 80, 100, 120, 140), 0, 0},
		{"send takes 19 ms each", func(int) time.Duration { return 19 * time.Millisecond },
			ms(0, 20, 40, 60, 80, 100, 120, 140), 0, 0},
		{"one 30 ms stall", func(k int) time.Duration {
			if k == 2 {
				return 30 * time.Millisecond
			}
			return 0
		}, ms(0, 20, 40, 70, 80, 100, 120, 140), 10 * time.Millisecond, 0},
		{"one 90 ms stall catches up", func(k int) time.Duration {
			if k == 1 {
				return 90 * time.Millisecond
			}
			return 0
		}, ms(0, 20, 110, 110, 110, 110, 120, 140), 70 * time.Millisecond, 0},
		{"a 150 ms stall restarts the schedule", func(k int) time.Duration {
			if k == 1 {
				return 150 * time.Millisecond
			}
			return 0
		}, ms(0, 20, 170, 190, 210, 230, 250, 270), 130 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newSink()
				s.delay = tt.delay
				p := NewPacer(16, s.send, nil)
				for i := range len(tt.want) {
					p.Push(frame(i))
				}
				stop := run(p)
				time.Sleep(time.Second)
				if err := stop(); !errors.Is(err, context.Canceled) {
					t.Errorf("Pacer.Run after cancel = %v, want context.Canceled", err)
				}
				if got := s.times(); !slices.Equal(got, tt.want) {
					t.Errorf("Pacer send times (%s) = %v, want %v", tt.name, got, tt.want)
				}
				st := p.Stats()
				if st.Sent != uint64(len(tt.want)) || st.MaxLateness != tt.wantMaxLate || st.Resyncs != tt.wantResyncs {
					t.Errorf("Pacer.Stats (%s) = %+v, want Sent %d, MaxLateness %v, Resyncs %d",
						tt.name, st, len(tt.want), tt.wantMaxLate, tt.wantResyncs)
				}
				if got, want := p.Played(), time.Duration(len(tt.want))*FrameDuration; got != want {
					t.Errorf("Pacer.Played (%s) = %v, want %v", tt.name, got, want)
				}
			})
		})
	}
}

func TestPacerJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.delay = func(k int) time.Duration {
			if k == 50 {
				return 30 * time.Millisecond // one frame of 100 leaves 10 ms late
			}
			return 0
		}
		p := NewPacer(128, s.send, nil)
		if p50, p99 := p.Jitter(); p50 != 0 || p99 != 0 {
			t.Errorf("Pacer.Jitter before any frame = %v, %v; want 0, 0", p50, p99)
		}
		for i := range 100 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(3 * time.Second)
		stop()
		if p50, p99 := p.Jitter(); p50 != 0 || p99 != 0 {
			t.Errorf("Pacer.Jitter with 1 late frame in 100 = %v, %v; want 0, 0 (p99 is the 99th frame)", p50, p99)
		}
		// Two late frames in 100 reach the 99th percentile.
		s2 := newSink()
		s2.delay = func(k int) time.Duration {
			if k == 10 || k == 60 {
				return 30 * time.Millisecond
			}
			return 0
		}
		p = NewPacer(128, s2.send, nil)
		for i := range 100 {
			p.Push(frame(i))
		}
		stop = run(p)
		time.Sleep(3 * time.Second)
		stop()
		if p50, p99 := p.Jitter(); p50 != 0 || p99 != 10*time.Millisecond {
			t.Errorf("Pacer.Jitter with 2 frames 10 ms late in 100 = %v, %v; want 0, 10ms", p50, p99)
		}
	})
}

func TestPacerDropOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		p := NewPacer(3, s.send, nil)
		var dropped []bool
		for i := range 5 {
			dropped = append(dropped, p.Push(frame(i)))
		}
		if want := []bool{false, false, false, true, true}; !slices.Equal(dropped, want) {
			t.Errorf("Pacer(capacity 3).Push ×5 dropped = %v, want %v", dropped, want)
		}
		stop := run(p)
		time.Sleep(time.Second)
		stop()
		if got, want := s.sent(), []byte{2, 3, 4}; !slices.Equal(got, want) {
			t.Errorf("Pacer(capacity 3) after 5 pushes sent frames %v, want %v (oldest dropped)", got, want)
		}
		if st := p.Stats(); st.Dropped != 2 || st.Sent != 3 {
			t.Errorf("Pacer.Stats = %+v, want Dropped 2, Sent 3", st)
		}
	})
}

// TestPacerClear: barge-in drops everything queued at once; nothing queued
// before Clear is sent afterwards, Played stops at what was sent, and audio
// pushed afterwards starts at once.
func TestPacerClear(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		p := NewPacer(16, s.send, nil)
		for i := range 10 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(50 * time.Millisecond) // frames 0, 1, 2 sent at 0, 20, 40
		if n := p.Clear(); n != 7 {
			t.Errorf("Pacer.Clear after 3 of 10 frames = %d, want 7", n)
		}
		if st := p.Stats(); st.Queued != 0 || st.Cleared != 7 {
			t.Errorf("Pacer.Stats right after Clear = %+v, want Queued 0, Cleared 7", st)
		}
		time.Sleep(200 * time.Millisecond)
		if got := s.sent(); !slices.Equal(got, []byte{0, 1, 2}) {
			t.Errorf("Pacer sent %v after Clear, want only [0 1 2]", got)
		}
		if got := p.Played(); got != 60*time.Millisecond {
			t.Errorf("Pacer.Played after Clear = %v, want 60ms (only sent audio)", got)
		}
		p.Push(frame(20)) // at 250 ms: the next turn starts immediately
		synctest.Wait()
		if got := s.times(); got[len(got)-1] != 250*time.Millisecond {
			t.Errorf("Pacer sent the first frame after Clear at %v, want 250ms", got[len(got)-1])
		}
		stop()
	})
}

// TestPacerClearMidSend: Clear while a frame is inside send; only that frame
// gets out.
func TestPacerClearMidSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.delay = func(int) time.Duration { return 15 * time.Millisecond }
		p := NewPacer(16, s.send, nil)
		for i := range 10 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(25 * time.Millisecond) // frame 1 is in send (20–35 ms)
		p.Clear()
		time.Sleep(time.Second)
		stop()
		if got := s.sent(); !slices.Equal(got, []byte{0, 1}) {
			t.Errorf("Pacer sent %v after Clear during send, want [0 1]", got)
		}
	})
}

// TestPacerPauseResume: Pause stops the audio at once and keeps its place;
// Resume carries on from the next frame at once, with no burst for the
// paused time; frames pushed meanwhile wait their turn.
func TestPacerPauseResume(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		p := NewPacer(16, s.send, nil)
		for i := range 6 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(50 * time.Millisecond) // frames 0, 1, 2 sent at 0, 20, 40
		if !p.Pause() || p.Pause() {
			t.Errorf("Pacer.Pause twice = want true, then false")
		}
		p.Push(frame(6))
		time.Sleep(200 * time.Millisecond)
		if got := s.sent(); !slices.Equal(got, []byte{0, 1, 2}) {
			t.Errorf("Pacer sent %v while paused, want only [0 1 2]", got)
		}
		if st := p.Stats(); st.Queued != 4 || st.Pauses != 1 || st.Cleared != 0 || !p.Paused() {
			t.Errorf("Pacer.Stats while paused = %+v (Paused %v), want Queued 4, Pauses 1, Cleared 0, paused", st, p.Paused())
		}
		if got := p.Played(); got != 60*time.Millisecond {
			t.Errorf("Pacer.Played while paused = %v, want 60ms", got)
		}
		if !p.Resume() || p.Resume() { // at 250 ms
			t.Errorf("Pacer.Resume twice = want true, then false")
		}
		time.Sleep(200 * time.Millisecond)
		stop()
		if got := s.sent(); !slices.Equal(got, []byte{0, 1, 2, 3, 4, 5, 6}) {
			t.Errorf("Pacer sent %v after Resume, want every frame in order", got)
		}
		if got, want := s.times(), ms(0, 20, 40, 250, 270, 290, 310); !slices.Equal(got, want) {
			t.Errorf("Pacer send times = %v, want %v (resumed at 250 ms, then every 20 ms)", got, want)
		}
	})
}

// TestPacerPauseMidSend: Pause while a frame is inside send; only that
// frame gets out, and the next one follows at Resume.
func TestPacerPauseMidSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.delay = func(int) time.Duration { return 15 * time.Millisecond }
		p := NewPacer(16, s.send, nil)
		for i := range 10 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(25 * time.Millisecond) // frame 1 is in send (20–35 ms)
		p.Pause()
		time.Sleep(time.Second)
		if got := s.sent(); !slices.Equal(got, []byte{0, 1}) {
			t.Errorf("Pacer sent %v after Pause during send, want [0 1]", got)
		}
		p.Resume()
		synctest.Wait()
		stop()
		if got := s.sent(); len(got) != 3 || got[2] != 2 {
			t.Errorf("Pacer sent %v after Resume, want frame 2 next", got)
		}
	})
}

// TestPacerClearWhilePaused: a paused turn that is then cut drops its
// queue; after Resume the next turn's audio starts at once.
func TestPacerClearWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		p := NewPacer(16, s.send, nil)
		for i := range 10 {
			p.Push(frame(i))
		}
		stop := run(p)
		time.Sleep(30 * time.Millisecond) // frames 0, 1
		p.Pause()
		time.Sleep(100 * time.Millisecond)
		if n := p.Clear(); n != 8 {
			t.Errorf("Pacer.Clear while paused = %d, want 8", n)
		}
		p.Resume()
		time.Sleep(100 * time.Millisecond)
		p.Push(frame(20)) // at 230 ms
		synctest.Wait()
		stop()
		if got, want := s.sent(), []byte{0, 1, 20}; !slices.Equal(got, want) {
			t.Errorf("Pacer sent %v, want %v", got, want)
		}
		if got := s.times(); got[2] != 230*time.Millisecond {
			t.Errorf("the next turn's first frame went at %v, want 230ms", got[2])
		}
	})
}

// TestPacerSpurts: an idle Pacer sends a new frame at once; a frame pushed
// while the previous one is still playing waits for its slot.
func TestPacerSpurts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		p := NewPacer(16, s.send, nil)
		stop := run(p)
		p.Push(frame(0)) // t=0: sent at once
		time.Sleep(10 * time.Millisecond)
		p.Push(frame(1)) // t=10: frame 0 still playing until 20
		time.Sleep(90 * time.Millisecond)
		p.Push(frame(2)) // t=100: idle since 40, sent at once
		p.Push(frame(3))
		time.Sleep(100 * time.Millisecond)
		stop()
		if got, want := s.times(), ms(0, 20, 100, 120); !slices.Equal(got, want) {
			t.Errorf("Pacer send times = %v, want %v", got, want)
		}
	})
}

func TestPacerSendError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink()
		s.fail = 3
		p := NewPacer(16, s.send, nil)
		for i := range 10 {
			p.Push(frame(i))
		}
		if err := p.Run(context.Background()); !errors.Is(err, errSend) {
			t.Errorf("Pacer.Run with failing send = %v, want %v", err, errSend)
		}
		if got := p.Played(); got != 40*time.Millisecond {
			t.Errorf("Pacer.Played after send failed on frame 3 = %v, want 40ms", got)
		}
	})
}

func TestPacerRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPacer(1, newSink().send, nil)
		stop := run(p)
		synctest.Wait()
		if err := p.Run(context.Background()); !errors.Is(err, ErrPacerRunning) {
			t.Errorf("second concurrent Pacer.Run = %v, want ErrPacerRunning", err)
		}
		stop()
	})
}

// fakeClock is a hand-driven Clock, proving the Pacer uses only the clock it
// is given.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
	t   *fakeTimer
}

type fakeTimer struct {
	c   chan time.Time
	at  time.Time
	set bool
	clk *fakeClock
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), set: true, clk: c}
	return c.t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clk.mu.Lock()
	defer t.clk.mu.Unlock()
	t.at, t.set = t.clk.now.Add(d), true
	return true
}
func (t *fakeTimer) Stop() bool { t.clk.mu.Lock(); defer t.clk.mu.Unlock(); t.set = false; return true }

// advance moves time forward and fires the timer if due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	if t := c.t; t != nil && t.set && !c.now.Before(t.at) {
		t.set = false
		t.c <- c.now
	}
	c.mu.Unlock()
}

func TestPacerInjectedClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		var mu sync.Mutex
		var at []time.Duration
		send := func([]byte) error {
			mu.Lock()
			defer mu.Unlock()
			at = append(at, clk.Now().Sub(time.Unix(1000, 0)))
			return nil
		}
		p := NewPacer(4, send, clk)
		for i := range 3 {
			p.Push(frame(i))
		}
		stop := run(p)
		for range 10 {
			synctest.Wait()
			clk.advance(10 * time.Millisecond)
		}
		synctest.Wait()
		stop()
		// The bubble's clock never moved; the Pacer paced by the injected one.
		mu.Lock()
		defer mu.Unlock()
		if want := ms(0, 20, 40); !slices.Equal(at, want) {
			t.Errorf("Pacer with an injected clock sent at %v, want %v", at, want)
		}
	})
}

func TestNewPacerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("NewPacer(0, …) did not panic")
		}
	}()
	NewPacer(0, func([]byte) error { return nil }, nil)
}

// TestLatencyHist checks the histogram's buckets: every value lands in a
// bucket whose upper bound is at least the value and within 1/16 of it.
func TestLatencyHist(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<20; us += 1 + us/97 {
		i := histIndex(us)
		if i < prev || i >= histBuckets {
			t.Fatalf("histIndex(%d) = %d, want monotonic and < %d (previous %d)", us, i, histBuckets, prev)
		}
		prev = i
		if up := histUpper(i); up < us || float64(up-us) > float64(us)/16+1 {
			t.Fatalf("histUpper(histIndex(%d)) = %d, want in [%d, %d]", us, up, us, us+us/16+1)
		}
	}
	if i := histIndex(1 << 40); i != histBuckets-1 {
		t.Errorf("histIndex(2^40) = %d, want the last bucket %d", i, histBuckets-1)
	}
	var h latencyHist
	for i := range 100 {
		h.add(time.Duration(i+1) * time.Millisecond) // 1..100 ms
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}} {
		got := h.quantile(tt.q)
		if got < tt.want || got > tt.want+tt.want/16 {
			t.Errorf("latencyHist{1..100 ms}.quantile(%v) = %v, want %v (+1/16)", tt.q, got, tt.want)
		}
	}
}
