package webhook

import (
	"testing"
	"time"
)

func TestBackoffSchedule(t *testing.T) {
	t.Parallel()
	nominal := []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	if MaxAttempts != len(nominal) {
		t.Fatalf("MaxAttempts = %d, want %d", MaxAttempts, len(nominal))
	}
	for i, base := range nominal {
		attempt := i + 1
		lo, hi := base-base/10, base+base/10
		seen := map[time.Duration]bool{}
		for range 200 {
			got, ok := Backoff(attempt)
			if !ok || got < lo || got > hi {
				t.Fatalf("Backoff(%d) = %v, %v; want in [%v, %v], true", attempt, got, ok, lo, hi)
			}
			seen[got] = true
		}
		if base > 0 && len(seen) < 2 {
			t.Errorf("Backoff(%d) returned %d distinct waits in 200 calls, want jitter", attempt, len(seen))
		}
	}
	for _, attempt := range []int{-1, 0, MaxAttempts + 1, 100} {
		if got, ok := Backoff(attempt); ok || got != 0 {
			t.Errorf("Backoff(%d) = %v, %v; want 0, false", attempt, got, ok)
		}
	}
}

// TestBackoffOutlastsADay: a receiver down for a whole day still gets the
// message, even when every jitter falls short.
func TestBackoffOutlastsADay(t *testing.T) {
	t.Parallel()
	var nominal, minimum time.Duration
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		nominal += schedule[attempt-1]
		minimum += schedule[attempt-1] - schedule[attempt-1]/10
	}
	if want := 27*time.Hour + 35*time.Minute + 5*time.Second; nominal != want {
		t.Errorf("nominal Backoff total = %v, want %v", nominal, want)
	}
	if minimum <= 24*time.Hour {
		t.Errorf("Backoff total with -10%% jitter = %v, want > 24h", minimum)
	}
	for range 50 {
		var total time.Duration
		for attempt := 1; ; attempt++ {
			wait, ok := Backoff(attempt)
			if !ok {
				break
			}
			total += wait
		}
		if total <= 24*time.Hour {
			t.Fatalf("sum of Backoff(1..%d) = %v, want > 24h", MaxAttempts, total)
		}
	}
}
