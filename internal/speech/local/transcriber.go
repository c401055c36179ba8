package local

import (
	"context"
	"fmt"
	"strings"

	"switchboard/internal/speech"
)

// transcriber is the pocketsphinx Transcriber; NewTranscriber builds it
// in speech_native builds. Its streams borrow decoders from one pool.
type transcriber struct {
	opts TranscriberOptions
	pool *decoderPool
}

func newTranscriber(opts TranscriberOptions, create func() (decoder, error)) *transcriber {
	return &transcriber{opts: opts, pool: newDecoderPool(opts.Decoders, create)}
}

// Name implements speech.Transcriber.
func (t *transcriber) Name() string { return Name }

// Close frees the pool's decoders: idle ones now, lent ones when their
// stream lets go. Streams started afterwards fail.
func (t *transcriber) Close() error {
	t.pool.close()
	return nil
}

// Start implements speech.Transcriber. The stream takes PCM16 at 8000 or
// 16000 Hz (8 kHz is upsampled here to the model's 16 kHz), Language ""
// or English, and Model "" or "en-us". It does not wait for a decoder:
// the first utterance does, while its audio queues. When no decoder is
// idle, one is created now in the background, so that the call's first
// utterance does not pay for its creation (1–3 s on a loaded machine,
// long enough to miss its deadline in speech.FailoverTranscriber).
func (t *transcriber) Start(ctx context.Context, o speech.TranscribeOptions) (speech.TranscribeStream, error) {
	if err := checkTranscribeOptions(o); err != nil {
		return nil, err
	}
	t.pool.prepare()
	s := newStream(t.pool, o, t.opts.Logger)
	go s.run(ctx)
	return s, nil
}

func checkTranscribeOptions(o speech.TranscribeOptions) error {
	if o.SampleRate != 8000 && o.SampleRate != 16000 {
		return fmt.Errorf("local: TranscribeOptions.SampleRate is %d, want 8000 or 16000", o.SampleRate)
	}
	if o.Language != "" && !sameLanguage(o.Language, "en") {
		return fmt.Errorf("local: TranscribeOptions.Language is %q, want English (en, en-US): the local model is en-us", o.Language)
	}
	if o.Model != "" && !strings.EqualFold(o.Model, "en-us") {
		return fmt.Errorf("local: TranscribeOptions.Model is %q, want \"\" or \"en-us\"", o.Model)
	}
	return nil
}
