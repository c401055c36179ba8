package ui

import (
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/store"
)

// BenchmarkOverviewFill is the overview page's own work over the longest
// period (92 days, every outcome each day, full histograms): the sums,
// the charts, the template.
func BenchmarkOverviewFill(b *testing.B) {
	to := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	f := store.OverviewFilter{From: to.AddDate(0, 0, 1-store.MaxOverviewDays), To: to}
	o := store.Overview{Latency: map[string]store.Histogram{}}
	for d := range store.MaxOverviewDays {
		for _, st := range outcomeOrder {
			o.Days = append(o.Days, store.DayCount{Day: f.From.AddDate(0, 0, d), Outcome: call.Outcome(st.Label), EndedReason: "r-" + st.Label,
				Calls: 100, Duration: time.Hour, Evaluated: 50, Succeeded: 30})
		}
	}
	for _, st := range store.LatencyStages {
		var h store.Histogram
		for bk := 40; bk < 80; bk++ {
			h.Add(bk, 1000)
		}
		o.Latency[st] = h
	}
	pg, err := parsePages()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var p overviewPage
		p.fill(o, f)
		if err := pg.byName["overview"].Execute(discard{}, pageData{view: view{Name: "overview", Data: p}}); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
