package bench

import (
	"math"
	"sync/atomic"
	"time"
)

// Lateness is a lock-free histogram of how late real-time work ran (an
// audio frame against its 20 ms schedule): 25 µs buckets up to 100 ms,
// then one overflow bucket. Safe for concurrent use; the zero value is
// ready.
type Lateness struct {
	b [latenessBuckets + 1]atomic.Uint64
}

const (
	latenessWidth   = 25 * time.Microsecond
	latenessBuckets = int(100 * time.Millisecond / latenessWidth)
)

// Add counts one lateness (negative counts as 0).
func (h *Lateness) Add(d time.Duration) {
	h.b[min(int(max(d, 0)/latenessWidth), latenessBuckets)].Add(1)
}

// Count is how many were added.
func (h *Lateness) Count() uint64 {
	var n uint64
	for i := range h.b {
		n += h.b[i].Load()
	}
	return n
}

// Quantile is the upper edge of the bucket holding the q-th value (just
// over 100 ms for the overflow bucket; 0 when empty).
func (h *Lateness) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := max(uint64(math.Ceil(q*float64(n))), 1)
	var cum uint64
	for i := range h.b {
		cum += h.b[i].Load()
		if cum >= rank {
			return time.Duration(i+1) * latenessWidth
		}
	}
	return time.Duration(latenessBuckets+1) * latenessWidth
}
