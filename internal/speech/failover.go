package speech

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Failover (this file and failover_transcriber.go): a call's speech engines wrapped with the assistant's fallback
// providers (FailoverSynthesizer, FailoverTranscriber). A provider that
// errors, drops its socket or goes silent is replaced by its fallback for
// the rest of the call, without the pipeline knowing which engine speaks or
// listens; when there is no fallback, or it fails too, the error wraps
// ErrVoiceFailed or ErrTranscriberFailed and the pipeline ends the call
// with the matching reason.
//
// Make one wrapper per call: the switch to the fallback is sticky, so one
// call's failure must not move another call.

// Errors of the failover wrappers. The pipeline tells a provider failure
// (which ends the call voice-failed or transcriber-failed) from its own
// ends (a canceled context, a transport that failed) with errors.Is; the
// providers' own errors stay reachable through them.
var (
	// ErrVoiceFailed: text to speech failed and there is no fallback, or
	// the fallback failed too, or the voice broke off in the middle of a
	// text (its audio started, so it is not replayed).
	ErrVoiceFailed = errors.New("speech: voice failed")
	// ErrTranscriberFailed: speech to text failed and there is no
	// fallback, or the fallback failed too.
	ErrTranscriberFailed = errors.New("speech: transcriber failed")
	// ErrTimeout: a provider produced nothing in time (no audio within
	// the first-audio bound, no final result after Finish). It is wrapped
	// in the provider's error, itself wrapped in one of the two above.
	ErrTimeout = errors.New("timed out")
)

// Defaults of the failover options.
const (
	// DefaultFirstAudio bounds how long a synthesizer may take to start
	// speaking a text. Cloud voices answer in well under a second and
	// espeak-ng in milliseconds; 3 s of dead air is already a failure.
	DefaultFirstAudio = 3 * time.Second
	// DefaultFinalTimeout bounds how long after Finish a recognition
	// stream may take to deliver the utterance's final result.
	DefaultFinalTimeout = 5 * time.Second
)

// SynthesizerFallback is the synthesizer a FailoverSynthesizer switches to,
// with the voice to ask it for. The zero value means no fallback.
type SynthesizerFallback struct {
	Synthesizer Synthesizer
	// Voice replaces VoiceOptions.Voice for the fallback ("" for its
	// default voice): the primary's voice id means nothing to another
	// provider.
	Voice string
}

// SynthesizerFailoverOptions configure FailoverSynthesizer. The zero value
// is ready.
type SynthesizerFailoverOptions struct {
	// FirstAudio bounds the wait for a text's first audio, on the primary
	// and on the fallback (default DefaultFirstAudio).
	FirstAudio time.Duration
	// Logger receives a warning when the call fails over (default: discarded).
	Logger *slog.Logger
}

// SynthesizerFailover is a Synthesizer that speaks with its primary and,
// once the primary fails before speaking a text, with its fallback for the
// rest of the call. FailoverSynthesizer makes one.
type SynthesizerFailover struct {
	primary    Synthesizer
	fallback   SynthesizerFallback
	firstAudio time.Duration
	log        *slog.Logger
	failedOver atomic.Bool
}

var _ Synthesizer = (*SynthesizerFailover)(nil)

// FailoverSynthesizer wraps primary with fallback for one call.
//
// Synthesize asks the primary with the request's options unchanged. When
// the primary returns an error, or sends no audio within FirstAudio
// (then its context is canceled), and nothing has reached out yet, the
// same text is spoken by the fallback with its own Voice, and every later
// text goes to the fallback (FailedOver). When the primary fails after
// some of its audio went out, the text is not replayed (the caller would
// hear its beginning twice): Synthesize returns an error wrapping
// ErrVoiceFailed and the primary's error, and later texts go to the
// fallback.
//
// A fallback with a nil Synthesizer means none: the primary's failures,
// a first-audio timeout included (so that a hung provider cannot hang the
// call), return errors wrapping ErrVoiceFailed. A canceled ctx (barge-in,
// hang-up) and an error from out (the transport) are returned as they
// are, without failing over.
func FailoverSynthesizer(primary Synthesizer, fallback SynthesizerFallback, opts SynthesizerFailoverOptions) *SynthesizerFailover {
	if opts.FirstAudio <= 0 {
		opts.FirstAudio = DefaultFirstAudio
	}
	return &SynthesizerFailover{primary: primary, fallback: fallback, firstAudio: opts.FirstAudio, log: logger(opts.Logger)}
}

// Name implements Synthesizer: the provider speaking now (the fallback's
// after a failover).
func (f *SynthesizerFailover) Name() string {
	if f.FailedOver() {
		return f.fallback.Synthesizer.Name()
	}
	return f.primary.Name()
}

// FailedOver reports whether the fallback has taken over for the rest of
// the call.
func (f *SynthesizerFailover) FailedOver() bool {
	return f.fallback.Synthesizer != nil && f.failedOver.Load()
}

// Synthesize implements Synthesizer; see FailoverSynthesizer.
func (f *SynthesizerFailover) Synthesize(ctx context.Context, text string, opts VoiceOptions, out func(pcm []int16) error) error {
	if f.FailedOver() {
		r := f.attempt(ctx, f.fallback.Synthesizer, text, f.fallbackOptions(opts), out)
		if r.err == nil || r.outErr != nil || ctx.Err() != nil {
			return r.result()
		}
		return fmt.Errorf("%w: fallback: %w", ErrVoiceFailed, r.err)
	}
	r := f.attempt(ctx, f.primary, text, opts, out)
	if r.err == nil || r.outErr != nil || ctx.Err() != nil {
		return r.result()
	}
	fb := f.fallback.Synthesizer
	if fb == nil {
		if r.wrote {
			return fmt.Errorf("%w after its audio started: %w", ErrVoiceFailed, r.err)
		}
		return fmt.Errorf("%w: %w", ErrVoiceFailed, r.err)
	}
	f.failedOver.Store(true)
	f.log.Warn("speech: voice failed; its fallback takes over for the rest of the call",
		"provider", f.primary.Name(), "fallback", fb.Name(), "replayed", !r.wrote, "err", r.err)
	if r.wrote {
		return fmt.Errorf("%w after its audio started: %w", ErrVoiceFailed, r.err)
	}
	fr := f.attempt(ctx, fb, text, f.fallbackOptions(opts), out)
	if fr.err == nil || fr.outErr != nil || ctx.Err() != nil {
		return fr.result()
	}
	return fmt.Errorf("%w: %w; fallback: %w", ErrVoiceFailed, r.err, fr.err)
}

func (f *SynthesizerFailover) fallbackOptions(opts VoiceOptions) VoiceOptions {
	opts.Voice = f.fallback.Voice
	return opts
}

// attemptResult is how one synthesizer's attempt at a text went.
type attemptResult struct {
	err    error // the synthesizer's error, or the first-audio timeout
	outErr error // out failed (err is then whatever the synthesizer made of it)
	wrote  bool  // some audio reached out
}

func (r attemptResult) result() error {
	if r.outErr != nil {
		return r.outErr
	}
	return r.err
}

// First-audio states of an attempt.
const (
	audioWaiting int32 = iota
	audioStarted
	audioTimedOut
)

// attempt runs s on text with the first-audio bound. Once the bound has
// passed, out is closed to s (its calls fail and forward nothing), so the
// fallback can speak the text from the start.
func (f *SynthesizerFailover) attempt(ctx context.Context, s Synthesizer, text string, opts VoiceOptions, out func([]int16) error) attemptResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := fmt.Errorf("%s: no audio within %v: %w", s.Name(), f.firstAudio, ErrTimeout)
	var state atomic.Int32
	timer := time.AfterFunc(f.firstAudio, func() {
		if state.CompareAndSwap(audioWaiting, audioTimedOut) {
			cancel(timeout)
		}
	})
	defer timer.Stop()
	var (
		mu     sync.Mutex
		outErr error
	)
	err := s.Synthesize(ctx, text, opts, func(pcm []int16) error {
		if len(pcm) == 0 {
			return nil
		}
		if !state.CompareAndSwap(audioWaiting, audioStarted) && state.Load() != audioStarted {
			return timeout
		}
		if err := out(pcm); err != nil {
			mu.Lock()
			outErr = err
			mu.Unlock()
			return err
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	r := attemptResult{err: err, outErr: outErr, wrote: state.Load() == audioStarted}
	if state.Load() == audioTimedOut {
		r.err = timeout // whatever s returned once canceled
	}
	return r
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
