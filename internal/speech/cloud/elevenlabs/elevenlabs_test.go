package elevenlabs_test

import (
	"net/http"
	"testing"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/elevenlabs"
	"switchboard/internal/speech/cloud/speechtest"
)

func TestSynthesizer(t *testing.T) {
	speechtest.ExerciseSynthesizer(t, speechtest.SynthProvider{
		Name:      elevenlabs.Provider,
		NewServer: speechtest.NewElevenLabs,
		NewSynthesizer: func(baseURL, apiKey string, hc *http.Client) speech.Synthesizer {
			return elevenlabs.NewSynthesizer(baseURL, apiKey, hc)
		},
	})
}
