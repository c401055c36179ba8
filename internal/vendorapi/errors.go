// Package vendorapi is the HTTP scaffolding every client of a vendor's API
// shares (the model clients in internal/llm, the speech clients in
// internal/speech/cloud): one classified Error, one table from HTTP status
// to retryability, and one Endpoint that sends a request and turns every
// failure (a refused status, a broken stream, a canceled context) into that
// Error with the API key removed and Retry-After read. Each wire format
// stays in its client.
package vendorapi

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error is the failure of a vendor's API (a model, a speech engine),
// classified so the engine and the pipeline can choose their policy (retry,
// wait RetryAfter, fall back to another provider, give up) without knowing
// any provider's error format.
type Error struct {
	// Provider names the client that failed ("openai", "anthropic", "deepgram", …).
	Provider string
	// Status is the HTTP status (of the request, or of a refused websocket
	// handshake); for an error reported inside a stream, the status the
	// provider uses for that error type (Anthropic's overloaded_error is
	// 529); for a websocket the provider closed, its close code; 0 when none
	// applies (a network failure).
	Status int
	// Code is the provider's error code or type when it sent one
	// ("rate_limit_exceeded", "overloaded_error"), else one of the Code*
	// constants below.
	Code string
	// Message is the provider's explanation, with the API key removed.
	Message string
	// Retryable says the same request may succeed later: rate limits,
	// server errors, overload, network failures, cut-off streams and an
	// expired context deadline (a slow attempt); not a canceled context.
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
	// CodeInvalidRequest: the request was refused before anything was sent.
	CodeInvalidRequest = "invalid_request"
	// CodeConfig: the client is misconfigured (an unusable base URL).
	CodeConfig = "invalid_config"
	// CodeNetwork: the request or the stream failed at the transport.
	CodeNetwork = "network_error"
	// CodeBadResponse: the provider sent something that is not its wire format.
	CodeBadResponse = "bad_response"
	// CodeTooLarge: a line, an event or the whole reply exceeded its bound.
	CodeTooLarge = "response_too_large"
	// CodeCanceled: the caller's context was canceled (barge-in, hang-up);
	// never retryable.
	CodeCanceled = "canceled"
	// CodeDeadline: the caller's context deadline passed; retryable, as a
	// timed-out attempt may succeed again (the caller checks its own budget).
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
// import this one (the conversation engine) ask through one-method interfaces.
func (e *Error) Temporary() bool { return e.Retryable }

// RetryDelay reports RetryAfter.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }

// IsRetryable reports whether err is an *Error the provider may not repeat.
func IsRetryable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Retryable
}

// RetryableStatus is the one table from an HTTP status to whether the same
// request may succeed later: timeouts, rate limits and server-side failures
// (including Anthropic's 529 overloaded) are; everything else describes the
// request itself (bad body, bad key, no access, unknown model) and is not.
func RetryableStatus(status int) bool {
	switch {
	case status == 408, status == 409, status == 425, status == 429:
		return true
	case status >= 500:
		return true
	}
	return false
}
