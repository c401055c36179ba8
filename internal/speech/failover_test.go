package speech_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/speech"
)

// fakeSynth is a Synthesizer whose behaviour a test scripts: speak is
// called with out; it records the texts and voices it was asked for.
type fakeSynth struct {
	name  string
	speak func(ctx context.Context, out func([]int16) error) error

	mu     sync.Mutex
	texts  []string
	voices []string
}

func (f *fakeSynth) Name() string { return f.name }

func (f *fakeSynth) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func([]int16) error) error {
	f.mu.Lock()
	f.texts = append(f.texts, text)
	f.voices = append(f.voices, opts.Voice)
	f.mu.Unlock()
	if f.speak == nil {
		return out([]int16{1, 2, 3})
	}
	return f.speak(ctx, out)
}

func (f *fakeSynth) calls() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.texts), slices.Clone(f.voices)
}

// speakValue speaks three samples of v.
func speakValue(v int16) func(context.Context, func([]int16) error) error {
	return func(_ context.Context, out func([]int16) error) error { return out([]int16{v, v, v}) }
}

// hang waits for ctx, as a provider that never answers does.
func hang(ctx context.Context, _ func([]int16) error) error {
	<-ctx.Done()
	return ctx.Err()
}

// collect is an out that keeps what it is given.
type collect struct {
	mu  sync.Mutex
	pcm []int16
}

func (c *collect) out(pcm []int16) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pcm = append(c.pcm, pcm...)
	return nil
}

func (c *collect) got() []int16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pcm)
}

var errDown = errors.New("status 503: provider down")

func TestFailoverSynthesizer(t *testing.T) {
	const firstAudio = time.Second
	for _, c := range []struct {
		name      string
		primary   func(context.Context, func([]int16) error) error
		fallback  func(context.Context, func([]int16) error) error // nil: no fallback
		wantAudio []int16
		wantErr   []error // all must match errors.Is; nil: success
		wantText  string  // in the error message
		wantOver  bool
		wantFBRun bool // the fallback spoke this text
	}{
		{
			name:      "primary speaks",
			primary:   speakValue(1),
			fallback:  speakValue(2),
			wantAudio: []int16{1, 1, 1},
		},
		{
			name:      "primary errors before audio: the fallback speaks the text",
			primary:   func(context.Context, func([]int16) error) error { return errDown },
			fallback:  speakValue(2),
			wantAudio: []int16{2, 2, 2},
			wantOver:  true, wantFBRun: true,
		},
		{
			name:      "primary hangs: after the first-audio bound the fallback speaks",
			primary:   hang,
			fallback:  speakValue(2),
			wantAudio: []int16{2, 2, 2},
			wantOver:  true, wantFBRun: true,
		},
		{
			name: "primary ignores the cancel and speaks late: its audio is refused",
			primary: func(_ context.Context, out func([]int16) error) error {
				time.Sleep(2 * firstAudio)
				return out([]int16{1, 1, 1})
			},
			fallback:  speakValue(2),
			wantAudio: []int16{2, 2, 2},
			wantOver:  true, wantFBRun: true,
		},
		{
			name: "primary fails after its audio started: no replay",
			primary: func(_ context.Context, out func([]int16) error) error {
				out([]int16{1, 1, 1})
				return errors.New("socket dropped")
			},
			fallback:  speakValue(2),
			wantAudio: []int16{1, 1, 1},
			wantErr:   []error{speech.ErrVoiceFailed},
			wantText:  "socket dropped",
			wantOver:  true,
		},
		{
			name:     "both fail",
			primary:  func(context.Context, func([]int16) error) error { return errDown },
			fallback: hang,
			wantErr:  []error{speech.ErrVoiceFailed, errDown, speech.ErrTimeout},
			wantText: "fallback: fb: no audio within 1s: timed out",
			wantOver: true, wantFBRun: true,
		},
		{
			name:     "no fallback: the primary's error",
			primary:  func(context.Context, func([]int16) error) error { return errDown },
			wantErr:  []error{speech.ErrVoiceFailed, errDown},
			wantText: "provider down",
		},
		{
			name:     "no fallback: a hung primary times out",
			primary:  hang,
			wantErr:  []error{speech.ErrVoiceFailed, speech.ErrTimeout},
			wantText: "primary: no audio within 1s: timed out",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &fakeSynth{name: "primary", speak: c.primary}
				var fb speech.SynthesizerFallback
				var fake *fakeSynth
				if c.fallback != nil {
					fake = &fakeSynth{name: "fb", speak: c.fallback}
					fb = speech.SynthesizerFallback{Synthesizer: fake, Voice: "fb-voice"}
				}
				f := speech.FailoverSynthesizer(p, fb, speech.SynthesizerFailoverOptions{FirstAudio: firstAudio})
				var out collect
				start := time.Now()
				err := f.Synthesize(t.Context(), "hello", speech.VoiceOptions{SampleRate: 16000, Voice: "p-voice"}, out.out)
				took := time.Since(start)
				if c.wantErr == nil && err != nil {
					t.Fatalf("Synthesize = %v, want nil", err)
				}
				for _, want := range c.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("Synthesize = %v, want it to wrap %v", err, want)
					}
				}
				if err != nil && !strings.Contains(err.Error(), c.wantText) {
					t.Errorf("Synthesize = %q, want it to say %q", err, c.wantText)
				}
				if got := out.got(); !slices.Equal(got, c.wantAudio) {
					t.Errorf("audio out = %v, want %v", got, c.wantAudio)
				}
				if took > 3*firstAudio {
					t.Errorf("Synthesize took %v, want ≤ %v", took, 3*firstAudio)
				}
				if f.FailedOver() != c.wantOver {
					t.Errorf("FailedOver() = %v, want %v", f.FailedOver(), c.wantOver)
				}
				if texts, voices := p.calls(); !slices.Equal(texts, []string{"hello"}) || voices[0] != "p-voice" {
					t.Errorf("primary asked %q with voices %q, want hello with p-voice", texts, voices)
				}
				if fake != nil {
					texts, voices := fake.calls()
					if ran := len(texts) > 0; ran != c.wantFBRun {
						t.Errorf("fallback asked %q, want asked: %v", texts, c.wantFBRun)
					} else if ran && (texts[0] != "hello" || voices[0] != "fb-voice") {
						t.Errorf("fallback asked %q with voice %q, want hello with its own voice fb-voice", texts[0], voices[0])
					}
				}
			})
		})
	}
}

// TestFailoverSynthesizerSticky: once the primary failed, every later text
// goes to the fallback, and Name says who speaks.
func TestFailoverSynthesizerSticky(t *testing.T) {
	p := &fakeSynth{name: "primary", speak: func(context.Context, func([]int16) error) error { return errDown }}
	fb := &fakeSynth{name: "fb", speak: speakValue(2)}
	f := speech.FailoverSynthesizer(p, speech.SynthesizerFallback{Synthesizer: fb}, speech.SynthesizerFailoverOptions{})
	if f.Name() != "primary" {
		t.Errorf("Name() before a failure = %q, want primary", f.Name())
	}
	var out collect
	for _, text := range []string{"one", "two", "three"} {
		if err := f.Synthesize(t.Context(), text, speech.VoiceOptions{SampleRate: 8000}, out.out); err != nil {
			t.Fatalf("Synthesize(%q) = %v", text, err)
		}
	}
	if texts, _ := p.calls(); !slices.Equal(texts, []string{"one"}) {
		t.Errorf("primary asked %q, want only the first text", texts)
	}
	if texts, _ := fb.calls(); !slices.Equal(texts, []string{"one", "two", "three"}) {
		t.Errorf("fallback asked %q, want every text from the first", texts)
	}
	if !f.FailedOver() || f.Name() != "fb" {
		t.Errorf("after a failure: FailedOver() = %v, Name() = %q; want true, fb", f.FailedOver(), f.Name())
	}
	// The fallback failing too is the end of the voice.
	fb.speak = func(context.Context, func([]int16) error) error { return errors.New("fb down") }
	if err := f.Synthesize(t.Context(), "four", speech.VoiceOptions{SampleRate: 8000}, out.out); !errors.Is(err, speech.ErrVoiceFailed) {
		t.Errorf("Synthesize on a failed fallback = %v, want ErrVoiceFailed", err)
	}
}

// TestFailoverSynthesizerNotFailures: a canceled context (barge-in) and a
// failing out (the transport) are the caller's ends, not the voice's.
func TestFailoverSynthesizerNotFailures(t *testing.T) {
	fb := &fakeSynth{name: "fb"}
	ctx, cancel := context.WithCancel(t.Context())
	p := &fakeSynth{name: "primary", speak: func(ctx context.Context, out func([]int16) error) error {
		out([]int16{1})
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}}
	f := speech.FailoverSynthesizer(p, speech.SynthesizerFallback{Synthesizer: fb}, speech.SynthesizerFailoverOptions{})
	var out collect
	if err := f.Synthesize(ctx, "cut", speech.VoiceOptions{SampleRate: 8000}, out.out); !errors.Is(err, context.Canceled) || errors.Is(err, speech.ErrVoiceFailed) {
		t.Errorf("Synthesize canceled = %v, want context.Canceled, not ErrVoiceFailed", err)
	}
	errGone := errors.New("transport gone")
	p.speak = func(_ context.Context, out func([]int16) error) error {
		return fmt.Errorf("writing: %w", out([]int16{1}))
	}
	err := f.Synthesize(t.Context(), "gone", speech.VoiceOptions{SampleRate: 8000}, func([]int16) error { return errGone })
	if !errors.Is(err, errGone) || errors.Is(err, speech.ErrVoiceFailed) {
		t.Errorf("Synthesize with a failing out = %v, want the transport's error, not ErrVoiceFailed", err)
	}
	if texts, _ := fb.calls(); f.FailedOver() || len(texts) > 0 {
		t.Errorf("FailedOver() = %v, fallback asked %q; want no failover", f.FailedOver(), texts)
	}
}
