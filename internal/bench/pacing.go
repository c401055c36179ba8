package bench

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
)

// The call benches (cmd/benchsip, cmd/benchtwilio) measure the same way on
// every provider, with the pieces below: the product's own audio.Pacer on
// each line, fed a speech-like signal by one Feeder, each frame timed by a
// FrameSchedule, and next to each step a Baseline of the same pacers
// writing nowhere. Sharing them is what makes the benches' figures
// comparable.

// FrameSchedule measures each frame handed to a line against the 20 ms
// schedule the pacer keeps: anchored at the first frame, restarted when a
// frame is more than audio.MaxPacerLag behind (as the pacer restarts its
// own). The Feeder keeps every pacer's queue from running dry, so there is
// one spurt per call; were a queue to run dry, the pause would count as
// lateness here (the conservative side). Frame is called from the pacer's
// goroutine only; Sent from any.
type FrameSchedule struct {
	// Sent is the frames handed to the line over the call's life.
	Sent  atomic.Int64
	t0    time.Time
	k     int64
	began bool
}

// Frame counts a frame handed to the line at now and returns how late it
// is against the schedule.
func (s *FrameSchedule) Frame(now time.Time) time.Duration {
	s.Sent.Add(1)
	if !s.began {
		s.t0, s.began = now, true
	}
	late := now.Sub(s.t0.Add(time.Duration(s.k) * audio.FrameDuration))
	if late > audio.MaxPacerLag {
		s.t0, s.k = now, 0
	}
	s.k++
	return late
}

// Each pacer is kept between LowWater and HighWater frames ahead (as a TTS
// stream is): the Feeder tops them up every FeedEvery, so a queue never
// runs dry unless the feeder is starved for most of a second. A bench's
// pacers hold HighWater frames.
const (
	LowWater  = 25
	HighWater = 40
	FeedEvery = 100 * time.Millisecond
)

// Feeder tops up every pacer added to it from a looped signal until Run's
// ctx ends.
type Feeder struct {
	mu     sync.Mutex
	pacers []*fed
	frames [][]byte
}

type fed struct {
	p    *audio.Pacer
	next int // the next frame of the signal to push (feeder only)
}

// NewFeeder feeds frames (non-empty), looped.
func NewFeeder(frames [][]byte) *Feeder { return &Feeder{frames: frames} }

// Add fills p to HighWater now and keeps it topped up.
func (f *Feeder) Add(p *audio.Pacer) {
	f.mu.Lock()
	d := &fed{p: p, next: (len(f.pacers) * 37) % len(f.frames)} // calls start at different points
	f.pacers = append(f.pacers, d)
	f.top(d)
	f.mu.Unlock()
}

// top pushes frames until d's pacer holds HighWater; f.mu is held.
func (f *Feeder) top(d *fed) {
	q := d.p.Stats().Queued
	if q >= LowWater {
		return
	}
	for ; q < HighWater; q++ {
		d.p.Push(f.frames[d.next])
		d.next = (d.next + 1) % len(f.frames)
	}
}

// Run tops up the pacers every FeedEvery until ctx ends.
func (f *Feeder) Run(ctx context.Context) {
	t := time.NewTicker(FeedEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		for _, d := range f.pacers {
			f.top(d)
		}
		f.mu.Unlock()
	}
}

// Speech is a looped speech-like signal in μ-law, 20 ms frames: a 140 Hz
// voice with a few formant harmonics, its loudness moving at a syllable
// rate (4 Hz), never silent, so that no frame is all μ-law zero (0xFF): a
// line's own silence fill, echoed back, is told apart by that
// (SilentFrame).
func Speech(seconds int) [][]byte {
	const rate = 8000
	n := seconds * rate
	pcm := make([]int16, n)
	for i := range pcm {
		t := float64(i) / rate
		env := 0.35 + 0.65*math.Abs(math.Sin(2*math.Pi*2*t)) // 4 syllables a second
		v := 0.0
		for _, h := range []struct{ f, a float64 }{{140, 1}, {280, 0.6}, {700, 0.5}, {1120, 0.35}, {2450, 0.15}} {
			v += h.a * math.Sin(2*math.Pi*h.f*t)
		}
		pcm[i] = int16(env * v / 2.6 * 12000)
	}
	frames := make([][]byte, 0, n/160)
	for i := 0; i+160 <= n; i += 160 {
		frames = append(frames, audio.MulawEncode(nil, pcm[i:i+160]))
	}
	return frames
}

// SilentFrame reports whether b is all μ-law zero: a line's fill.
func SilentFrame(b []byte) bool {
	for _, c := range b {
		if c != 0xFF {
			return false
		}
	}
	return len(b) > 0
}

// PacerSummary is what the pacers of a step report over their calls'
// lives.
type PacerSummary struct {
	Resyncs, Dropped uint64
	// JitterMed and JitterMax are the median and the max over the calls of
	// each pacer's Jitter p99.
	JitterMed, JitterMax time.Duration
}

// SummarizePacers sums ps's resyncs and drops and ranks their jitter.
func SummarizePacers(ps []*audio.Pacer) PacerSummary {
	var s PacerSummary
	jit := make([]time.Duration, 0, len(ps))
	for _, p := range ps {
		st := p.Stats()
		s.Resyncs += st.Resyncs
		s.Dropped += st.Dropped
		_, p99 := p.Jitter()
		jit = append(jit, p99)
	}
	if len(jit) > 0 {
		slices.Sort(jit)
		s.JitterMed, s.JitterMax = jit[len(jit)/2], jit[len(jit)-1]
	}
	return s
}

// Baseline is a step's baseline: frame lateness over the measured time,
// how many frames that was, how long it lasted and the CPU over it.
type Baseline struct {
	P50, P99 time.Duration
	Frames   int64
	Hold     time.Duration
	CPU      CPU
}

// RunBaseline runs n pacers, fed as a bench's calls are (started rate a
// second, then settle) and timed by the same FrameSchedule, writing to a
// line that does nothing, and measures them for d: what timers and the Go
// scheduler alone give at that count, with no provider, socket or peer.
func RunBaseline(n, rate int, frames [][]byte, settle, d time.Duration) Baseline {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cur atomic.Pointer[Lateness]
	fd := NewFeeder(frames)
	var wg sync.WaitGroup
	wg.Go(func() { fd.Run(ctx) })
	for range n {
		s := &FrameSchedule{}
		p := audio.NewPacer(HighWater, func([]byte) error {
			late := s.Frame(time.Now())
			if w := cur.Load(); w != nil {
				w.Add(late)
			}
			return nil
		}, nil)
		fd.Add(p)
		wg.Go(func() { _ = p.Run(ctx) })
		time.Sleep(time.Second / time.Duration(rate)) // the same ramp as the calls
	}
	time.Sleep(settle)
	w := &Lateness{}
	var b Baseline
	b.Hold, b.CPU = Hold(&cur, w, d, 0)
	b.P50, b.P99, b.Frames = w.Quantile(0.50), w.Quantile(0.99), int64(w.Count())
	cancel()
	wg.Wait()
	return b
}
