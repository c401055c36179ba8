package main

import (
	"sync/atomic"
	"time"

	"switchboard/internal/bench"
)

// window is the measured hold of one step: every outbound frame's
// lateness, counted while it is open.
type window struct {
	late bench.Lateness
	fill atomic.Int64 // silence frames echoed back: the line's own fill
}

// meter is what the senders of one step share: the window being measured,
// if any.
type meter struct{ cur atomic.Pointer[window] }

// sched times each frame a call's pacer hands to its line (bench's
// FrameSchedule) into the open window. frame is called from the pacer's
// goroutine only.
type sched struct {
	m *meter
	bench.FrameSchedule
}

func (s *sched) frame(now time.Time) {
	late := s.Frame(now)
	if w := s.m.cur.Load(); w != nil {
		w.late.Add(late)
	}
}
