package main

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/bench"
)

// window is the measured hold of one step: every outbound frame's
// lateness and every mark's delay, counted while it is open.
type window struct {
	late    bench.Lateness
	inbound atomic.Int64 // caller frames handed to Receive

	// Marks' delays are kept whole (at most 50 a call and second): once
	// the fake falls behind real time they grow past any histogram's
	// range, and by how much is the figure.
	mu          sync.Mutex
	markLags    []time.Duration
	markUnknown int // marks of frames older than the ring
}

// mark adds one mark's delay; ok false: its frame's time is not known.
func (w *window) mark(d time.Duration, ok bool) {
	w.mu.Lock()
	if ok {
		w.markLags = append(w.markLags, d)
	} else {
		w.markUnknown++
	}
	w.mu.Unlock()
}

// marks returns the delays sorted, and the unknown count; call it once
// the window is closed.
func (w *window) marks() (bench.Latencies, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := bench.Latencies(slices.Clone(w.markLags))
	slices.Sort(l)
	return l, w.markUnknown
}

// meter is what the senders of one step share: the window being measured,
// if any.
type meter struct{ cur atomic.Pointer[window] }

// ringFrames is how many frames' write times a call keeps for the marks'
// delay (20 s); a mark of an older frame is counted apart.
const ringFrames = 1024

// sched times each frame a call's pacer hands to its line (bench's
// FrameSchedule) into the open window, and keeps when recent frames were
// handed over, for the marks. frame is called from the pacer's goroutine
// only; sentAt from the line's Receive.
type sched struct {
	m *meter
	bench.FrameSchedule
	// at[i % ringFrames] is when frame i (from 0) was handed to the line,
	// in unix nanoseconds: a mark names how much of the turn was sent.
	at [ringFrames]atomic.Int64
}

func (s *sched) frame(now time.Time) {
	s.at[s.Sent.Load()%ringFrames].Store(now.UnixNano())
	late := s.Frame(now)
	if w := s.m.cur.Load(); w != nil {
		w.late.Add(late)
	}
}

// sentAt is when frame i (from 0) was handed to the line; ok is false when
// it is not (or no longer) known.
func (s *sched) sentAt(i int64) (time.Time, bool) {
	n := s.Sent.Load()
	if i < 0 || i >= n || i < n-ringFrames+1 {
		return time.Time{}, false
	}
	return time.Unix(0, s.at[i%ringFrames].Load()), true
}
