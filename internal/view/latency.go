package view

import (
	"slices"
	"time"

	"switchboard/internal/call"
)

// Latency is a voice turn's call.Breakdown in milliseconds, to the
// microsecond (0.001), like a turn's latencyMs.
type Latency struct {
	EndpointingMs float64 `json:"endpointingMs"`
	TranscriberMs float64 `json:"transcriberMs"`
	ModelMs       float64 `json:"modelMs"`
	VoiceMs       float64 `json:"voiceMs"`
	PlatformMs    float64 `json:"platformMs"`
	TotalMs       float64 `json:"totalMs"`
}

// Millis renders d as milliseconds to the microsecond.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// NewLatency is the view of b; nil (JSON null) when there is none.
func NewLatency(b *call.Breakdown) *Latency {
	if b == nil {
		return nil
	}
	return &Latency{
		EndpointingMs: Millis(b.Endpointing), TranscriberMs: Millis(b.Transcriber), ModelMs: Millis(b.Model),
		VoiceMs: Millis(b.Voice), PlatformMs: Millis(b.Platform), TotalMs: Millis(b.Total),
	}
}

// LatencySummary is a call's voice latency over its assistant turns that
// have a breakdown. Each field of P50 and P95 is that stage's own
// percentile, so the stages of a percentile need not add up to its total.
type LatencySummary struct {
	// Turns is how many turns the percentiles are over.
	Turns int     `json:"turns"`
	P50   Latency `json:"p50"`
	P95   Latency `json:"p95"`
}

// SummarizeLatency returns the nearest-rank p50 and p95 of each stage over
// the assistant turns with a breakdown, or nil when there is none. The
// nearest-rank p-th percentile of n values is the ⌈p/100 · n⌉-th smallest:
// a value that was actually measured, with at least p% of the turns at or
// below it (with fewer than 20 turns, p95 is the slowest).
func SummarizeLatency(turns []call.Turn) *LatencySummary {
	var stages [6][]time.Duration
	for _, t := range turns {
		if t.Role != call.RoleAssistant || t.Breakdown == nil {
			continue
		}
		b := t.Breakdown
		for i, d := range [6]time.Duration{b.Endpointing, b.Transcriber, b.Model, b.Voice, b.Platform, b.Total} {
			stages[i] = append(stages[i], d)
		}
	}
	n := len(stages[0])
	if n == 0 {
		return nil
	}
	at := func(p int) Latency {
		var v [6]float64
		for i, ds := range stages {
			v[i] = Millis(ds[NearestRank(p, n)])
		}
		return Latency{EndpointingMs: v[0], TranscriberMs: v[1], ModelMs: v[2], VoiceMs: v[3], PlatformMs: v[4], TotalMs: v[5]}
	}
	for _, ds := range stages {
		slices.Sort(ds)
	}
	return &LatencySummary{Turns: n, P50: at(50), P95: at(95)}
}

// NearestRank is the index, in n ascending values, of their nearest-rank
// p-th percentile (0 < p ≤ 100, n > 0): ⌈p·n/100⌉ − 1.
func NearestRank(p, n int) int {
	return max((p*n+99)/100-1, 0)
}

// CallDetail is a call as GET /v1/calls/{id} shows it: the call, plus the
// latency summary of its turns, which listings and webhook payloads do not
// load.
type CallDetail struct {
	Call
	Latency *LatencySummary `json:"latency"`
}

// MarshalJSON writes the call's fields, then latency (null when nil).
func (v CallDetail) MarshalJSON() ([]byte, error) {
	lat, err := Marshal(v.Latency)
	if err != nil {
		return nil, err
	}
	b := v.Call.AppendJSON(make([]byte, 0, 640+len(lat)))
	b = append(b[:len(b)-1], `,"latency":`...) // reopen the call's object
	b = append(b, lat...)
	return append(b, '}'), nil
}
