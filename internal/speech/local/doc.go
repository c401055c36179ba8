// Package local is the offline speech provider ("local"): espeak-ng for
// text to speech and pocketsphinx (en-us) for speech to text. It needs no
// API key and no network, so it is the default voice of a fresh install and
// the engine the project's own end-to-end tests talk to.
//
// Two builds:
//
//   - The default build (CGO_ENABLED=0 works) speaks by running the
//     espeak-ng program and has no transcriber: NewTranscriber returns
//     speech.ErrUnavailable.
//   - Built with -tags speech_native (and cgo), it links libespeak-ng and
//     libpocketsphinx (the 5prealpha API Debian 12 ships) and adds the
//     transcriber. scripts/speech-deps.sh installs the Debian packages.
//
// Available reports what the running build and machine can do.
//
// Streams: PCM16 at 8000 or 16000 Hz (8 kHz is upsampled here to the
// model's 16 kHz). Write only queues (10 s at most; the oldest audio goes
// first); one goroutine per stream decodes in 20 ms chunks, sends a
// partial every ~100 ms of audio when the hypothesis changed (while the
// caller is still speaking: the pipeline pauses and cuts the assistant on
// them), and a final for every Finish (and after 60 s without one). A stream borrows a
// decoder from the transcriber's pool for each utterance and returns it
// at Finish or Close. Beyond speech.TranscribeStream, streams implement
// speech.Hinter (SetHints changes the grammar from the next utterance on)
// and have Dropped() (samples, partials int64), and the transcriber a
// Close() error that frees its decoders.
//
// Recognition quality is honest but modest: pocketsphinx with the generic
// language model is fine for closed-set turns (yes/no, a flow node's
// options, passed as TranscribeOptions.Hints and compiled to a JSGF
// grammar) and weak for open dialogue; the cloud providers remain the real
// path for that. See cmnprior.go for the cepstral-mean prior that makes
// the first utterance of a stream usable.
package local

import "log/slog"

// Name is the provider name assistants use to choose this engine.
const Name = "local"

// Defaults for SynthesizerOptions. 150 wpm is a little slower than
// espeak-ng's own 175: it sounds calmer on the phone, and pocketsphinx
// recognizes espeak at 140–150 wpm far better than at 175, which the
// project's self-tests (a bot calling a bot) rely on.
const (
	DefaultVoice = "en-us"
	DefaultRate  = 150
)

// DefaultDecoders is the default size of the transcriber's decoder pool.
// Each pocketsphinx decoder holds about 90–100 MB and takes ~0.3 s to
// create, and one is busy only while an utterance is being decoded, so a
// few serve many calls.
const DefaultDecoders = 4

// SynthesizerOptions configure NewSynthesizer. The zero value is ready.
type SynthesizerOptions struct {
	// Voice is the espeak-ng voice used when a request names none
	// (default DefaultVoice).
	Voice string
	// Rate is the speaking rate in words per minute (default DefaultRate).
	Rate int
	// Program is the espeak-ng executable the default build runs (default
	// "espeak-ng", looked up on PATH). Setting it also makes a
	// speech_native build run the program instead of the linked library.
	Program string
	// Logger receives the engine's warnings (default: discarded).
	Logger *slog.Logger
}

// TranscriberOptions configure NewTranscriber. The zero value is ready.
type TranscriberOptions struct {
	// Decoders bounds how many utterances are decoded at once (default
	// DefaultDecoders). Decoders are created on first need and reused.
	Decoders int
	// ModelDir holds the en-us acoustic model, language model and
	// dictionary (default /usr/share/pocketsphinx/model/en-us, from the
	// pocketsphinx-en-us package).
	ModelDir string
	// Logger receives the engine's warnings (default: discarded).
	Logger *slog.Logger
}

func (o SynthesizerOptions) withDefaults() SynthesizerOptions {
	if o.Voice == "" {
		o.Voice = DefaultVoice
	}
	if o.Rate <= 0 {
		o.Rate = DefaultRate
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o TranscriberOptions) withDefaults() TranscriberOptions {
	if o.Decoders <= 0 {
		o.Decoders = DefaultDecoders
	}
	if o.ModelDir == "" {
		o.ModelDir = defaultModelDir
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

const defaultModelDir = "/usr/share/pocketsphinx/model/en-us"
