package deepgram

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// DefaultVoice is the Aura model used when VoiceOptions.Voice is empty.
const DefaultVoice = "aura-2-thalia-en"

// speakRates are the rates Aura produces linear16 at; any other rate is
// asked at 24 kHz (Aura's default) and resampled.
var speakRates = []int{8000, 16000, 24000, 32000, 48000}

// Synthesizer speaks through Deepgram Aura's REST endpoint, streaming the
// raw PCM as it arrives.
type Synthesizer struct {
	// Voice is used when VoiceOptions.Voice is empty ("" = DefaultVoice).
	// On Aura the voice is the model ("aura-2-thalia-en").
	Voice string

	base   string
	config error
	ep     vendorapi.Endpoint
}

var _ speech.Synthesizer = (*Synthesizer)(nil)

// NewSynthesizer returns a Synthesizer for baseURL ("" = DefaultBaseURL).
// hc nil means http.DefaultClient; give it no Timeout (a long reply streams
// for a while): deadlines come from ctx.
func NewSynthesizer(baseURL, apiKey string, hc *http.Client) *Synthesizer {
	s := &Synthesizer{ep: newEndpoint(apiKey, hc)}
	s.base, s.config = wire.BaseURL(baseURL, DefaultBaseURL)
	return s
}

// Name implements speech.Synthesizer.
func (s *Synthesizer) Name() string { return Provider }

// Synthesize implements speech.Synthesizer: POST /v1/speak with
// encoding=linear16 and container=none, the body streamed to out as it
// arrives. Text that is only white space speaks nothing and sends nothing.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func(pcm []int16) error) error {
	rate, voice, skip, err := wire.Speak(&s.ep, s.config, text, opts, speakRates, 24000, s.Voice, DefaultVoice)
	if skip || err != nil {
		return err
	}
	q := url.Values{}
	q.Set("model", voice)
	q.Set("encoding", "linear16")
	q.Set("sample_rate", strconv.Itoa(rate))
	q.Set("container", "none")
	body, err := json.Marshal(struct {
		Text string `json:"text"`
	}{text})
	if err != nil {
		return s.ep.Invalid("text: %v", err)
	}
	resp, err := s.ep.Post(ctx, s.base+"/speak?"+q.Encode(), "application/json", body)
	if err != nil {
		return err
	}
	return wire.StreamPCM(ctx, &s.ep, resp, rate, opts.SampleRate, out)
}
