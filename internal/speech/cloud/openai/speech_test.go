package openai_test

import (
	"net/http"
	"testing"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/openai"
	"switchboard/internal/speech/cloud/speechtest"
)

func TestSynthesizer(t *testing.T) {
	speechtest.ExerciseSynthesizer(t, speechtest.SynthProvider{
		Name:      openai.Provider,
		NewServer: speechtest.NewOpenAISpeech,
		NewSynthesizer: func(baseURL, apiKey string, hc *http.Client) speech.Synthesizer {
			return openai.NewSynthesizer(baseURL, apiKey, hc)
		},
	})
}
