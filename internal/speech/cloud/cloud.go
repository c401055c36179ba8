// Package cloud holds what the cloud speech providers share: the classified
// Error every one of them returns, so the pipeline can decide to retry, wait
// or fall back to another engine without knowing any provider's error format.
//
// The providers live in sub-packages, each a thin client over the provider's
// documented wire protocol (no SDK):
//
//   - deepgram: live transcription over a websocket (/v1/listen) and Aura
//     speech (/v1/speak);
//   - openai: transcription by upload ({base}/audio/transcriptions, also
//     served by whisper.cpp's and faster-whisper's servers) and speech
//     ({base}/audio/speech);
//   - elevenlabs: streamed speech (/v1/text-to-speech/{voice}/stream).
//
// speechtest holds fake servers that speak each protocol, and the suite every
// Synthesizer passes against its fake.
package cloud

import (
	"errors"

	"switchboard/internal/vendorapi"
)

// Error is a provider failure (vendorapi.Error, shared with the model clients).
type Error = vendorapi.Error

// Codes for failures that carry no provider code.
const (
	CodeInvalidRequest = vendorapi.CodeInvalidRequest
	CodeConfig         = vendorapi.CodeConfig
	CodeNetwork        = vendorapi.CodeNetwork
	// CodeClosed: the provider ended a live stream the client had not asked to close.
	CodeClosed      = "stream_closed"
	CodeBadResponse = vendorapi.CodeBadResponse
	CodeTooLarge    = vendorapi.CodeTooLarge
	CodeCanceled    = vendorapi.CodeCanceled
	CodeDeadline    = vendorapi.CodeDeadline
)

// IsRetryable reports whether err is an *Error that may succeed if repeated.
func IsRetryable(err error) bool { return vendorapi.IsRetryable(err) }

// RetryableStatus reports whether a request that got status may succeed later.
func RetryableStatus(status int) bool { return vendorapi.RetryableStatus(status) }

// ErrStreamClosed is returned by Write and Finish on a stream that was
// closed; Err says why when the stream ended on its own.
var ErrStreamClosed = errors.New("speech: stream closed")
