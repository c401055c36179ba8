package store

import (
	"context"
	"math"
	"slices"
	"time"

	"switchboard/internal/call"
)

// Day is 24 hours in Unix milliseconds: the rollups' day of a call is
// its created_at (UTC, in milliseconds) divided by Day.
const Day = 86_400_000

// MaxOverviewDays bounds an overview's period.
const MaxOverviewDays = 92

// Overviews is the dashboard's overview: sums over the rollups kept with
// each call's end and analysis.
type Overviews interface {
	// Overview sums the organization's ended calls created on f's UTC
	// days, from the rollups kept with each call's end and analysis
	// (docs/ARCHITECTURE.md, "The overview and the calls console").
	Overview(ctx context.Context, orgID string, f OverviewFilter) (Overview, error)
}

// OverviewFilter selects what Overview sums: the calls created on the
// UTC days From to To, both included (their times of day are ignored),
// of one assistant when AssistantID is set.
type OverviewFilter struct {
	From, To    time.Time
	AssistantID string
}

// DayCount is the ended calls of one UTC day with one outcome and ended
// reason: how many, their duration (started to ended), and among those
// whose analysis evaluated success, how many and how many succeeded.
type DayCount struct {
	Day         time.Time
	Outcome     call.Outcome
	EndedReason string
	Calls       int64
	Duration    time.Duration
	Evaluated   int64
	Succeeded   int64
}

// Overview is what the dashboard's overview draws: the period's ended
// calls by day, outcome and reason (ordered by day), and the assistant
// turns' latency by stage (LatencyStages).
type Overview struct {
	Days    []DayCount
	Latency map[string]Histogram
}

// LatencyStages are the stages of a turn's latency that the rollups
// keep: a voice turn's breakdown (call.Breakdown) and total, where a text
// turn's time to the first reply is its total.
var LatencyStages = []string{"endpointing", "transcriber", "model", "voice", "platform", "total"}

// LatencyBuckets are the lower bounds of the latency histograms' buckets,
// in microseconds: 0, then 10 µs × 2^(k/4) rounded, k = 0…104 (up to
// about 671 s); the last bucket has no upper bound. Migration 00020 holds
// the same bounds in latency_buckets.
var LatencyBuckets = func() []int64 {
	b := []int64{0}
	for k := range 105 {
		b = append(b, int64(math.Round(10*math.Pow(2, float64(k)/4))))
	}
	return b
}()

// LatencyBucket is the bucket of a latency of us microseconds.
func LatencyBucket(us int64) int {
	i, found := slices.BinarySearch(LatencyBuckets, us)
	if found {
		return i
	}
	return max(i-1, 0)
}

// Histogram is a latency histogram: the count of each bucket of
// LatencyBuckets, by index.
type Histogram []int64

// Add counts n latencies in bucket b.
func (h *Histogram) Add(b int, n int64) {
	if b < 0 || b >= len(LatencyBuckets) {
		return
	}
	if len(*h) <= b {
		*h = append(*h, make([]int64, b+1-len(*h))...)
	}
	(*h)[b] += n
}

// Count is how many latencies h holds.
func (h Histogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Quantile is the latency below which a share q of h's latencies fall:
// the geometric middle of the bucket where the count reaches q (the
// middle of [0, 10 µs) for the first; the last bucket's lower bound), so
// it is within a factor 2^(1/8) (±9%) of the true value. ok is false
// when h is empty.
func (h Histogram) Quantile(q float64) (d time.Duration, ok bool) {
	total := h.Count()
	if total == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var seen int64
	for b, c := range h {
		seen += c
		if seen < rank {
			continue
		}
		var us float64
		switch {
		case b == 0:
			us = float64(LatencyBuckets[1]) / 2
		case b == len(LatencyBuckets)-1:
			us = float64(LatencyBuckets[b])
		default:
			us = math.Sqrt(float64(LatencyBuckets[b]) * float64(LatencyBuckets[b+1]))
		}
		return time.Duration(math.Round(us)) * time.Microsecond, true
	}
	return 0, false
}
