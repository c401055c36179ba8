package voice

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/voice/voicetest"
)

// testCall is one call: a Pipeline, the real conversation engine with a
// scripted brain, fake speech engines, and the test goroutine as the
// caller's microphone (speak, silence). Run it in a synctest bubble for
// exact timings, or on the real clock.
type testCall struct {
	t     testing.TB
	p     *Pipeline
	out   *voicetest.Output
	store *voicetest.Store
	brain *voicetest.Brain
	mic   voicetest.Frames

	in         chan conversation.Input
	engineDone chan struct{}
	pipeDone   chan struct{}
	reason     string
	runErr     error
	cancel     context.CancelFunc
	closeOnce  sync.Once
}

// callSetup is what a test varies; zero fields take defaults.
type callSetup struct {
	cfg          Config // In/Out default to PCM16 16 kHz; Detector to voicetest.Detector
	brain        *voicetest.Brain
	firstMessage string
	// failAudioAfter makes the transport fail after that many frames.
	failAudioAfter int
}

// startCall starts the pipeline and the engine on it, in no particular
// order (what the engine says first waits for Run). Callers must defer close.
func startCall(t testing.TB, s callSetup) *testCall {
	t.Helper()
	cfg := s.cfg
	if cfg.In == (audio.Format{}) {
		cfg.In = audio.PipelineFormat
	}
	if cfg.Out == (audio.Format{}) {
		cfg.Out = audio.PipelineFormat
	}
	if cfg.Detector == nil {
		cfg.Detector = voicetest.Detector{}
	}
	if s.brain == nil {
		s.brain = &voicetest.Brain{}
	}
	c := &testCall{
		t:          t,
		out:        voicetest.NewOutput(cfg.Out),
		store:      &voicetest.Store{},
		brain:      s.brain,
		mic:        voicetest.NewFrames(cfg.In),
		in:         make(chan conversation.Input),
		engineDone: make(chan struct{}),
		pipeDone:   make(chan struct{}),
	}
	c.out.FailAudioAfter = s.failAudioAfter
	cfg.Input = func(i conversation.Input) bool {
		select {
		case c.in <- i:
			return true
		case <-c.engineDone:
			return false
		}
	}
	p, err := New(cfg, c.out)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	c.p = p
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.pipeDone)
		c.runErr = p.Run(ctx)
	}()
	a := assistant.Defaults(assistant.DefaultProviders())
	a.FirstMessage = s.firstMessage
	a.MaxDurationSeconds, a.SilenceTimeoutSeconds = 600, 60
	go func() {
		defer close(c.engineDone)
		c.reason = conversation.Run(ctx, conversation.Config{
			Call: call.Call{ID: "call_test", OrgID: "org_test"}, Assistant: a, Brain: s.brain,
			Turns: c.store, Ender: c.store,
		}, c.in, p)
	}()
	return c
}

// speak sends d of tone, one frame every 20 ms.
func (c *testCall) speak(d time.Duration) { c.send(c.mic.Speech, d) }

// silence sends d of silence, one frame every 20 ms.
func (c *testCall) silence(d time.Duration) { c.send(c.mic.Silence, d) }

func (c *testCall) send(frame []byte, d time.Duration) {
	for range int(d / audio.FrameDuration) {
		if err := c.p.Write(frame); err != nil {
			c.t.Fatalf("Write: %v", err)
		}
		time.Sleep(audio.FrameDuration)
	}
}

// silenceUntil sends silence until an event matches, failing the test
// after limit.
func (c *testCall) silenceUntil(what string, match func(voicetest.Event) bool, limit time.Duration) voicetest.Event {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		if e, ok := c.out.Find(match); ok {
			return e
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s within %s; events:\n%s", what, limit, c.dump())
		}
		c.silence(audio.FrameDuration)
	}
}

// silenceUntilEnd sends silence until the engine ends the call, failing
// the test after limit.
func (c *testCall) silenceUntilEnd(limit time.Duration) {
	c.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-c.engineDone:
			return
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the call did not end within %s; events:\n%s", limit, c.dump())
		}
		c.silence(audio.FrameDuration)
	}
}

// hangup ends the call from the caller's side.
func (c *testCall) hangup() {
	select {
	case c.in <- conversation.Input{Kind: conversation.Hangup}:
	case <-c.engineDone:
	}
}

// end waits for the engine to end the call (within limit), then stops the
// pipeline and waits for Run; it returns the ended reason.
func (c *testCall) end(limit time.Duration) string {
	c.t.Helper()
	select {
	case <-c.engineDone:
	case <-time.After(limit):
		c.t.Fatalf("the call did not end within %s; events:\n%s", limit, c.dump())
	}
	c.cancel()
	select {
	case <-c.pipeDone:
	case <-time.After(limit):
		c.t.Fatalf("Pipeline.Run did not return within %s of the call's end", limit)
	}
	return c.reason
}

// close stops everything (idempotent; for defer, also on failure).
func (c *testCall) close() {
	c.closeOnce.Do(func() {
		c.cancel()
		<-c.engineDone
		<-c.pipeDone
	})
}

func (c *testCall) dump() string {
	var b strings.Builder
	for _, e := range c.out.Events() {
		if e.Kind == "delta" {
			continue
		}
		fmt.Fprintf(&b, "  %s %s\n", e.At.Format("15:04:05.000"), e)
	}
	return b.String()
}

// turn returns the stored turn with seq, failing the test if there is none.
func (c *testCall) turn(seq int) call.Turn {
	c.t.Helper()
	for _, t := range c.store.Turns() {
		if t.Seq == seq {
			return t
		}
	}
	c.t.Fatalf("no stored turn %d; turns: %+v", seq, c.store.Turns())
	return call.Turn{}
}

// kinds lists the events' kinds (and turn ids), without deltas and partials.
func kinds(events []voicetest.Event) []string {
	var out []string
	for _, e := range events {
		switch {
		case e.Kind == "delta", e.Kind == "transcript" && !e.Flag:
			continue
		case e.Kind == "transcript":
			out = append(out, "transcript "+e.Role)
		default:
			out = append(out, strings.TrimSpace(e.Kind+" "+e.TurnID))
		}
	}
	return out
}

// words is the first n words of text.
func words(text string, n int) string {
	return strings.Join(strings.Fields(text)[:n], " ")
}
