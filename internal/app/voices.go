package app

import (
	"fmt"

	"switchboard/internal/assistant"
	"switchboard/internal/speech"
	"switchboard/internal/voice"
)

// voices gives each call the speech engines its assistant names, from the
// ones this server has (voice.Voices).
type voices struct{ engines *SpeechEngines }

var _ voice.Voices = voices{}

func (v voices) For(a assistant.Assistant) (speech.Transcriber, speech.Synthesizer, error) {
	if v.engines == nil {
		return nil, nil, fmt.Errorf("this server has no speech engines")
	}
	stt, ok := v.engines.Transcriber(orLocal(a.Transcriber.Provider))
	if !ok {
		return nil, nil, fmt.Errorf("transcriber %q is not available on this server", orLocal(a.Transcriber.Provider))
	}
	tts, ok := v.engines.Synthesizer(orLocal(a.Voice.Provider))
	if !ok {
		return nil, nil, fmt.Errorf("voice %q is not available on this server", orLocal(a.Voice.Provider))
	}
	return stt, tts, nil
}

func orLocal(name string) string {
	if name == "" {
		return "local"
	}
	return name
}
