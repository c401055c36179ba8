package app

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
)

// TestCallLatency: a call whose voice turns have breakdowns shows each
// turn's latency in its transcript and the p50/p95 of each stage on
// GET /v1/calls/{id}; a turn cut by a barge-in shows the text heard and
// its flag; calls without breakdowns show null, and listings carry no latency.
func TestCallLatency(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		ctx := t.Context()
		asst := b.must(201, "POST", "/v1/assistants", map[string]any{"name": "Voice"}).data()["id"].(string)
		newCall := func() string {
			return b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst}).Body["callId"].(string)
		}
		callID, quiet := newCall(), newCall()

		// Turns as a voice pipeline stores them, each once when it has been
		// heard: the first message (no breakdown), then caller and assistant
		// turns, each reply with its breakdown; the last reply was cut by a
		// barge-in, stored with the text heard. Totals 1000…1500 ms.
		t0 := time.Now().Add(-time.Minute).UTC()
		us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
		appendTurn := func(tn call.Turn) {
			t.Helper()
			tn.ID, tn.OrgID, tn.CallID = id.New("turn"), b.org, callID
			tn.StartedAt = t0.Add(time.Duration(tn.Seq) * time.Second)
			tn.EndedAt = tn.StartedAt
			if tn.Role == call.RoleAssistant && tn.Seq > 1 {
				tn.Latency = 900 * time.Millisecond
			}
			if err := b.m.DB().AppendTurn(ctx, tn); err != nil {
				t.Fatalf("AppendTurn(seq %d): %v", tn.Seq, err)
			}
		}
		appendTurn(call.Turn{Seq: 1, Role: call.RoleAssistant, Text: "Hello! How can I help?"})
		totals := []int64{1_300_000, 1_000_000, 1_500_000, 1_100_000, 1_400_000, 1_200_000}
		for i, total := range totals {
			user, reply := 2+2*i, 3+2*i
			appendTurn(call.Turn{Seq: user, Role: call.RoleUser, Text: "Question?"})
			bd := call.Breakdown{Endpointing: us(250_125), Transcriber: us(total / 10), Model: us(total / 2),
				Voice: us(100_000 + int64(i)), Platform: us(total - 250_125 - total/10 - total/2 - 100_000 - int64(i)), Total: us(total)}
			tn := call.Turn{Seq: reply, Role: call.RoleAssistant, Text: "An answer that goes on for a while.", Breakdown: &bd}
			if reply == 13 {
				tn.Text, tn.Interrupted = "An answer", true
			}
			appendTurn(tn)
		}

		// The transcript: latency per assistant turn with a breakdown.
		turns := b.must(200, "GET", "/v1/calls/"+callID+"/transcripts", nil).list()
		if len(turns) != 13 {
			t.Fatalf("GET transcripts: %d turns; want 13", len(turns))
		}
		for _, tn := range turns {
			seq := int(tn["seq"].(float64))
			lat, present := tn["latency"]
			if !present {
				t.Errorf("turn %d has no latency member; want an object or null", seq)
				continue
			}
			if seq == 1 || tn["role"] == call.RoleUser {
				if lat != nil {
					t.Errorf("turn %d (%s) latency = %v; want null", seq, tn["role"], lat)
				}
				continue
			}
			i := (seq - 3) / 2
			ms := func(v int64) float64 { return float64(v) / 1000 }
			total := totals[i]
			want := map[string]any{"endpointingMs": 250.125, "transcriberMs": ms(total / 10), "modelMs": ms(total / 2),
				"voiceMs": ms(100_000 + int64(i)), "platformMs": ms(total - 250_125 - total/10 - total/2 - 100_000 - int64(i)), "totalMs": ms(total)}
			if !reflect.DeepEqual(lat, want) {
				t.Errorf("turn %d latency = %v; want %v", seq, lat, want)
			}
		}
		if last := turns[12]; last["text"] != "An answer" || last["interrupted"] != true {
			t.Errorf("turn 13 (interrupted): text %q, interrupted %v; want \"An answer\", true", last["text"], last["interrupted"])
		}

		// The call: p50 and p95 of each stage over the 6 voice turns
		// (nearest rank: the 3rd and the 6th smallest).
		c := b.must(200, "GET", "/v1/calls/"+callID, nil).data()
		want := map[string]any{"turns": 6.0,
			"p50": map[string]any{"endpointingMs": 250.125, "transcriberMs": 120.0, "modelMs": 600.0, "voiceMs": 100.002, "platformMs": 129.87, "totalMs": 1200.0},
			"p95": map[string]any{"endpointingMs": 250.125, "transcriberMs": 150.0, "modelMs": 750.0, "voiceMs": 100.005, "platformMs": 249.873, "totalMs": 1500.0},
		}
		if !reflect.DeepEqual(c["latency"], want) {
			got, _ := json.Marshal(c["latency"])
			exp, _ := json.Marshal(want)
			t.Errorf("GET /v1/calls/%s latency = %s; want %s", callID, got, exp)
		}
		if c["id"] != callID || c["statusText"] != "queued" {
			t.Errorf("GET /v1/calls/%s = %v; want the call's fields too", callID, c)
		}

		// A call without voice turns: null.
		q := b.must(200, "GET", "/v1/calls/"+quiet, nil).data()
		if l, present := q["latency"]; !present || l != nil {
			t.Errorf("GET /v1/calls/%s (no turns) latency = %v (present %v); want null", quiet, l, present)
		}

		// Listings stay as they were: no latency, no turns read.
		for _, item := range b.must(200, "GET", "/v1/calls", nil).list() {
			if _, present := item["latency"]; present {
				t.Errorf("GET /v1/calls item %v has latency; listings do not", item["id"])
			}
		}
	})
}
