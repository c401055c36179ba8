package app

import (
	"fmt"
	"log/slog"

	"switchboard/internal/assistant"
	"switchboard/internal/speech"
	"switchboard/internal/voice"
)

// voices gives each call the speech engines its assistant names, from the
// ones this server has, each wrapped with the assistant's fallback (and,
// without one, still with the failover's timeouts, so a provider that
// hangs never hangs the call).
type voices struct {
	engines *SpeechEngines
	log     *slog.Logger
}

var _ voice.Voices = voices{}

func (v voices) For(a assistant.Assistant) (speech.Transcriber, speech.Synthesizer, error) {
	if v.engines == nil {
		return nil, nil, fmt.Errorf("this server has no speech engines")
	}
	stt, ok := v.engines.Transcriber(a.Transcriber.Provider)
	if !ok {
		return nil, nil, fmt.Errorf("transcriber %q is not available on this server", a.Transcriber.Provider)
	}
	tts, ok := v.engines.Synthesizer(a.Voice.Provider)
	if !ok {
		return nil, nil, fmt.Errorf("voice %q is not available on this server", a.Voice.Provider)
	}
	var sttFallback speech.TranscriberFallback
	if f := a.Transcriber.Fallback; f != nil {
		if t, ok := v.engines.Transcriber(f.Provider); ok {
			sttFallback = speech.TranscriberFallback{Transcriber: t, Model: f.Model, Language: f.Language}
		}
	}
	var ttsFallback speech.SynthesizerFallback
	if f := a.Voice.Fallback; f != nil {
		if s, ok := v.engines.Synthesizer(f.Provider); ok {
			ttsFallback = speech.SynthesizerFallback{Synthesizer: s, Voice: f.VoiceID}
		}
	}
	log := v.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return speech.FailoverTranscriber(stt, sttFallback, speech.TranscriberFailoverOptions{Logger: log}),
		speech.FailoverSynthesizer(tts, ttsFallback, speech.SynthesizerFailoverOptions{Logger: log}), nil
}
