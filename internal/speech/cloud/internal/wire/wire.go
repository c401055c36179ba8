// Package wire holds what the cloud speech clients share below their
// protocols: sending a request, turning a failed response, a refused
// handshake or a broken stream into a classified *cloud.Error with the API
// key removed, reading Retry-After, and streaming a PCM reply to the caller
// at the rate it asked for.
package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/speech/cloud"
)

// Bounds on what a provider can make the client hold.
const (
	// MaxErrorBody is how much of a non-2xx body is read to find the message.
	MaxErrorBody = 64 << 10
	// MaxMessage is the longest provider message kept in a *cloud.Error.
	MaxMessage = 1 << 10
	// maxRetryAfter caps a server's Retry-After so a hostile value cannot
	// park a call for days.
	maxRetryAfter = time.Hour
)

// ErrorParser extracts the provider's code and message from an error body;
// ok is false when the body is not the provider's error format.
type ErrorParser func(body []byte) (code, message string, ok bool)

// Endpoint is one provider and what every request to it carries.
type Endpoint struct {
	Provider string
	// Header is sent with every request (the key, the content type).
	Header http.Header
	// Secret is the API key, removed from every message the client returns.
	Secret     string
	HTTP       *http.Client
	ParseError ErrorParser
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
// *cloud.Error; a transport failure is a retryable network error.
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
		return nil, e.Failure(ctx, cloud.CodeNetwork, true, err)
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
func (e *Endpoint) StatusError(status int, h http.Header, body []byte, now time.Time) *cloud.Error {
	ce := &cloud.Error{
		Provider:   e.Provider,
		Status:     status,
		Retryable:  cloud.RetryableStatus(status),
		RetryAfter: RetryAfter(h, now),
	}
	if code, msg, ok := e.parse(body); ok {
		ce.Code, ce.Message = code, msg
	} else if text := strings.TrimSpace(string(body)); text != "" && utf8.ValidString(text) && !strings.HasPrefix(text, "<") {
		ce.Message = text
	} else {
		ce.Message = http.StatusText(status)
		if ce.Message == "" {
			ce.Message = fmt.Sprintf("HTTP %d", status)
		}
	}
	ce.Message = e.Clean(ce.Message)
	return ce
}

func (e *Endpoint) parse(body []byte) (string, string, bool) {
	if e.ParseError == nil || len(body) == 0 {
		return "", "", false
	}
	code, msg, ok := e.ParseError(body)
	return code, msg, ok && (code != "" || msg != "")
}

// Failure classifies a failure that has no HTTP status. The context's own
// error wins, so a canceled call never reads as a network failure. An
// expired deadline is retryable (an attempt was too slow; whoever set the
// deadline knows whether there is time for another), a cancellation is not.
func (e *Endpoint) Failure(ctx context.Context, code string, retryable bool, cause error) *cloud.Error {
	if err := ctx.Err(); err != nil {
		return CtxError(e.Provider, err)
	}
	return e.Wrap(code, retryable, cause)
}

// Wrap classifies cause as code, keeping it reachable through errors.Is
// with the key removed from its text.
func (e *Endpoint) Wrap(code string, retryable bool, cause error) *cloud.Error {
	ce := &cloud.Error{Provider: e.Provider, Code: code, Retryable: retryable}
	if cause != nil {
		if errors.Is(cause, context.DeadlineExceeded) {
			ce.Code, ce.Retryable = cloud.CodeDeadline, true
		}
		ce.Message = e.Clean(cause.Error())
		ce.Err = redactedError{msg: ce.Message, err: cause}
	}
	return ce
}

// CtxError is the error for a context that ended: canceled (not
// retryable) or past its deadline (retryable).
func CtxError(provider string, err error) *cloud.Error {
	ce := &cloud.Error{Provider: provider, Code: cloud.CodeCanceled, Message: "canceled", Err: err}
	if errors.Is(err, context.DeadlineExceeded) {
		ce.Code, ce.Message, ce.Retryable = cloud.CodeDeadline, "deadline exceeded", true
	}
	return ce
}

// Invalid is a request refused before anything was sent; the message names
// the field.
func (e *Endpoint) Invalid(format string, args ...any) *cloud.Error {
	return &cloud.Error{Provider: e.Provider, Code: cloud.CodeInvalidRequest, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// Config is a misconfigured client (an unusable base URL).
func (e *Endpoint) Config(format string, args ...any) *cloud.Error {
	return &cloud.Error{Provider: e.Provider, Code: cloud.CodeConfig, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// BadResponse is a reply that is not the provider's wire format.
func (e *Endpoint) BadResponse(format string, args ...any) *cloud.Error {
	return &cloud.Error{Provider: e.Provider, Code: cloud.CodeBadResponse, Message: e.Clean(fmt.Sprintf(format, args...))}
}

// Clean removes the API key and bounds the length of a message.
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

// BaseURL checks a configured base URL: empty means def; the scheme must be
// http or https (ws and wss read as them); a trailing slash is dropped.
func BaseURL(raw, def string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		raw = def
	}
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil {
		return "", fmt.Errorf("base URL %q: %v", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return "", fmt.Errorf("base URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q: no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: must not have a query or fragment", raw)
	}
	return u.String(), nil
}
