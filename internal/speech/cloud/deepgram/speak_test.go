package deepgram_test

import (
	"net/http"
	"testing"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/deepgram"
	"switchboard/internal/speech/cloud/speechtest"
)

func TestSynthesizer(t *testing.T) {
	speechtest.ExerciseSynthesizer(t, speechtest.SynthProvider{
		Name:      deepgram.Provider,
		NewServer: speechtest.NewDeepgramSpeak,
		NewSynthesizer: func(baseURL, apiKey string, hc *http.Client) speech.Synthesizer {
			return deepgram.NewSynthesizer(baseURL, apiKey, hc)
		},
	})
}
