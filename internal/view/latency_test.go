package view

import (
	"encoding/json"
	"testing"
	"time"

	"switchboard/internal/call"
)

func TestNearestRank(t *testing.T) {
	for _, tc := range []struct{ p, n, want int }{
		{50, 1, 0}, {95, 1, 0},
		{50, 2, 0}, {95, 2, 1},
		{50, 3, 1}, {95, 3, 2},
		{50, 4, 1}, {95, 4, 3},
		{50, 10, 4}, {95, 10, 9},
		{95, 19, 18}, {95, 20, 18}, {95, 21, 19},
		{50, 100, 49}, {95, 100, 94}, {100, 100, 99},
	} {
		if got := NearestRank(tc.p, tc.n); got != tc.want {
			t.Errorf("NearestRank(%d, %d) = %d; want %d", tc.p, tc.n, got, tc.want)
		}
	}
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// TestSummarizeLatency: percentiles are per stage, over assistant turns
// with a breakdown only, to the microsecond.
func TestSummarizeLatency(t *testing.T) {
	turn := func(role string, b *call.Breakdown) call.Turn { return call.Turn{Role: role, Breakdown: b} }
	bd := func(total float64) *call.Breakdown {
		return &call.Breakdown{Endpointing: ms(250), Transcriber: ms(total / 10), Model: ms(total / 2),
			Voice: ms(100), Platform: ms(5.0015), Total: ms(total)}
	}
	if got := SummarizeLatency(nil); got != nil {
		t.Errorf("SummarizeLatency(no turns) = %+v; want nil", got)
	}
	if got := SummarizeLatency([]call.Turn{turn(call.RoleAssistant, nil), turn(call.RoleUser, nil)}); got != nil {
		t.Errorf("SummarizeLatency(turns without breakdowns) = %+v; want nil", got)
	}

	// Totals 900, 700, 1000, 800 out of order, plus turns that do not count.
	turns := []call.Turn{
		turn(call.RoleAssistant, nil), // the first message
		turn(call.RoleUser, nil),
		turn(call.RoleAssistant, bd(900)),
		turn(call.RoleAssistant, bd(700)),
		turn(call.RoleUser, bd(5000)), // a breakdown on a caller turn is ignored
		turn(call.RoleAssistant, bd(1000)),
		turn(call.RoleAssistant, bd(800)),
	}
	got := SummarizeLatency(turns)
	want := &LatencySummary{Turns: 4,
		// 4 values: p50 is the 2nd smallest, p95 the 4th.
		P50: Latency{EndpointingMs: 250, TranscriberMs: 80, ModelMs: 400, VoiceMs: 100, PlatformMs: 5.001, TotalMs: 800},
		P95: Latency{EndpointingMs: 250, TranscriberMs: 100, ModelMs: 500, VoiceMs: 100, PlatformMs: 5.001, TotalMs: 1000},
	}
	if got == nil || *got != *want {
		t.Errorf("SummarizeLatency(4 voice turns) =\n %+v\nwant\n %+v", got, want)
	}
}

// TestCallDetailJSON: the call's fields then latency, and the same as
// encoding/json's rendering of the same fields.
func TestCallDetailJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 120_000_000, time.UTC)
	c := NewCall(call.Call{ID: "call_a", Type: call.Phone, Status: call.Ended, AssistantID: "asst_a", PurchaseID: "pn_a",
		From: "+14155550100", To: "+14155551234", Provider: "sandbox", Outcome: call.Completed, EndedReason: call.ReasonVoiceFailed,
		CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Second), StartedAt: t0.Add(time.Second), EndedAt: t0.Add(3 * time.Second)})
	sum := &LatencySummary{Turns: 1, P50: Latency{TotalMs: 812.5, ModelMs: 0.001}, P95: Latency{TotalMs: 812.5}}
	for _, v := range []CallDetail{{Call: c}, {Call: c, Latency: sum}} {
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(CallDetail) = %v", err)
		}
		type plainCall Call // same fields, no MarshalJSON
		want, _ := json.Marshal(struct {
			plainCall
			Latency *LatencySummary `json:"latency"`
		}{plainCall(c), v.Latency})
		var gotAny, wantAny any
		if err := json.Unmarshal(got, &gotAny); err != nil {
			t.Fatalf("CallDetail JSON is invalid: %v\n%s", err, got)
		}
		_ = json.Unmarshal(want, &wantAny)
		gb, _ := json.Marshal(gotAny)
		wb, _ := json.Marshal(wantAny)
		if string(gb) != string(wb) {
			t.Errorf("CallDetail JSON:\n got %s\nwant %s", got, want)
		}
	}
}
