package voicetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"switchboard/internal/speech"
)

// Synthesizer is a speech.Synthesizer that speaks WordDuration of tone per
// word of the text, at the requested rate, after FirstAudio of latency, as
// fast as out takes it (one call of out per word).
type Synthesizer struct {
	// WordDuration is the audio per word (default 100 ms; keep it a
	// multiple of 20 ms for whole frames).
	WordDuration time.Duration
	// FirstAudio is the latency of every Synthesize call before its first audio.
	FirstAudio time.Duration
	// Err, when set, fails Synthesize calls after the first FailAfter ones
	// (which succeed), before any audio.
	Err       error
	FailAfter int

	mu    sync.Mutex
	texts []string
}

// Name implements speech.Synthesizer.
func (s *Synthesizer) Name() string { return "fake-tts" }

// Texts returns every text Synthesize was asked to speak, in order.
func (s *Synthesizer) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

// Synthesize implements speech.Synthesizer.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func([]int16) error) error {
	if opts.SampleRate <= 0 {
		return errors.New("voicetest: VoiceOptions.SampleRate is required")
	}
	s.mu.Lock()
	s.texts = append(s.texts, text)
	fail := s.Err != nil && len(s.texts) > s.FailAfter
	s.mu.Unlock()
	if !sleep(s.FirstAudio, ctx.Done()) {
		return ctx.Err()
	}
	if fail {
		return s.Err
	}
	wd := s.WordDuration
	if wd <= 0 {
		wd = 100 * time.Millisecond
	}
	word := sharedTone(opts.SampleRate, wd)
	for range strings.Fields(text) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := out(word); err != nil {
			return err
		}
	}
	return nil
}

var _ speech.Synthesizer = (*Synthesizer)(nil)
