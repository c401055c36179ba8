package callrun

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/telephony"
)

// fakeStore serves one assistant; block makes GetAssistant wait for its
// context (an assistant still loading when shutdown comes).
type fakeStore struct {
	a     assistant.Assistant
	block bool

	mu    sync.Mutex
	turns []call.Turn
}

func (s *fakeStore) GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error) {
	if s.block {
		<-ctx.Done()
		return assistant.Assistant{}, ctx.Err()
	}
	return s.a, nil
}

func (s *fakeStore) AppendTurn(_ context.Context, t call.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, t)
	return nil
}

func (s *fakeStore) transcript() []call.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call.Turn(nil), s.turns...)
}

// fakeEnder records how the call ended.
type fakeEnder struct{ ended chan [2]string }

func (e fakeEnder) End(_ context.Context, callID string, outcome call.Outcome, reason string, _ call.Result) (call.Call, error) {
	e.ended <- [2]string{string(outcome), reason}
	return call.Call{ID: callID, Status: call.Ended, Outcome: outcome, EndedReason: reason}, nil
}

// textLine is a text line whose far end is driven by the test.
type textLine struct {
	telephony.NopListener
	say     chan string
	end     chan telephony.End
	heard   chan string
	hungUp  chan struct{}
	once    sync.Once
	transfs chan string
}

func newTextLine() *textLine {
	return &textLine{say: make(chan string, 4), end: make(chan telephony.End, 1), heard: make(chan string, 16), hungUp: make(chan struct{}), transfs: make(chan string, 1)}
}

func (l *textLine) Format() audio.Format { return audio.Format{} }
func (l *textLine) Capabilities() telephony.Capabilities {
	return telephony.Capabilities{Keypad: true, Transfer: true}
}
func (l *textLine) Receive(ctx context.Context, rx telephony.Receiver) telephony.End {
	for {
		select {
		case <-ctx.Done():
			return telephony.End{}
		case s := <-l.say:
			rx.Text(s)
		case e := <-l.end:
			return e
		}
	}
}
func (l *textLine) Write([]byte) error                     { return nil }
func (l *textLine) Clear()                                 {}
func (l *textLine) SendDTMF(context.Context, string) error { return nil }
func (l *textLine) Transfer(_ context.Context, dest string) error {
	if dest == "refuse" {
		return errors.New("403: " + telephony.ErrTransferRefused.Error())
	}
	l.transfs <- dest
	l.end <- telephony.End{Outcome: "completed", Reason: "assistant-transferred-call"}
	return nil
}
func (l *textLine) Hangup(context.Context) error    { l.once.Do(func() { close(l.hungUp) }); return nil }
func (l *textLine) TurnDone(_, text string, _ bool) { l.heard <- text }

func flowAssistant(t *testing.T) assistant.Assistant {
	t.Helper()
	f, err := json.Marshal(map[string]any{"start": "ask", "nodes": map[string]any{
		"ask": map[string]any{"type": "ask", "text": "What is your name?", "branches": []any{
			map[string]any{"match": map[string]any{"kind": "regex", "pattern": "(?P<name>.+)"}, "next": "bye"},
		}},
		"bye": map[string]any{"type": "end", "text": "Thanks, goodbye."},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return assistant.Assistant{ID: "asst_1", OrgID: "org_1", Model: assistant.Model{Provider: "flow"}, Flow: f, MaxDurationSeconds: 60, SilenceTimeoutSeconds: 30}
}

func newRuntime(t *testing.T, st *fakeStore) (*Runtime, fakeEnder) {
	t.Helper()
	end := fakeEnder{ended: make(chan [2]string, 4)}
	r := New(Config{Store: st, Ender: end, Brains: &conversation.Brains{}})
	t.Cleanup(r.Stop)
	return r, end
}

func waitEnd(t *testing.T, end fakeEnder) [2]string {
	t.Helper()
	select {
	case e := <-end.ended:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not end")
	}
	return [2]string{}
}

var phoneCall = call.Call{ID: "call_1", OrgID: "org_1", Type: call.Phone, Status: call.InProgress, AssistantID: "asst_1"}

// TestTextLine: a text line's far end hears each assistant turn and its
// typed answer reaches the flow, which ends the call; the line is hung up
// and the runtime forgets the call.
func TestTextLine(t *testing.T) {
	st := &fakeStore{a: flowAssistant(t)}
	r, end := newRuntime(t, st)
	line := newTextLine()
	if !r.Start(phoneCall, line) {
		t.Fatal("Start refused a call")
	}
	if got := recv(t, line.heard); got != "What is your name?" {
		t.Fatalf("far end heard %q first", got)
	}
	line.say <- "Dana"
	if got := recv(t, line.heard); got != "Thanks, goodbye." {
		t.Fatalf("far end heard %q second", got)
	}
	if e := waitEnd(t, end); e != [2]string{"completed", call.ReasonAssistantEnded} {
		t.Errorf("ended %v", e)
	}
	recv(t, line.hungUp)
	waitFor(t, func() bool { return r.Live() == 0 })
	if got := st.transcript(); len(got) != 3 || got[1].Text != "Dana" {
		t.Errorf("transcript %+v", got)
	}
}

// TestLineEnds: the line's own end is the conversation's last input: a
// far end that hangs up ends the call customer-ended-call, a media
// timeout ends it failed with the line's reason.
func TestLineEnds(t *testing.T) {
	for _, tc := range []struct {
		end  telephony.End
		want [2]string
	}{
		{telephony.End{Outcome: "completed", Reason: call.ReasonCustomerEnded}, [2]string{"completed", call.ReasonCustomerEnded}},
		{telephony.End{Outcome: "failed", Reason: "sip-media-timeout"}, [2]string{"failed", "sip-media-timeout"}},
	} {
		t.Run(tc.end.Reason, func(t *testing.T) {
			r, end := newRuntime(t, &fakeStore{a: flowAssistant(t)})
			line := newTextLine()
			r.Start(phoneCall, line)
			recv(t, line.heard)
			line.end <- tc.end
			if e := waitEnd(t, end); e != tc.want {
				t.Errorf("ended %v, want %v", e, tc.want)
			}
			recv(t, line.hungUp)
		})
	}
}

// TestTransfer: live control transfers the call over its line; a refused
// transfer is a conflict and the call goes on; another organization's call
// is not found.
func TestTransfer(t *testing.T) {
	r, _ := newRuntime(t, &fakeStore{a: flowAssistant(t)})
	line := newTextLine()
	r.Start(phoneCall, line)
	recv(t, line.heard)
	if err := r.Transfer(t.Context(), "org_2", phoneCall.ID, "+16175550123"); err == nil {
		t.Error("another organization transferred the call")
	}
	if err := r.Transfer(t.Context(), "org_1", phoneCall.ID, "refuse"); err == nil {
		t.Error("a refused transfer reported no error")
	}
	if err := r.Transfer(t.Context(), "org_1", phoneCall.ID, "+16175550123"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, line.transfs); got != "+16175550123" {
		t.Errorf("transferred to %q", got)
	}
}

// TestStopWhileLoading: shutdown while the assistant loads ends the call
// completed/system-shutdown (nothing failed), and a call answered after
// Stop is refused so that its provider's side can end it.
func TestStopWhileLoading(t *testing.T) {
	end := fakeEnder{ended: make(chan [2]string, 4)}
	r := New(Config{Store: &fakeStore{block: true}, Ender: end, Brains: &conversation.Brains{}})
	line := newTextLine()
	r.Start(phoneCall, line)
	r.Stop()
	if e := waitEnd(t, end); e != [2]string{"completed", call.ReasonSystemShutdown} {
		t.Errorf("ended %v", e)
	}
	recv(t, line.hungUp)
	if r.Start(phoneCall, newTextLine()) {
		t.Error("Start took a call after Stop")
	}
}

// TestNoVoices: an audio line on a server without speech engines ends
// failed voice-failed at once.
func TestNoVoices(t *testing.T) {
	r, end := newRuntime(t, &fakeStore{a: flowAssistant(t)})
	line := &audioLine{textLine: newTextLine()}
	r.Start(phoneCall, line)
	if e := waitEnd(t, end); e != [2]string{"failed", call.ReasonVoiceFailed} {
		t.Errorf("ended %v", e)
	}
}

type audioLine struct{ *textLine }

func (audioLine) Format() audio.Format { return audio.Format{Encoding: audio.Mulaw, SampleRate: 8000} }

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatal("condition not met in 5 s")
}

// recv receives from ch, failing after 5 s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("nothing came in 5 s")
	}
	var zero T
	return zero
}

// TestSay: live control makes the assistant say a sentence; the far end
// hears it as an assistant turn and the transcript keeps it.
func TestSay(t *testing.T) {
	st := &fakeStore{a: flowAssistant(t)}
	r, _ := newRuntime(t, st)
	line := newTextLine()
	r.Start(phoneCall, line)
	recv(t, line.heard)
	if err := r.Say(t.Context(), "org_2", phoneCall.ID, "Hello", false); err == nil {
		t.Error("another organization made the assistant speak")
	}
	if err := r.Say(t.Context(), "org_1", phoneCall.ID, "Your order has shipped.", true); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, line.heard); got != "Your order has shipped." {
		t.Errorf("far end heard %q", got)
	}
	waitFor(t, func() bool {
		tr := st.transcript()
		return len(tr) == 2 && tr[1].Text == "Your order has shipped." && tr[1].Role == call.RoleAssistant
	})
}

// TestEnd: the API's end reaches the conversation, which records it
// (completed, api-ended-call) before End returns; a call that does not
// run here is left to the caller.
func TestEnd(t *testing.T) {
	r, end := newRuntime(t, &fakeStore{a: flowAssistant(t)})
	line := newTextLine()
	r.Start(phoneCall, line)
	recv(t, line.heard)
	if ended, err := r.End(t.Context(), "org_2", phoneCall.ID); ended || err != nil {
		t.Errorf("End of another organization's call = %v, %v", ended, err)
	}
	if ended, err := r.End(t.Context(), "org_1", phoneCall.ID); !ended || err != nil {
		t.Fatalf("End = %v, %v", ended, err)
	}
	if e := waitEnd(t, end); e != [2]string{"completed", call.ReasonAPIEnded} {
		t.Errorf("ended %v", e)
	}
	recv(t, line.hungUp)
}
