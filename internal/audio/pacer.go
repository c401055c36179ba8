package audio

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// MaxPacerLag is how far behind schedule a Pacer may fall before it gives up
// catching up. Up to this lag, late frames are followed by on-time ones
// (the schedule is kept, so brief stalls do not accumulate into drift); past
// it, the Pacer restarts its schedule from now rather than bursting the
// backlog, because audio sent faster than real time piles up in the client's
// buffer where barge-in can no longer reach it.
const MaxPacerLag = 5 * FrameDuration

// Clock is the time source a Pacer schedules against, so tests and benchmarks
// can substitute one. SystemClock is the real clock, and inside a
// testing/synctest bubble it is the bubble's fake clock as well.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a Pacer uses (one timer, reset each
// frame, so the per-frame loop allocates nothing).
type Timer interface {
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// SystemClock is the Clock backed by package time.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.Timer.C }

// Pacer releases outbound frames in real time, one every FrameDuration,
// through a bounded queue. Producers (TTS through an Encoder) run faster than
// real time; if their output went straight to the socket it would sit in the
// client's buffer, and barge-in could not take back what the caller has not
// yet heard. Holding it here keeps the lead at zero, so Clear is the
// barge-in: it removes everything not yet sent.
//
// Frames are sent on a schedule anchored at the start of each talk spurt
// (frame k is due at start + k·FrameDuration), not by sleeping a frame
// length after each send, so the time spent in send and timer wake-up delay
// never accumulate into drift. When the queue runs dry the spurt ends; the
// next frame pushed starts a new one at once.
//
// Pause holds the queue where it is (the caller started to speak: the
// assistant falls silent at once but keeps its place) and Resume carries on
// from the next frame, as a new spurt; Clear drops the queue (the caller
// did interrupt).
//
// Push, Clear, Pause, Resume, Played, Stats and Jitter are safe to call
// from any goroutine while one goroutine, owned by the caller, runs Run.
type Pacer struct {
	send    func([]byte) error
	clock   Clock
	wake    chan struct{} // capacity 1: a frame was pushed
	running atomic.Bool
	sent    atomic.Uint64

	mu      sync.Mutex
	q       [][]byte // ring buffer of len capacity
	head, n int
	paused  bool
	dropped uint64
	cleared uint64
	pauses  uint64
	resyncs uint64
	maxLate time.Duration
	hist    latencyHist
}

// PacerStats is a snapshot of a Pacer's counters, for per-call metrics and
// benchmarks.
type PacerStats struct {
	Sent        uint64        // frames send accepted
	Dropped     uint64        // oldest frames discarded because the queue was full
	Cleared     uint64        // frames discarded by Clear (barge-in)
	Pauses      uint64        // times Pause held the queue
	Queued      int           // frames waiting now
	Resyncs     uint64        // times the schedule restarted after falling MaxPacerLag behind
	MaxLateness time.Duration // worst send time behind the ideal schedule
}

// NewPacer returns a Pacer that queues at most capacity frames and hands each
// to send in turn. Since Push never blocks, capacity is the most audio a
// producer may run ahead of real time (50 frames = 1 s); a producer that
// renders faster, such as TTS, should watch Stats().Queued rather than push
// a whole long answer at once. send is called only from Run, so it need not be safe for
// concurrent use; an error from it ends Run. A nil clock means SystemClock.
// capacity below 1 is a programming error and panics.
func NewPacer(capacity int, send func([]byte) error, clock Clock) *Pacer {
	if capacity < 1 {
		panic(fmt.Sprintf("audio: NewPacer: capacity must be at least 1, got %d", capacity))
	}
	if clock == nil {
		clock = SystemClock
	}
	return &Pacer{send: send, clock: clock, wake: make(chan struct{}, 1), q: make([][]byte, capacity)}
}

// Push queues frame, which the Pacer now owns, for sending. When the queue is
// full the oldest frame is dropped (and counted) and Push reports true: in
// real-time audio, late audio is worth less than current audio, and a
// producer must never block the pipeline.
func (p *Pacer) Push(frame []byte) (dropped bool) {
	p.mu.Lock()
	if p.n == len(p.q) {
		p.q[p.head] = nil
		p.head = (p.head + 1) % len(p.q)
		p.n--
		p.dropped++
		dropped = true
	}
	p.q[(p.head+p.n)%len(p.q)] = frame
	p.n++
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return dropped
}

// Clear drops every queued frame and returns how many: the barge-in cut-off.
// It takes effect at once: Run sends nothing queued before Clear, so at most
// the one frame already inside send reaches the client afterwards.
func (p *Pacer) Clear() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := p.n
	for i := range n {
		p.q[(p.head+i)%len(p.q)] = nil
	}
	p.head, p.n = 0, 0
	p.cleared += uint64(n)
	return n
}

// Pause stops sending: nothing queued is sent after it returns, but at most
// the one frame already inside send, until Resume. The queue keeps its
// frames (Push still adds, and drops oldest when full). It reports false
// when the Pacer was already paused.
func (p *Pacer) Pause() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused {
		return false
	}
	p.paused = true
	p.pauses++
	return true
}

// Resume sends again from the oldest queued frame, at once, as a new spurt
// (no burst to catch up on the paused time). It reports false when the
// Pacer was not paused.
func (p *Pacer) Resume() bool {
	p.mu.Lock()
	was := p.paused
	p.paused = false
	p.mu.Unlock()
	if was {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return was
}

// Paused reports whether the Pacer is paused.
func (p *Pacer) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// Played is how much audio send has accepted, FrameDuration per frame; after
// barge-in it tells how much of the turn the caller can have heard (dropped
// and cleared frames are not counted).
func (p *Pacer) Played() time.Duration {
	return time.Duration(p.sent.Load()) * FrameDuration
}

// Stats returns a snapshot of the counters.
func (p *Pacer) Stats() PacerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return PacerStats{
		Sent:        p.sent.Load(),
		Dropped:     p.dropped,
		Cleared:     p.cleared,
		Pauses:      p.pauses,
		Queued:      p.n,
		Resyncs:     p.resyncs,
		MaxLateness: p.maxLate,
	}
}

// Jitter returns the median and 99th percentile of how late frames were sent
// relative to the ideal schedule, the figure benchmarks compare against the
// ≤ 30 ms jitter target. Values are exact below 32 µs and within 1/16
// (rounded up) above; both are 0 before the first frame.
func (p *Pacer) Jitter() (p50, p99 time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return min(p.hist.quantile(0.50), p.maxLate), min(p.hist.quantile(0.99), p.maxLate)
}

// ErrPacerRunning is returned by Run when another Run of the same Pacer is
// active: two loops would each send at full rate.
var ErrPacerRunning = errors.New("audio: Pacer.Run is already running")

// Run sends queued frames on schedule until ctx is done (returning
// ctx.Err()) or send fails (returning its error). The caller owns the
// goroutine that runs it and stops it through ctx; frames still queued stay
// queued, and Run may be called again.
func (p *Pacer) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return ErrPacerRunning
	}
	defer p.running.Store(false)

	timer := p.clock.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	var (
		start  time.Time // due time of frame 0 of the current spurt
		k      int64     // index of the next frame in the spurt
		active bool      // a spurt is under way
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !active {
			if !p.ready() {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-p.wake:
				}
				continue
			}
			start, k, active = p.clock.Now(), 0, true
		}
		due := start.Add(time.Duration(k) * FrameDuration)
		if wait := due.Sub(p.clock.Now()); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-timer.C():
			}
		}
		now := p.clock.Now()
		frame, ok := p.pop(max(now.Sub(due), 0))
		if !ok {
			active = false // ran dry or paused: the spurt is over
			continue
		}
		if now.Sub(due) > MaxPacerLag {
			p.mu.Lock()
			p.resyncs++
			p.mu.Unlock()
			start, k = now, 0
		}
		if err := p.send(frame); err != nil {
			return err
		}
		p.sent.Add(1)
		k++
	}
}

// ready reports whether a frame may be sent: one is queued and the Pacer
// is not paused.
func (p *Pacer) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n > 0 && !p.paused
}

// pop takes the oldest frame unless the Pacer is paused and, if there is
// one, records that it leaves late behind schedule.
func (p *Pacer) pop(late time.Duration) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 || p.paused {
		return nil, false
	}
	f := p.q[p.head]
	p.q[p.head] = nil
	p.head = (p.head + 1) % len(p.q)
	p.n--
	p.hist.add(late)
	p.maxLate = max(p.maxLate, late)
	return f, true
}

// latencyHist is a fixed-size log-linear histogram of durations in
// microseconds: exact below 32 µs, then 16 buckets per power of two (≤ 1/16
// relative error) up to about 67 s, all in 3 KB, so a call of any length can
// keep one without growing.
type latencyHist struct {
	counts [histBuckets]uint64
	total  uint64
}

const (
	histSub     = 16 // buckets per power of two
	histMaxBits = 26 // 2^26 µs ≈ 67 s: larger values share the last bucket
	histBuckets = (histMaxBits-4)*histSub + histSub
)

func histIndex(us uint64) int {
	us = min(us, 1<<histMaxBits-1)
	if us < 2*histSub {
		return int(us)
	}
	n := bits.Len64(us) // ≥ 6
	shift := n - 5
	return shift*histSub + int(us>>uint(shift)) // us>>shift in [16, 32)
}

// histUpper is the largest value, in µs, that falls in bucket i.
func histUpper(i int) uint64 {
	if i < 2*histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	m := uint64(i%histSub + histSub)
	return (m+1)<<uint(shift) - 1
}

func (h *latencyHist) add(d time.Duration) {
	h.counts[histIndex(uint64(d/time.Microsecond))]++
	h.total++
}

func (h *latencyHist) quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(h.total))), 1)
	var cum uint64
	for i, c := range h.counts {
		cum += c
		if cum >= rank {
			return time.Duration(histUpper(i)) * time.Microsecond
		}
	}
	return time.Duration(histUpper(histBuckets-1)) * time.Microsecond
}
