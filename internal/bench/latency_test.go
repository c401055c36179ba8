package bench

import (
	"testing"
	"time"
)

func TestLateness(t *testing.T) {
	var h Lateness
	if q := h.Quantile(.99); q != 0 {
		t.Errorf("empty Quantile(.99) = %s, want 0", q)
	}
	for i := range 100 {
		h.Add(time.Duration(i) * time.Millisecond) // 0..99 ms
	}
	h.Add(-time.Millisecond) // early counts as on time
	h.Add(time.Hour)         // beyond the last bucket
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0, latenessWidth}, {.5, 49*time.Millisecond + latenessWidth}, {.99, 99*time.Millisecond + latenessWidth}, {1, time.Duration(latenessBuckets+1) * latenessWidth}} {
		if got := h.Quantile(tt.q); got != tt.want {
			t.Errorf("Quantile(%v) = %s, want %s", tt.q, got, tt.want)
		}
	}
	if n := h.Count(); n != 102 {
		t.Errorf("Count = %d, want 102", n)
	}
}
