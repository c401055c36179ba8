// Package openai is a speech.Transcriber over the OpenAI-compatible
// transcription upload ({base}/audio/transcriptions: a multipart form with a
// WAV file, answered {"text": …}), which OpenAI, whisper.cpp's server and
// faster-whisper's servers speak, and a speech.Synthesizer over
// {base}/audio/speech with response_format "pcm" (raw PCM16 mono at 24 kHz,
// streamed in the body).
//
// The base URL includes the API version, like https://api.openai.com/v1 or
// http://localhost:8000/v1. The key is sent as a bearer token only when it is
// not empty (local servers need none), never logged and removed from every
// error.
package openai

import (
	"encoding/json"
	"net/http"

	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Provider is the name in cloud.Error.Provider and the speech provider name.
const Provider = "openai"

// DefaultBaseURL is used when the constructors get "".
const DefaultBaseURL = "https://api.openai.com/v1"

func newEndpoint(apiKey string, hc *http.Client) vendorapi.Endpoint {
	h := http.Header{}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return wire.Endpoint(Provider, apiKey, h, hc, parseError)
}

// parseError reads OpenAI's {"error": {"message", "type", "code"}}, and the
// {"detail": "…"} FastAPI servers (faster-whisper's) answer with.
func parseError(body []byte) (code, message string, ok bool) {
	var e struct {
		Error  json.RawMessage `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) != nil {
		return "", "", false
	}
	var api struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(e.Error, &api) == nil && (api.Message != "" || api.Type != "") {
		var c string
		if json.Unmarshal(api.Code, &c) != nil || c == "" {
			c = api.Type
		}
		return c, api.Message, true
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil && s != "" {
		return "", s, true
	}
	if json.Unmarshal(e.Detail, &s) == nil && s != "" {
		return "", s, true
	}
	return "", "", false
}
