package twilio

import (
	"bytes"
	"context"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/linetest"
	"switchboard/internal/twilio/twiliotest"
)

// TestLineConformance runs the line conformance suite on Twilio lines: a
// call placed through the provider to the fake Twilio, which a human
// answers; the line is the Media Stream the fake opened to us over a
// loopback websocket, and the far party is the fake's call (it hangs up
// with stop, presses keys as dtmf messages, hears our in-band tones, and
// echoes marks as it plays what we sent).
func TestLineConformance(t *testing.T) {
	linetest.Run(t, func(t *testing.T) linetest.Case {
		b := setup(t)
		fc, line := b.answered(t, "call_1")
		return linetest.Case{
			Line:   line,
			Far:    callee{fc},
			Frame:  bytes.Repeat([]byte{0x55}, 160),
			HungUp: telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded},
			Marks:  true,
		}
	})
}

// callee is the far party of a Twilio call: the fake's call.
type callee struct{ fc *twiliotest.Call }

var _ linetest.Far = callee{}

func (c callee) Hangup(*testing.T) { c.fc.Hangup() }

func (c callee) Gone(t *testing.T) {
	t.Helper()
	select {
	case <-c.fc.Done():
	case <-time.After(linetest.Timeout):
		t.Fatalf("the fake's call is not over within %v (status %s)", linetest.Timeout, c.fc.State().Status)
	}
}

func (c callee) Press(_ *testing.T, keys string) {
	for i := 0; i < len(keys); i++ {
		c.fc.PressDigit(keys[i])
	}
}

func (c callee) Keys(_ *testing.T, n int) string {
	ctx, cancel := context.WithTimeout(context.Background(), linetest.Timeout)
	defer cancel()
	st, _ := c.fc.WaitFor(ctx, func(s twiliotest.State) bool { return len(s.Digits) >= n })
	return st.Digits
}
