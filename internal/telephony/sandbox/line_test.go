package sandbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/leaktest"
	"switchboard/internal/speech"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/linetest"
	"switchboard/internal/voice/voicetest"
)

// texts is a Receiver that keeps what the persona says.
type texts chan string

func (texts) Audio([]byte)       {}
func (texts) DTMF(byte)          {}
func (t texts) Text(s string)    { t <- s }
func (texts) Mark(string, int64) {}
func (texts) StartAudio(audio.Format) error {
	return errors.New("the persona's line does not turn audio on")
}

// TestLinesHandOver: with Lines, an answered call's event carries a text
// line (no speech engines); the persona answers each turn it hears, a
// hang-up ends the line with no Ended event, and the busy and voicemail
// scripts keep their events (no line: nobody talks to them).
func TestLinesHandOver(t *testing.T) {
	lines := make(chan telephony.Line, 4)
	var mu sync.Mutex
	var got []telephony.Event
	n := started(t, Config{RingTime: time.Millisecond, Lines: &Lines{Think: time.Millisecond}}, func(e telephony.Event) {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		if e.Line != nil {
			lines <- e.Line
		}
	})
	t.Cleanup(func() { _ = n.Close() })
	defer n.Close()
	if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "c1", To: "+14155551234"}); err != nil {
		t.Fatal(err)
	}
	var l telephony.Line
	select {
	case l = <-lines:
	case <-time.After(5 * time.Second):
		t.Fatal("no line")
	}
	if l.Format() != (audio.Format{}) {
		t.Fatalf("line without speech engines has format %+v, want text", l.Format())
	}
	rx := make(texts, 4)
	ended := make(chan telephony.End, 1)
	go func() { ended <- l.Receive(context.Background(), rx) }()
	l.TurnDone("turn_1", "Hi! What day would suit you?", false)
	select {
	case s := <-rx:
		if s == "" {
			t.Error("the persona said nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the persona did not answer")
	}
	if err := n.Hangup(t.Context(), "c1"); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-ended:
		if e != (telephony.End{}) {
			t.Errorf("a line hung up by this side ended %+v, want the zero End", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return after Hangup")
	}
	if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "c2", To: "+1415555" + SuffixVoicemail}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, e.CallID+":"+e.Kind.String())
		if e.CallID == "c2" && e.Line != nil {
			t.Error("a voicemail answer carried a line")
		}
	}
	want := "c1:ringing c1:answered c2:ringing c2:answered c2:ended"
	if s := strings.Join(kinds, " "); s != want {
		t.Errorf("events %s, want %s", s, want)
	}
}

// TestLineConformance runs the line conformance suite on the persona's
// lines: the text line (no speech engines: the persona answers each
// finished turn) and the audio line (μ-law in real time, with fake engines
// for the persona's ear and mouth). The far party is the persona: it hangs
// up by its script (it hears "goodbye" and answers "Thanks, bye!"), and
// the tests press its keys and read what it heard of ours.
func TestLineConformance(t *testing.T) {
	t.Run("text", func(t *testing.T) {
		linetest.Run(t, func(t *testing.T) linetest.Case { return personaCall(t, nil) })
	})
	t.Run("audio", func(t *testing.T) {
		linetest.Run(t, func(t *testing.T) linetest.Case { return personaCall(t, newEar()) })
	})
}

// personaCall places a sandbox call to Alex and returns its line; with
// ear, an audio line whose persona hears through it.
func personaCall(t *testing.T, ear *fakeEar) linetest.Case {
	t.Helper()
	leaktest.Check(t)
	lines := make(chan telephony.Line, 1)
	cfg := Config{RingTime: time.Millisecond, Lines: &Lines{Think: time.Millisecond}}
	if ear != nil {
		cfg.Lines.Ear, cfg.Lines.Mouth = ear, &voicetest.Synthesizer{WordDuration: 100 * time.Millisecond}
	}
	n := started(t, cfg, func(e telephony.Event) {
		if e.Line != nil {
			lines <- e.Line
		}
	})
	t.Cleanup(func() { _ = n.Close() })
	if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "call_1", To: "+14155551234"}); err != nil {
		t.Fatalf("Place: %v", err)
	}
	var l *personaLine
	select {
	case line := <-lines:
		l = line.(*personaLine)
	case <-time.After(linetest.Timeout):
		t.Fatal("no line was handed over")
	}
	c := linetest.Case{Line: l, Far: &persona{l: l, ear: ear}, HungUp: endCustomer}
	if ear != nil {
		c.Frame = silenceMulaw
	}
	return c
}

// persona is the far party of a sandbox call.
type persona struct {
	l   *personaLine
	ear *fakeEar // nil: a text line
}

var _ linetest.Far = (*persona)(nil)

// Hangup makes the persona hear a goodbye: it answers and hangs up. On a
// text line it is the assistant's finished turn; on an audio line, what its
// ear recognizes.
func (p *persona) Hangup(*testing.T) {
	if p.ear == nil {
		p.l.TurnDone("turn_bye", "Thanks for calling, goodbye!", false)
		return
	}
	p.ear.hear("Thanks for calling, goodbye!")
}

func (p *persona) Gone(t *testing.T) {
	t.Helper()
	select {
	case <-p.l.ended:
	case <-time.After(linetest.Timeout):
		t.Fatalf("the persona's side did not end within %v", linetest.Timeout)
	}
}

func (p *persona) Press(_ *testing.T, keys string) { p.l.press(keys) }

func (p *persona) Keys(_ *testing.T, n int) string {
	deadline := time.Now().Add(linetest.Timeout)
	for len(p.l.heardKeys()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return p.l.heardKeys()
}

// fakeEar is the persona's recognizer on an audio line: it recognizes
// what the test says it hears (hear), as a final, whatever the audio.
type fakeEar struct {
	heard chan string
}

func newEar() *fakeEar { return &fakeEar{heard: make(chan string, 4)} }

func (e *fakeEar) hear(text string) { e.heard <- text }

func (e *fakeEar) Name() string { return "fake-ear" }

func (e *fakeEar) Start(ctx context.Context, _ speech.TranscribeOptions) (speech.TranscribeStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	st := &earStream{results: make(chan speech.Transcript), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(st.done)
		defer close(st.results)
		for {
			select {
			case <-ctx.Done():
				return
			case text := <-e.heard:
				select {
				case st.results <- speech.Transcript{Text: text, Final: true}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return st, nil
}

type earStream struct {
	results chan speech.Transcript
	cancel  context.CancelFunc
	done    chan struct{}
}

func (s *earStream) Write([]int16) error               { return nil }
func (s *earStream) Finish() error                     { return nil }
func (s *earStream) Results() <-chan speech.Transcript { return s.results }
func (s *earStream) Err() error                        { return nil }
func (s *earStream) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// TestPersonaUnheard: on an audio line whose persona's recognizer gives
// nothing after the assistant's turn (a starved recognizer on a loaded
// machine), Alex does not leave both sides silent until the assistant's
// silence timeout: once the line has been quiet for his patience, he asks
// to hear it again. The silent persona stays silent.
func TestPersonaUnheard(t *testing.T) {
	for _, tc := range []struct {
		to       string
		speaks   bool
		scenario string
	}{
		{"+14155551234", true, "Alex"},
		{"+1415555" + SuffixSilent, false, "the silent persona"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			leaktest.Check(t)
			lines := make(chan telephony.Line, 1)
			cfg := Config{RingTime: time.Millisecond, Lines: &Lines{Think: time.Millisecond, Patience: 300 * time.Millisecond,
				Ear: newEar(), Mouth: &voicetest.Synthesizer{WordDuration: 20 * time.Millisecond}}}
			n := started(t, cfg, func(e telephony.Event) {
				if e.Line != nil {
					lines <- e.Line
				}
			})
			t.Cleanup(func() { _ = n.Close() })
			if err := n.Place(t.Context(), telephony.PlaceRequest{CallID: "call_1", To: tc.to}); err != nil {
				t.Fatalf("Place: %v", err)
			}
			var l *personaLine
			select {
			case line := <-lines:
				l = line.(*personaLine)
			case <-time.After(linetest.Timeout):
				t.Fatal("no line was handed over")
			}
			rx := &voiceReceiver{voiced: make(chan struct{}, 1)}
			done := make(chan telephony.End, 1)
			go func() { done <- l.Receive(t.Context(), rx) }()
			deadline := time.Now().Add(linetest.Timeout)
			for listening := false; !listening; { // until Receive has started the ear
				if time.Now().After(deadline) {
					t.Fatal("Receive did not start the persona's ear")
				}
				time.Sleep(5 * time.Millisecond)
				l.mu.Lock()
				listening = l.stream != nil
				l.mu.Unlock()
			}
			for range 10 {
				if err := l.Write(silenceMulaw); err != nil {
					t.Fatal(err)
				}
			}
			l.AudioDone("turn_1") // the ear never gives a final
			wait := 3 * time.Second
			if !tc.speaks {
				wait = time.Second
			}
			select {
			case <-rx.voiced:
				if !tc.speaks {
					t.Error("the silent persona spoke into a quiet line")
				}
			case <-time.After(wait):
				if tc.speaks {
					t.Errorf("Alex said nothing %v after a turn he did not hear (patience 300ms)", wait)
				}
			}
			_ = l.Hangup(t.Context())
			<-done
		})
	}
}

// voiceReceiver notes the first frame of the persona's that is not silence.
type voiceReceiver struct {
	voiced chan struct{}
}

func (r *voiceReceiver) Audio(b []byte) {
	if string(b) != string(silenceMulaw) {
		select {
		case r.voiced <- struct{}{}:
		default:
		}
	}
}
func (r *voiceReceiver) DTMF(byte)                     {}
func (r *voiceReceiver) Text(string)                   {}
func (r *voiceReceiver) Mark(string, int64)            {}
func (r *voiceReceiver) StartAudio(audio.Format) error { return nil }

// TestCallIn: a persona calling in is admitted by the call control (which
// hears the organization, the numbers and a provider call id), answered at
// once with a line, and talks on it; a refusal comes back to the caller of
// CallIn with no event; a network that hands no lines over takes none.
func TestCallIn(t *testing.T) {
	lines := make(chan telephony.Event, 4)
	var got telephony.Incoming
	refuse := error(nil)
	n := New(Config{Lines: &Lines{Think: time.Millisecond}}, nil)
	cc := telephony.CallControlFuncs{Sink: func(e telephony.Event) { lines <- e }, Admitter: func(_ context.Context, in telephony.Incoming) (string, error) {
		got = in
		if refuse != nil {
			return "", refuse
		}
		return "call_in", nil
	}}
	if err := n.Start(t.Context(), cc); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	id, err := n.CallIn(t.Context(), "org_1", "+14155551234", "+14155550100")
	if err != nil || id != "call_in" {
		t.Fatalf("CallIn = %q, %v", id, err)
	}
	if got.Provider != providerName || got.OrgID != "org_1" || got.From != "+14155551234" || got.To != "+14155550100" || got.ProviderCallID == "" {
		t.Errorf("Incoming = %+v", got)
	}
	var e telephony.Event
	select {
	case e = <-lines:
	case <-time.After(5 * time.Second):
		t.Fatal("no Answered event")
	}
	if e.CallID != "call_in" || e.Kind != telephony.Answered || e.Line == nil {
		t.Fatalf("event = %+v, want Answered with a line", e)
	}
	rx := make(texts, 4)
	go e.Line.Receive(context.Background(), rx)
	e.Line.TurnDone("turn_1", "Hello, how can I help?", false)
	select {
	case s := <-rx:
		if s == "" {
			t.Error("the persona said nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the persona did not talk")
	}

	refuse = telephony.ErrBusy
	if _, err := n.CallIn(t.Context(), "org_1", "+14155551234", "+14155550100"); !errors.Is(err, telephony.ErrBusy) {
		t.Errorf("CallIn refused busy = %v", err)
	}
	select {
	case e := <-lines:
		t.Errorf("a refused call sent %+v", e)
	case <-time.After(50 * time.Millisecond):
	}
	bare := New(Config{}, nil)
	defer bare.Close()
	if _, err := bare.CallIn(t.Context(), "org_1", "+14155551234", "+14155550100"); !errors.Is(err, ErrNoLines) || !errors.Is(err, telephony.ErrUnavailable) {
		t.Errorf("CallIn without lines = %v, want ErrNoLines (unavailable)", err)
	}
}
