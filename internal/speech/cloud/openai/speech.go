package openai

import (
	"context"
	"encoding/json"
	"net/http"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Defaults of the Synthesizer.
const (
	// DefaultSpeechModel is used when the Synthesizer names none.
	DefaultSpeechModel = "tts-1"
	// DefaultVoice is used when VoiceOptions.Voice is empty.
	DefaultVoice = "alloy"
	// speechRate is the rate of response_format "pcm": 24 kHz, 16-bit
	// signed little-endian, mono, no header.
	speechRate = 24000
)

// Synthesizer speaks through {base}/audio/speech, streaming the PCM as it
// arrives and resampling it from 24 kHz to the rate asked for.
type Synthesizer struct {
	// Model ("" = DefaultSpeechModel) and Voice ("" = DefaultVoice, when
	// the options name none) configure every request.
	Model string
	Voice string

	url    string
	config error
	ep     vendorapi.Endpoint
}

var _ speech.Synthesizer = (*Synthesizer)(nil)

// NewSynthesizer returns a Synthesizer for baseURL ("" = DefaultBaseURL).
// hc nil means http.DefaultClient; give it no Timeout (a long reply streams
// for a while): deadlines come from ctx.
func NewSynthesizer(baseURL, apiKey string, hc *http.Client) *Synthesizer {
	s := &Synthesizer{ep: newEndpoint(apiKey, hc)}
	base, err := wire.BaseURL(baseURL, DefaultBaseURL)
	s.url, s.config = base+"/audio/speech", err
	return s
}

// Name implements speech.Synthesizer.
func (s *Synthesizer) Name() string { return Provider }

// speechRequest is the body of /audio/speech.
type speechRequest struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
}

// Synthesize implements speech.Synthesizer. Text that is only white space
// speaks nothing and sends nothing.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func(pcm []int16) error) error {
	// The speech endpoint answers 24 kHz PCM whatever the request's rate.
	_, voice, skip, err := wire.Speak(&s.ep, s.config, text, opts, nil, 24000, s.Voice, DefaultVoice)
	if skip || err != nil {
		return err
	}
	req := speechRequest{Model: s.Model, Input: text, Voice: voice, ResponseFormat: "pcm"}
	if req.Model == "" {
		req.Model = DefaultSpeechModel
	}
	body, err := json.Marshal(req)
	if err != nil {
		return s.ep.Invalid("text: %v", err)
	}
	resp, err := s.ep.Post(ctx, s.url, "application/json", body)
	if err != nil {
		return err
	}
	return wire.StreamPCM(ctx, &s.ep, resp, speechRate, opts.SampleRate, out)
}
