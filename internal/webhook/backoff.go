package webhook

import (
	"math/rand/v2"
	"time"
)

// schedule is the nominal wait before each attempt, index 0 being attempt 1.
// It is Svix's schedule: quick retries catch a blip, the long tail (27h35m05s
// in all) outlasts a receiver's overnight outage, so at least a day passes
// before a message is given up.
var schedule = [...]time.Duration{
	0,
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// MaxAttempts is how many times a message is tried before it is given up.
const MaxAttempts = len(schedule)

// Backoff returns how long to wait before attempt number attempt (counting
// from 1) of a message, measured from the previous attempt's failure: 0 for
// attempt 1, then 5s, 5m, 30m, 2h, 5h, 10h, 10h. Each wait after the first is
// jittered by ±10% so that endpoints that failed together (one outage) are
// not all retried in the same second. ok is false when attempt is past
// MaxAttempts (or below 1): the message has run out of attempts.
func Backoff(attempt int) (wait time.Duration, ok bool) {
	if attempt < 1 || attempt > MaxAttempts {
		return 0, false
	}
	base := schedule[attempt-1]
	if base == 0 {
		return 0, true
	}
	jitter := time.Duration((rand.Float64()*0.2 - 0.1) * float64(base))
	return base + jitter, true
}
