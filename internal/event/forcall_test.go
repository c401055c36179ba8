package event_test

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/event"
)

// TestForCallRecordingURL: a recorded call's webhook payloads (the
// analysis's too) give its
// recordingUrl under the public URL, as the API does; an unrecorded one's
// give none.
func TestForCallRecordingURL(t *testing.T) {
	now := time.Now()
	c := call.Call{ID: "call_x", OrgID: "org_x", Type: call.Phone, Status: call.Ended, Outcome: call.Completed,
		EndedReason: call.ReasonCustomerEnded, CreatedAt: now, UpdatedAt: now, Recording: "recordings/org_x/call_x.wav"}
	want := `"recordingUrl":"https://calls.example.com/v1/calls/call_x/recording"`
	evs := append(event.ForCall(c, "https://calls.example.com/"), event.NewAnalysisReady(c, "https://calls.example.com/", []byte(`{}`), now))
	if len(evs) == 0 {
		t.Fatal("no events for an ended call")
	}
	for _, e := range evs {
		if !strings.Contains(string(e.Data), want) {
			t.Errorf("%s payload %s lacks %s", e.Type, e.Data, want)
		}
	}
	c.Recording = ""
	for _, e := range append(event.ForCall(c, "https://calls.example.com"), event.NewAnalysisReady(c, "https://calls.example.com", []byte(`{}`), now)) {
		if strings.Contains(string(e.Data), "recordingUrl") {
			t.Errorf("%s payload of an unrecorded call: %s", e.Type, e.Data)
		}
	}
}
