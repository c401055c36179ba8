// Package elevenlabs is a speech.Synthesizer over ElevenLabs' streaming
// text-to-speech endpoint, POST {base}/text-to-speech/{voice_id}/stream
// with output_format=pcm_<rate>: raw PCM16 mono streamed in the body as it
// is produced.
//
// The base URL includes the API version, like https://api.elevenlabs.io/v1.
// The key is sent in the xi-api-key header, never logged and removed from
// every error.
package elevenlabs

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Provider is the name in cloud.Error.Provider and the speech provider name.
const Provider = "elevenlabs"

// Defaults of the Synthesizer.
const (
	// DefaultBaseURL is used when NewSynthesizer gets "".
	DefaultBaseURL = "https://api.elevenlabs.io/v1"
	// DefaultModel is ElevenLabs' low-latency model.
	DefaultModel = "eleven_flash_v2_5"
	// DefaultVoice ("Rachel") is a premade voice every account has.
	DefaultVoice = "21m00Tcm4TlvDq8ikWAM"
)

// pcmRates are the output_format=pcm_<rate> values every plan gets
// (pcm_44100 needs a Pro plan, so 44.1 and 48 kHz are asked at 24 kHz and
// resampled, as is any rate not listed).
var pcmRates = []int{8000, 16000, 22050, 24000}

// Synthesizer speaks through ElevenLabs, streaming the PCM as it arrives.
type Synthesizer struct {
	// Model ("" = DefaultModel) and Voice ("" = DefaultVoice, when the
	// options name none) configure every request.
	Model string
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
	h := http.Header{}
	if apiKey != "" {
		h.Set("xi-api-key", apiKey)
	}
	s := &Synthesizer{ep: wire.Endpoint(Provider, apiKey, h, hc, parseError)}
	s.base, s.config = wire.BaseURL(baseURL, DefaultBaseURL)
	return s
}

// Name implements speech.Synthesizer.
func (s *Synthesizer) Name() string { return Provider }

// Synthesize implements speech.Synthesizer. Text that is only white space
// speaks nothing and sends nothing.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func(pcm []int16) error) error {
	rate, voice, skip, err := wire.Speak(&s.ep, s.config, text, opts, pcmRates, 24000, s.Voice, DefaultVoice)
	if skip || err != nil {
		return err
	}
	model := s.Model
	if model == "" {
		model = DefaultModel
	}
	body, err := json.Marshal(struct {
		Text    string `json:"text"`
		ModelID string `json:"model_id"`
	}{text, model})
	if err != nil {
		return s.ep.Invalid("text: %v", err)
	}
	u := s.base + "/text-to-speech/" + url.PathEscape(voice) + "/stream?output_format=pcm_" + strconv.Itoa(rate)
	resp, err := s.ep.Post(ctx, u, "application/json", body)
	if err != nil {
		return err
	}
	return wire.StreamPCM(ctx, &s.ep, resp, rate, opts.SampleRate, out)
}

// parseError reads ElevenLabs' {"detail": …}: an object with a status (or
// code) and a message, a validation list [{"msg"}], or a bare string.
func parseError(body []byte) (code, message string, ok bool) {
	var e struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Detail) == 0 {
		return "", "", false
	}
	var obj struct {
		Status  string `json:"status"`
		Code    string `json:"code"`
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Detail, &obj) == nil {
		code = obj.Status
		if code == "" {
			code = obj.Code
		}
		if code == "" {
			code = obj.Type
		}
		return code, obj.Message, code != "" || obj.Message != ""
	}
	var list []struct {
		Msg  string `json:"msg"`
		Type string `json:"type"`
	}
	if json.Unmarshal(e.Detail, &list) == nil && len(list) > 0 {
		var msgs []string
		for _, l := range list {
			if l.Msg != "" {
				msgs = append(msgs, l.Msg)
			}
		}
		code, message = list[0].Type, strings.Join(msgs, "; ")
		return code, message, code != "" || message != ""
	}
	var s string
	if json.Unmarshal(e.Detail, &s) == nil && s != "" {
		return "", s, true
	}
	return "", "", false
}
