// Package deepgram is a speech.Transcriber over Deepgram's live
// transcription websocket (/v1/listen) and a speech.Synthesizer over its
// Aura REST endpoint (/v1/speak), written against the documented wire
// protocol with coder/websocket rather than Deepgram's Go SDK (stale, and
// the protocol is only a websocket carrying binary audio and JSON).
//
// The base URL includes the API version, like https://api.deepgram.com/v1;
// a self-hosted Deepgram is http://host:8080/v1. The key is sent as
// "Authorization: Token <key>", never logged and removed from every error.
package deepgram

import (
	"encoding/json"
	"net/http"
	"strings"

	"switchboard/internal/speech/cloud/internal/wire"
	"switchboard/internal/vendorapi"
)

// Provider is the name in cloud.Error.Provider and the speech provider name.
const Provider = "deepgram"

// DefaultBaseURL is used when the constructors get "".
const DefaultBaseURL = "https://api.deepgram.com/v1"

func newEndpoint(apiKey string, hc *http.Client) vendorapi.Endpoint {
	h := http.Header{}
	if apiKey != "" {
		h.Set("Authorization", "Token "+apiKey)
	}
	return wire.Endpoint(Provider, apiKey, h, hc, parseError)
}

// errorBody is Deepgram's error body, in either of its two documented
// shapes: {"err_code", "err_msg", "request_id"} and {"category",
// "message", "details", "request_id"}.
type errorBody struct {
	ErrCode   string `json:"err_code"`
	ErrMsg    string `json:"err_msg"`
	Category  string `json:"category"`
	Message   string `json:"message"`
	Details   string `json:"details"`
	RequestID string `json:"request_id"`
}

func parseError(body []byte) (code, message string, ok bool) {
	var e errorBody
	if json.Unmarshal(body, &e) != nil {
		return "", "", false
	}
	code, message = e.ErrCode, e.ErrMsg
	if code == "" && message == "" {
		code, message = e.Category, e.Message
		if e.Details != "" {
			message = strings.TrimSuffix(message, ".") + ": " + e.Details
		}
	}
	return code, message, code != "" || message != ""
}
