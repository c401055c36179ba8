package httpapi

import (
	"encoding/json"
	"testing"
	"time"

	"switchboard/internal/call"
)

// TestCallViewJSON: the hand-written encoding equals encoding/json's of the same struct.
func TestCallViewJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 120_000_000, time.UTC)
	calls := []call.Call{
		{ID: "call_a", Type: call.Web, Status: call.Queued, AssistantID: "asst_\"q\\uoted\"\u2028<&>\x01\xff", CreatedAt: t0, UpdatedAt: t0},
		{ID: "call_b", Type: call.Phone, Status: call.Ended, AssistantID: "asst_b", PurchaseID: "pn_x", From: "+14155550100", To: "+14155551234",
			Provider: "sandbox", AttemptID: "att_1", Outcome: call.Completed, EndedReason: call.ReasonCustomerEnded,
			CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Second), StartedAt: t0.Add(time.Second), EndedAt: t0.Add(3500 * time.Millisecond)},
	}
	for _, c := range calls {
		v := viewCall(c)
		type plain callView // same fields, no MarshalJSON
		want, err := json.Marshal(plain(v))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal(callView %s) = %v", c.ID, err)
		}
		var gotAny, wantAny any
		if err := json.Unmarshal(got, &gotAny); err != nil {
			t.Fatalf("hand-written JSON for %s is invalid: %v\n%s", c.ID, err, got)
		}
		_ = json.Unmarshal(want, &wantAny)
		gb, _ := json.Marshal(gotAny)
		wb, _ := json.Marshal(wantAny)
		if string(gb) != string(wb) {
			t.Errorf("callView %s JSON:\n got %s\nwant %s", c.ID, got, want)
		}
	}
}
