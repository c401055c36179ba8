// Package wire holds what the provider clients share below their wire
// formats: posting a JSON body, turning a failed response or a broken stream
// into a classified *llm.Error, reading Retry-After, and making streamed tool
// arguments safe to hand on.
package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/llm"
)

// Bounds on what a provider can make the client hold.
const (
	// MaxErrorBody is how much of a non-2xx body is read to find the message.
	MaxErrorBody = 64 << 10
	// MaxMessage is the longest provider message kept in an *llm.Error.
	MaxMessage = 1 << 10
	// MaxOutput bounds a whole reply (text and tool arguments): far above any
	// spoken answer, low enough that a server streaming forever fails fast.
	MaxOutput = 4 << 20
	// maxRetryAfter caps a server's Retry-After so a hostile value cannot
	// park a call for days.
	maxRetryAfter = time.Hour
)

// ErrorParser extracts the provider's code and message from an error body;
// ok is false when the body is not the provider's error format.
type ErrorParser func(body []byte) (code, message string, ok bool)

// Endpoint is one provider URL and what every request to it carries.
type Endpoint struct {
	Provider string
	URL      string
	Header   http.Header
	// Secret is the API key, removed from every message the client returns.
	Secret     string
	HTTP       *http.Client
	ParseError ErrorParser
}

// Post sends body and returns the response when its status is 2xx. Any other
// status is read (bounded), closed and returned as a classified *llm.Error.
func (e *Endpoint) Post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return nil, &llm.Error{Provider: e.Provider, Code: llm.CodeConfig, Message: "cannot build request: " + e.redact(err.Error())}
	}
	for k, v := range e.Header {
		req.Header[k] = v
	}
	hc := e.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, e.Failure(ctx, llm.CodeNetwork, true, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
	return nil, e.StatusError(resp.StatusCode, resp.Header, raw, time.Now())
}

// StatusError classifies a non-2xx response.
func (e *Endpoint) StatusError(status int, h http.Header, body []byte, now time.Time) *llm.Error {
	le := &llm.Error{
		Provider:   e.Provider,
		Status:     status,
		Retryable:  llm.RetryableStatus(status),
		RetryAfter: RetryAfter(h, now),
	}
	if code, msg, ok := e.parse(body); ok {
		le.Code, le.Message = code, msg
	} else if text := strings.TrimSpace(string(body)); text != "" && utf8.ValidString(text) && !looksLikeHTML(text) {
		le.Message = text
	} else {
		le.Message = http.StatusText(status)
		if le.Message == "" {
			le.Message = fmt.Sprintf("HTTP %d", status)
		}
	}
	le.Message = e.clean(le.Message)
	return le
}

func (e *Endpoint) parse(body []byte) (string, string, bool) {
	if e.ParseError == nil || len(body) == 0 {
		return "", "", false
	}
	return e.ParseError(body)
}

// StreamError classifies an error the provider reported inside a stream.
func (e *Endpoint) StreamError(status int, code, message string) *llm.Error {
	return &llm.Error{
		Provider:  e.Provider,
		Status:    status,
		Code:      code,
		Message:   e.clean(message),
		Retryable: status == 0 || llm.RetryableStatus(status),
	}
}

// Failure classifies a failure that has no HTTP status. The context's own
// error wins, so a canceled call never reads as a network failure. An
// expired deadline is retryable (an attempt was too slow; whoever set the
// deadline knows whether there is time for another), a cancellation is not.
func (e *Endpoint) Failure(ctx context.Context, code string, retryable bool, cause error) *llm.Error {
	if err := ctx.Err(); err != nil {
		le := &llm.Error{Provider: e.Provider, Code: llm.CodeCanceled, Message: "request canceled", Err: err}
		if errors.Is(err, context.DeadlineExceeded) {
			le.Code, le.Message, le.Retryable = llm.CodeDeadline, "deadline exceeded", true
		}
		return le
	}
	le := &llm.Error{Provider: e.Provider, Code: code, Retryable: retryable, Err: cause}
	if cause != nil {
		le.Message = e.clean(cause.Error())
		le.Err = redactedError{msg: le.Message, err: cause}
	}
	return le
}

// Invalid wraps a Request.Validate failure.
func (e *Endpoint) Invalid(err error) *llm.Error {
	return &llm.Error{Provider: e.Provider, Code: llm.CodeInvalidRequest, Message: strings.ReplaceAll(err.Error(), "\n", "; ")}
}

// clean removes the API key and bounds the length of a message.
func (e *Endpoint) clean(msg string) string {
	msg = e.redact(msg)
	if len(msg) > MaxMessage {
		cut := MaxMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

func (e *Endpoint) redact(s string) string {
	if e.Secret == "" {
		return s
	}
	return strings.ReplaceAll(s, e.Secret, "[redacted]")
}

// redactedError keeps a cause reachable through errors.Is/As while its text
// is the redacted one.
type redactedError struct {
	msg string
	err error
}

func (r redactedError) Error() string { return r.msg }
func (r redactedError) Unwrap() error { return r.err }

func looksLikeHTML(s string) bool {
	return strings.HasPrefix(s, "<")
}

// RetryAfter reads how long the server asked the client to wait: OpenAI's
// retry-after-ms when present, else Retry-After as seconds or an HTTP date.
// It returns 0 when the server did not say, capped at one hour.
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

// IsJSON reports whether the response is a JSON document rather than an
// event stream: a server that ignored "stream": true.
func IsJSON(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// Arguments turns streamed tool-call arguments into the valid JSON
// llm.ToolCall promises: "{}" for none, the compacted JSON when it parses,
// and otherwise the raw text as a JSON string.
func Arguments(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.Bytes()
	}
	quoted, _ := json.Marshal(string(raw))
	return quoted
}

// ObjectOrEmpty returns args when it is a JSON object and "{}" otherwise:
// Anthropic refuses a tool_use whose input is not an object.
func ObjectOrEmpty(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}

// Budget counts reply bytes against MaxOutput.
type Budget struct{ used int }

// Spend adds n bytes and fails once the reply is over the bound.
func (b *Budget) Spend(n int) error {
	b.used += n
	if b.used > MaxOutput {
		return fmt.Errorf("reply exceeds %d bytes", MaxOutput)
	}
	return nil
}
