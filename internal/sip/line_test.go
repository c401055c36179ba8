package sip

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/leaktest"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/linetest"
)

// TestLineConformance runs the line conformance suite on SIP lines: two
// providers on loopback UDP, one calling the other, so that each call's far
// party is the other provider's line of it (RTP, RFC 4733 keys and BYE
// between two real user agents). It runs on the outbound line, whose far
// party answered our INVITE, and on the inbound one.
func TestLineConformance(t *testing.T) {
	t.Parallel()
	for _, side := range []string{"outbound", "inbound"} {
		t.Run(side, func(t *testing.T) {
			t.Parallel()
			linetest.Run(t, func(t *testing.T) linetest.Case { return sipCall(t, side == "inbound") })
		})
	}
}

// sipCall places a call from one provider to another and returns the
// outbound line (or, when inbound, the inbound one) with the other as its
// far party.
func sipCall(t *testing.T, inbound bool) linetest.Case {
	t.Helper()
	leaktest.Check(t)
	out, outEv := startProvider(t, Config{}, nil)
	in, inEv := startProvider(t, Config{}, func(context.Context, telephony.Incoming) (string, error) { return "call_far", nil })
	place(t, out, "call_near", telephony.Trunk{ConnectionID: "conn_test", Address: in.Addr().String(), Transport: "udp"})
	outLine := answered(t, outEv, "call_near")
	a := inEv.expect(t, telephony.Answered, 5*time.Second)
	inLine, ok := a.Line.(*Line)
	if !ok {
		t.Fatalf("the inbound Answered carries %T, want a *sip.Line", a.Line)
	}
	near, far := outLine, inLine
	if inbound {
		near, far = inLine, outLine
	}
	return linetest.Case{
		Line:   near,
		Far:    newPeer(t, far),
		Frame:  tone(near.Format(), 1)[0],
		HungUp: telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded},
	}
}

// peer is the far party of a SIP call: the other provider's line, received
// from by a recorder.
type peer struct {
	line   *Line
	rx     *recorder
	end    chan telephony.End
	hungUp atomic.Bool // the far party hung up itself
}

var _ linetest.Far = (*peer)(nil)

func newPeer(t *testing.T, l *Line) *peer {
	p := &peer{line: l, rx: newRecorder(), end: make(chan telephony.End, 1)}
	go func() { p.end <- l.Receive(context.Background(), p.rx) }()
	t.Cleanup(func() {
		p.Hangup(t)
		select {
		case e := <-p.end:
			p.end <- e
		case <-time.After(linetest.Timeout):
			t.Error("the far party's Receive did not return after its Hangup")
		}
	})
	return p
}

func (p *peer) Hangup(t *testing.T) {
	p.hungUp.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), linetest.Timeout)
	defer cancel()
	if err := p.line.Hangup(ctx); err != nil {
		t.Errorf("the far party's Hangup = %v", err)
	}
}

// Gone waits for the far party's line to end with our BYE (or with its
// own hang-up, when it hung up too).
func (p *peer) Gone(t *testing.T) {
	t.Helper()
	select {
	case e := <-p.end:
		p.end <- e
		if want := (telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded}); e != want && !(p.hungUp.Load() && e == (telephony.End{})) {
			t.Errorf("the far party's line ended %+v, want %+v (our BYE)", e, want)
		}
	case <-time.After(linetest.Timeout):
		t.Fatalf("the far party's line did not end within %v of our Hangup", linetest.Timeout)
	}
}

func (p *peer) Press(t *testing.T, keys string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), linetest.Timeout)
	defer cancel()
	if err := p.line.SendDTMF(ctx, keys); err != nil {
		t.Fatalf("the far party's SendDTMF(%s) = %v", keys, err)
	}
}

func (p *peer) Keys(t *testing.T, n int) string {
	t.Helper()
	deadline := time.After(linetest.Timeout)
	for {
		if _, d := p.rx.snapshot(); len(d) >= n {
			time.Sleep(200 * time.Millisecond) // a key heard twice would be in by now
			_, d = p.rx.snapshot()
			return d
		}
		select {
		case <-p.rx.got:
		case <-deadline:
			_, d := p.rx.snapshot()
			return d
		}
	}
}
