// Package speech declares what the call pipeline needs from speech engines:
// a Transcriber (speech to text) and a Synthesizer (text to speech). The
// local offline engines (internal/speech/local) and the cloud providers
// (internal/speech/cloud) implement them; the pipeline picks one per call
// from the assistant's transcriber and voice settings.
//
// Audio at these edges is PCM16 mono at the rate the caller asks for; the
// pipeline resamples (internal/audio) between the transport and the engine.
//
// FailoverSynthesizer and FailoverTranscriber wrap a call's engines with
// the assistant's fallback providers; their errors wrap ErrVoiceFailed or
// ErrTranscriberFailed when the call can no longer speak or listen.
package speech

import (
	"context"
	"errors"
)

// TranscribeOptions configure one recognition stream.
type TranscribeOptions struct {
	// SampleRate of the PCM written to the stream (8000 or 16000 usually).
	SampleRate int
	// Language is a BCP 47 tag such as en-US.
	Language string
	// Model is the provider's model name ("" for its default).
	Model string
	// Hints are the answers the conversation expects next (a flow node's
	// options): an engine may restrict recognition to them (a grammar).
	// Streams that implement Hinter can change them later.
	Hints []string
}

// Transcript is a recognition result.
type Transcript struct {
	Text string
	// Final marks the last result of an utterance; partials may follow
	// each other and change.
	Final      bool
	Confidence float64
	// Dropped marks a final that stands in for one the engine did not
	// give in time (or lost when its stream broke): the utterance is lost
	// and Text is empty. Only FailoverTranscriber streams send it, one for
	// each such utterance, in its place, so that every Finish still gets
	// one final; engines never set it.
	Dropped bool
}

// Transcriber opens recognition streams.
type Transcriber interface {
	// Name is the provider name used on assistants ("local", "deepgram", "openai").
	Name() string
	// Start opens a stream. Audio is written in real time; results arrive
	// on the stream's channel.
	Start(ctx context.Context, opts TranscribeOptions) (TranscribeStream, error)
}

// TranscribeStream is one open recognition stream.
type TranscribeStream interface {
	// Write sends audio (PCM16 mono at the options' rate). It does not
	// block for long; an engine that falls behind drops oldest and counts.
	// pcm is not kept after Write returns (the caller reuses its buffer).
	Write(pcm []int16) error
	// Finish marks the end of an utterance (endpointing decided the
	// caller stopped): the engine sends its final result for it. The
	// stream stays open for the next utterance.
	Finish() error
	// Results delivers partial and final transcripts; it is closed when
	// the stream ends (Close, an error, or the context). Partials should
	// come while the utterance is still being written, every few hundred
	// milliseconds at most: the pipeline decides on them whether the
	// caller talking over the assistant interrupts it, without waiting
	// for the caller to finish.
	Results() <-chan Transcript
	// Err is why Results closed, nil after Close.
	Err() error
	// Close ends the stream and releases its resources.
	Close() error
}

// Hinter is implemented by streams that can change their hints between
// utterances; new hints apply from the next utterance that starts.
//
// The pipeline opens one stream per call and calls SetHints as the
// conversation moves (a flow node's expected answers after a closed
// question, nil after an open one). An utterance starts with the first
// Write or Finish after the stream opened or after the previous Finish;
// one already started keeps the hints it began with. nil or empty hints
// mean no restriction (an engine's full language model). SetHints is safe
// to call from any goroutine, concurrently with Write and Finish; a
// stream that does not implement Hinter keeps its Start hints.
type Hinter interface {
	SetHints(hints []string)
}

// VoiceOptions configure synthesis.
type VoiceOptions struct {
	// SampleRate of the PCM the synthesizer must produce.
	SampleRate int
	// Voice is the provider's voice id ("" for its default).
	Voice string
	// Language is a BCP 47 tag such as en-US.
	Language string
}

// Synthesizer turns text into speech.
type Synthesizer interface {
	// Name is the provider name used on assistants ("local", "openai", "elevenlabs", "deepgram").
	Name() string
	// Synthesize streams the speech of text to out as it is produced
	// (PCM16 mono at opts.SampleRate, any chunk size). It returns when
	// the text is spoken, out fails, or ctx is done (barge-in).
	Synthesize(ctx context.Context, text string, opts VoiceOptions, out func(pcm []int16) error) error
}

// ErrUnavailable is returned by engines whose runtime parts are missing
// (a library or program not installed); the server then says which
// providers it lacks instead of failing.
var ErrUnavailable = errors.New("speech: engine unavailable on this server")
