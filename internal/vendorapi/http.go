package vendorapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds on what a provider can make a client hold.
const (
	// MaxErrorBody is how much of a non-2xx body is read to find the message.
	MaxErrorBody = 64 << 10
	// MaxMessage is the longest provider message kept in an *Error.
	MaxMessage = 1 << 10
	// maxRetryAfter caps a server's Retry-After so a hostile value cannot
	// park a call for days.
	maxRetryAfter = time.Hour
)

// ErrorParser extracts the provider's code and message from an error body;
// ok is false when the body is not the provider's error format.
type ErrorParser func(body []byte) (code, message string, ok bool)

// Endpoint is one provider and what every request to it carries. It is
// where every failure of a client becomes a classified *Error with the API
// key removed, so no client formats an error of its own from a provider's
// text.
type Endpoint struct {
	// Provider names the client in every Error.
	Provider string
	// Header is sent with every request (the key, what the client accepts).
	Header http.Header
	// Secret is the API key, removed from every message the client returns.
	Secret string
	// HTTP is the client to send with; nil means http.DefaultClient.
	HTTP       *http.Client
	ParseError ErrorParser

	// CanceledMessage is the Message of the error for a canceled context;
	// "canceled" when empty. (The model clients have always said "request
	// canceled", the speech clients "canceled"; the field keeps both
	// wordings as they were.)
	CanceledMessage string
	// DeadlineCause classifies a cause that is context.DeadlineExceeded
	// while the caller's context is still live (an http.Client Timeout, a
	// per-write deadline) as a retryable CodeDeadline, as the speech
	// clients do. Without it such a cause keeps the code it was given, as
	// the model clients do (a timed-out request is a retryable
	// CodeNetwork).
	DeadlineCause bool
}

// Client is the HTTP client to use: HTTP, or http.DefaultClient.
func (e *Endpoint) Client() *http.Client {
	if e.HTTP == nil {
		return http.DefaultClient
	}
	return e.HTTP
}

// Post sends body to url and returns the response when its status is 2xx.
// Any other status is read (bounded), closed and returned as a classified
// *Error; a transport failure is a retryable network error.
func (e *Endpoint) Post(ctx context.Context, url, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, e.Config("cannot build request: %v", err)
	}
	for k, v := range e.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := e.Client().Do(req)
	if err != nil {
		return nil, e.Failure(ctx, CodeNetwork, true, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	return nil, e.StatusError(resp.StatusCode, resp.Header, raw, time.Now())
}

// StatusError classifies a non-2xx response (or a refused websocket
// handshake): retryable by RetryableStatus, the provider's code and
// message when the body is its error format, else the body's text, else
// the status text.
func (e *Endpoint) StatusError(status int, h http.Header, body []byte, now time.Time) *Error {
	pe := &Error{
		Provider:   e.Provider,
		Status:     status,
		Retryable:  RetryableStatus(status),
		RetryAfter: RetryAfter(h, now),
	}
	if code, msg, ok := e.Parse(body); ok {
		pe.Code, pe.Message = code, msg
	} else if text := strings.TrimSpace(string(body)); text != "" && utf8.ValidString(text) && !strings.HasPrefix(text, "<") {
		pe.Message = text
	} else {
		pe.Message = http.StatusText(status)
		if pe.Message == "" {
			pe.Message = fmt.Sprintf("HTTP %d", status)
		}
	}
	pe.Message = e.Clean(pe.Message)
	return pe
}

// Parse reads body with ParseError: ok only when the body is the
// provider's error format and says something (a code or a message).
func (e *Endpoint) Parse(body []byte) (code, message string, ok bool) {
	if e.ParseError == nil || len(body) == 0 {
		return "", "", false
	}
	code, message, ok = e.ParseError(body)
	return code, message, ok && (code != "" || message != "")
}

// StreamError classifies an error the provider reported inside a stream
// (after a 200): status is the one the provider uses for that error, 0
// when it has none, which reads as retryable since the stream broke on
// the server's side.
func (e *Endpoint) StreamError(status int, code, message string) *Error {
	return &Error{
		Provider:  e.Provider,
		Status:    status,
		Code:      code,
		Message:   e.Clean(message),
		Retryable: status == 0 || RetryableStatus(status),
	}
}

// Failure classifies a failure that has no HTTP status. The context's own
// error wins, so a canceled call never reads as a network failure. An
// expired deadline is retryable (an attempt was too slow; whoever set the
// deadline knows whether there is time for another), a cancellation is not.
func (e *Endpoint) Failure(ctx context.Context, code string, retryable bool, cause error) *Error {
	if err := ctx.Err(); err != nil {
		return e.CtxError(err)
	}
	return e.Wrap(code, retryable, cause)
}

// Wrap classifies cause as code, keeping it reachable through errors.Is
// with the key removed from its text.
func (e *Endpoint) Wrap(code string, retryable bool, cause error) *Error {
	pe := &Error{Provider: e.Provider, Code: code, Retryable: retryable}
	if cause != nil {
		if e.DeadlineCause && errors.Is(cause, context.DeadlineExceeded) {
			pe.Code, pe.Retryable = CodeDeadline, true
		}
		pe.Message = e.Clean(cause.Error())
		pe.Err = redactedError{msg: pe.Message, err: cause}
	}
	return pe
}

// CtxError is the error for a context that ended: canceled (not
// retryable) or past its deadline (retryable).
func (e *Endpoint) CtxError(err error) *Error {
	msg := e.CanceledMessage
	if msg == "" {
		msg = "canceled"
	}
	pe := &Error{Provider: e.Provider, Code: CodeCanceled, Message: msg, Err: err}
	if errors.Is(err, context.DeadlineExceeded) {
		pe.Code, pe.Message, pe.Retryable = CodeDeadline, "deadline exceeded", true
	}
	return pe
}

// Invalid is a request refused before anything was sent; the message names
// the field.
func (e *Endpoint) Invalid(format string, args ...any) *Error {
	return &Error{Provider: e.Provider, Code: CodeInvalidRequest, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// Config is a misconfigured client (an unusable base URL).
func (e *Endpoint) Config(format string, args ...any) *Error {
	return &Error{Provider: e.Provider, Code: CodeConfig, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// BadResponse is a reply that is not the provider's wire format.
func (e *Endpoint) BadResponse(format string, args ...any) *Error {
	return &Error{Provider: e.Provider, Code: CodeBadResponse, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// Clean removes the API key and bounds the length of a message, cutting on
// a rune boundary and marking the cut with "…".
func (e *Endpoint) Clean(msg string) string {
	if e.Secret != "" {
		msg = strings.ReplaceAll(msg, e.Secret, "[redacted]")
	}
	if len(msg) > MaxMessage {
		cut := MaxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// redactedError keeps a cause reachable through errors.Is/As while its text
// is the redacted one.
type redactedError struct {
	msg string
	err error
}

func (r redactedError) Error() string { return r.msg }
func (r redactedError) Unwrap() error { return r.err }

// RetryAfter reads how long the server asked the client to wait:
// retry-after-ms when present (OpenAI), else Retry-After as seconds or an
// HTTP date. It returns 0 when the server did not say, capped at one hour.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	var d time.Duration
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			d = time.Duration(min(ms, float64(maxRetryAfter/time.Millisecond)) * float64(time.Millisecond))
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); d == 0 && v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			if s > 0 {
				d = time.Duration(min(s, maxRetryAfter.Seconds()) * float64(time.Second))
			}
		} else if t, err := http.ParseTime(v); err == nil {
			d = t.Sub(now)
		}
	}
	return max(0, min(d, maxRetryAfter))
}
