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
	"fmt"
	"strings"
	"time"
)

// Error is a provider failure, classified so the pipeline can choose its
// policy (retry, wait RetryAfter, fall back to another provider, give up).
type Error struct {
	// Provider names the client that failed: "deepgram", "openai" or "elevenlabs".
	Provider string
	// Status is the HTTP status (of the request, or of a refused websocket
	// handshake); for a websocket the provider closed, the close code
	// (1011); 0 when neither applies (a network failure).
	Status int
	// Code is the provider's error code when it sent one ("INVALID_AUTH",
	// "rate_limit_exceeded", a close reason such as "NET-0001"), else one
	// of the Code* constants below.
	Code string
	// Message is the provider's explanation, with the API key removed.
	Message string
	// Retryable says the same request may succeed later: rate limits,
	// server errors, network failures, a dropped socket and an expired
	// context deadline; not a bad key, a refused request or a canceled
	// context.
	Retryable bool
	// RetryAfter is how long the provider asked the client to wait; 0 when
	// it did not say.
	RetryAfter time.Duration
	// Err is the underlying cause (a network error, the context's error);
	// errors.Is(err, context.Canceled) works through it.
	Err error
}

// Codes for failures that carry no provider code.
const (
	// CodeInvalidRequest: the call was refused before anything was sent
	// (no sample rate, no voice).
	CodeInvalidRequest = "invalid_request"
	// CodeConfig: the client is misconfigured (an unusable base URL).
	CodeConfig = "invalid_config"
	// CodeNetwork: the request, the response body or the socket failed at
	// the transport.
	CodeNetwork = "network_error"
	// CodeClosed: the provider ended a live stream the client had not
	// asked to close.
	CodeClosed = "stream_closed"
	// CodeBadResponse: the provider sent something that is not its wire
	// format (JSON where audio was expected, an unknown audio encoding).
	CodeBadResponse = "bad_response"
	// CodeTooLarge: a reply exceeded its bound.
	CodeTooLarge = "response_too_large"
	// CodeCanceled: the caller's context was canceled (barge-in, hang-up);
	// never retryable.
	CodeCanceled = "canceled"
	// CodeDeadline: a deadline passed (the caller's, or a request timeout);
	// retryable, as a slow attempt may succeed again.
	CodeDeadline = "deadline_exceeded"
)

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Status != 0 {
		fmt.Fprintf(&b, "status %d ", e.Status)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, "(%s) ", e.Code)
	}
	b.WriteString(e.Message)
	if e.Err != nil && (e.Message == "" || !strings.Contains(e.Message, e.Err.Error())) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %v)", e.RetryAfter)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Temporary reports Retryable. With RetryDelay it lets packages that do not
// import cloud (the conversation engine, the pipeline) ask through
// one-method interfaces, as they do of llm.Error.
func (e *Error) Temporary() bool { return e.Retryable }

// RetryDelay reports RetryAfter.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }

// IsRetryable reports whether err is an *Error that may succeed if repeated.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// ErrStreamClosed is returned by Write and Finish on a stream that was
// closed; Err says why when the stream ended on its own.
var ErrStreamClosed = errors.New("speech: stream closed")

// RetryableStatus is the one table from an HTTP status to whether the same
// request may succeed later: timeouts, rate limits and server-side failures
// are; everything else describes the request itself (bad body, bad key, no
// access, unknown voice) and is not.
func RetryableStatus(status int) bool {
	switch {
	case status == 408, status == 409, status == 425, status == 429:
		return true
	case status >= 500:
		return true
	}
	return false
}
