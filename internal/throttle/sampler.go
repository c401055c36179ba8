package throttle

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// DefaultSampleWindow is how long a Sampler counts instead of logging.
const DefaultSampleWindow = 10 * time.Second

// Sampler keeps a flood of like events (refusals) from filling the disk
// with log lines: in each window the first event of each reason is logged
// in full by the caller, and the rest are counted; when the window closes
// the Sampler writes one line with the counts by reason. So a flood costs
// at most one line per reason plus one per window, and a lone event is
// logged as before. It has no end: Flush writes the open window's counts
// at shutdown, and events after it are sampled the same way (a listener
// may outlive the component that owns the Sampler).
type Sampler struct {
	log    *slog.Logger
	msg    string
	window time.Duration

	mu      sync.Mutex
	seen    map[string]bool  // reasons logged in full in this window
	counts  map[string]int64 // events not logged one by one, by reason
	timer   *time.Timer      // closes the window; nil when no window is open
	started time.Time
}

// NewSampler returns a Sampler whose summary lines say msg. window <= 0
// means DefaultSampleWindow.
func NewSampler(log *slog.Logger, msg string, window time.Duration) *Sampler {
	if window <= 0 {
		window = DefaultSampleWindow
	}
	return &Sampler{log: log, msg: msg, window: window, seen: map[string]bool{}, counts: map[string]int64{}}
}

// Sample records one event of reason and reports whether the caller should
// log it in full (the first of its reason in this window).
func (s *Sampler) Sample(reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer == nil {
		s.started = time.Now()
		s.timer = time.AfterFunc(s.window, s.flush)
	}
	if !s.seen[reason] {
		s.seen[reason] = true
		return true
	}
	s.counts[reason]++
	return false
}

// flush closes the window: one line with the counts, if any.
func (s *Sampler) flush() {
	s.mu.Lock()
	counts, started := s.counts, s.started
	s.counts, s.seen, s.timer = map[string]int64{}, map[string]bool{}, nil
	s.mu.Unlock()
	if len(counts) == 0 {
		return
	}
	var total int64
	reasons := make([]string, 0, len(counts))
	for r, n := range counts {
		reasons = append(reasons, r)
		total += n
	}
	slices.Sort(reasons)
	by := make([]any, 0, len(reasons))
	for _, r := range reasons {
		by = append(by, slog.Int64(r, counts[r]))
	}
	s.log.LogAttrs(context.Background(), slog.LevelWarn, s.msg, slog.Int64("count", total),
		slog.Duration("window", time.Since(started).Round(time.Millisecond)), slog.Group("by_reason", by...))
}

// Flush closes the open window now, writing its counts, if any (at
// shutdown, so that they are not lost). Sampling goes on: the next event
// opens a new window.
func (s *Sampler) Flush() {
	s.mu.Lock()
	t := s.timer
	s.mu.Unlock()
	if t != nil && t.Stop() {
		s.flush()
	}
}
