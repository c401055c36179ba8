package httpapi

import (
	"encoding/json"
	"switchboard/internal/assistant"
	"switchboard/internal/phone"
	"switchboard/internal/view"
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
			Provider: "sandbox", Direction: call.Outbound, ProviderCallID: "a84b4c76e66710@pc33.example.com", AttemptID: "att_1", Recording: "recordings/org_a/call_b.wav", Outcome: call.Completed, EndedReason: call.ReasonCustomerEnded,
			CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Second), StartedAt: t0.Add(time.Second), EndedAt: t0.Add(3500 * time.Millisecond)},
		{ID: "call_c", Type: call.Phone, Status: call.Ringing, AssistantID: "asst_c", PurchaseID: "pn_y", From: "+14155551234", To: "+14155550100",
			Provider: "sip", Direction: call.Inbound, ProviderCallID: "id\"with\x00odd@bytes\xff", CreatedAt: t0, UpdatedAt: t0},
	}
	for _, c := range calls {
		v := (&Server{cfg: Config{PublicURL: "http://api.test/"}}).viewCall(c)
		if (v.RecordingURL != "") != (c.Recording != "") || (v.RecordingURL != "" && v.RecordingURL != "http://api.test/v1/calls/call_b/recording") {
			t.Errorf("viewCall(%s).RecordingURL = %q, want the absolute recording URL only when the call has a recording", c.ID, v.RecordingURL)
		}
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

// TestEnvelopeJSON: the hand-written envelope equals encoding/json's.
func TestEnvelopeJSON(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	envs := []envelope{
		{Status: true, Message: "calls", Data: []callView{view.NewCall(call.Call{ID: "call_a", Type: call.Web, CreatedAt: t0, UpdatedAt: t0})}, Pagination: &pagination{1, 20, 7}, RequestID: "req_1"},
		{Status: true, Message: "created \"x\"", CallID: "call_b", Gateway: &gateway{"websocket", "/p", "ws://h/p?a=1&b=2"}, RequestID: "req_2"},
		{Status: true, Message: "scheduled", ID: "sch_1", Data: map[string]int{"n": 1}, RequestID: "req_3"},
		{Status: true, Message: "empty", Data: []callView{}, RequestID: "req_4"},
	}
	for i, e := range envs {
		got, err := e.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		type plain envelope
		want, _ := json.Marshal(plain(e))
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("envelope %d: invalid JSON %v: %s", i, err, got)
		}
		_ = json.Unmarshal(want, &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if string(gb) != string(wb) {
			t.Errorf("envelope %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestAppendTimestamp(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 21, 10, 4, 5, 123_456_789, time.UTC),
		time.Date(1999, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
		time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(12026, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		got := string(view.AppendTimestamp(nil, tm))
		want := tm.UTC().Format("2006-01-02T15:04:05.000Z")
		if got != want {
			t.Errorf("appendTimestamp(%v) = %s, want %s", tm, got, want)
		}
	}
}

// TestResourcesShadowTimes: resources render createdAt with milliseconds, once.
func TestResourcesShadowTimes(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for name, v := range map[string]any{
		"assistant": viewAssistant(assistant.Assistant{ID: "asst_1", CreatedAt: t0, UpdatedAt: t0}),
		"purchase":  viewPurchase(phone.Purchase{ID: "pn_1", CreatedAt: t0, UpdatedAt: t0}),
		"contact":   viewContact(phone.Contact{ID: "ct_1", CreatedAt: t0, Metadata: json.RawMessage(`{}`)}),
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if m["createdAt"] != "2026-11-21T10:00:00.000Z" {
			t.Errorf("%s createdAt = %v, want 2026-11-21T10:00:00.000Z (%s)", name, m["createdAt"], b)
		}
	}
}
