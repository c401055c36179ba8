// Package llmtest provides fake OpenAI and Anthropic servers that speak the
// streaming wire formats as the real APIs do (event names, chunk shapes,
// tool arguments in several pieces, error bodies, Retry-After), so clients
// and the conversation engine above them are tested over real HTTP without
// reaching a provider. Each fake checks what it receives like the real API
// would, and fails the test on a malformed request.
//
// Exercise is the behavioural suite every llm.Client passes against its fake.
package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"switchboard/internal/llm"
	"switchboard/internal/vendorapi/vendorapitest"
)

// APIKey is the key both fakes accept. Any other key gets the provider's 401,
// as from the real API, without consuming a turn.
const APIKey = "sk-llmtest-4f3e2d1c0b0a9f8e7d6c"

// Turn scripts the server's answer to one request. A turn streams its Text,
// then its ToolCalls, then the stop reason; the fields below change that.
type Turn struct {
	// Text is sent as one chunk (one text_delta) per element.
	Text []string
	// ToolCalls are sent after the text, each call's arguments in pieces of
	// a few bytes as the real APIs stream them. An empty ID is filled in
	// ("call_…" or "toolu_…").
	ToolCalls []llm.ToolCall
	// Status, when set, answers with that HTTP status and the provider's
	// error body instead of a stream.
	Status int
	// RetryAfter is sent verbatim as the Retry-After header of a Status answer.
	RetryAfter string
	// MidStreamError sends the provider's in-stream error after half of Text
	// and ends the stream there.
	MidStreamError bool
	// Delay is waited before the first byte of the answer.
	Delay time.Duration
	// Interval is waited between events, to let a test act mid-stream.
	Interval time.Duration
	// Truncate ends the stream after the content without its final events
	// (finish reason, "data: [DONE]" / message_delta, message_stop), the way
	// a dropped connection looks.
	Truncate bool
	// Hang keeps the stream open after the content until the client goes
	// away or the server closes: the case for cancellation.
	Hang bool
	// MaxTokens ends the turn as cut off by the token limit
	// (finish_reason "length", stop_reason "max_tokens").
	MaxTokens bool
	// InputTokens and OutputTokens are the usage reported; when zero the
	// fake estimates them (a token per four request bytes, one per piece sent).
	InputTokens, OutputTokens int
}

// Server is a fake provider over a real HTTP server on loopback.
type Server struct {
	// URL is the base URL to give the matching client's New.
	URL string

	t    testing.TB
	fake *vendorapitest.Server

	mu       sync.Mutex
	script   []Turn
	next     int
	requests []json.RawMessage
	// aside is the second script (Aside): the requests it matches.
	aside struct {
		match    func(body []byte) bool
		script   []Turn
		next     int
		requests []json.RawMessage
	}
}

// Aside serves the requests match picks from a script of their own and
// records them apart (AsideRequests), so that a second kind of request
// arriving in any order beside the first (a call's analysis while the
// next call converses) does not take the first kind's turns. A picked
// request beyond script is answered 503, as a provider with no capacity
// would, and fails the test.
func (s *Server) Aside(match func(body []byte) bool, script ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aside.match, s.aside.script = match, script
}

// Offers matches the requests that offer the model a tool named name.
func Offers(name string) func(body []byte) bool {
	var probe struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	return func(body []byte) bool {
		p := probe
		if json.Unmarshal(body, &p) != nil {
			return false
		}
		for _, t := range p.Tools {
			if t.Name == name || t.Function.Name == name {
				return true
			}
		}
		return false
	}
}

// AsideRequests returns the bodies the Aside script answered, in order.
func (s *Server) AsideRequests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.aside.requests...)
}

// maxRequestBody bounds what a fake reads from a client.
const maxRequestBody = 8 << 20

func newServer(t testing.TB, script []Turn, handler func(s *Server) http.Handler) *Server {
	t.Helper()
	s := &Server{t: t, script: script}
	s.fake = vendorapitest.NewServer(t, handler(s))
	s.URL = s.fake.URL
	return s
}

// Requests returns the bodies received so far, in order, including those
// the fake refused: what a test asserts the client sent.
func (s *Server) Requests() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]json.RawMessage(nil), s.requests...)
}

// Close ends every stream still open (Hang, Delay) and shuts the server
// down. It is safe to call twice; tests need not call it at all.
func (s *Server) Close() { s.fake.Close() }

// receive reads and records the body. It returns the request's number
// (1-based) for messages.
func (s *Server) receive(r *http.Request) (int, []byte, error) {
	body, err := vendorapitest.ReadBody(r, maxRequestBody)
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := json.RawMessage(body)
	if !json.Valid(body) {
		rec, _ = json.Marshal(string(body)) // keep Requests() valid JSON
	}
	if s.aside.match != nil && s.aside.match(body) {
		s.aside.requests = append(s.aside.requests, rec)
		return len(s.aside.requests), body, err
	}
	s.requests = append(s.requests, rec)
	return len(s.requests), body, err
}

// take consumes the next turn of the script body's request is for (the
// main one, or Aside's).
func (s *Server) take(body []byte) (Turn, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aside.match != nil && s.aside.match(body) {
		if s.aside.next >= len(s.aside.script) {
			return Turn{}, false
		}
		s.aside.next++
		return s.aside.script[s.aside.next-1], true
	}
	if s.next >= len(s.script) {
		return Turn{}, false
	}
	s.next++
	return s.script[s.next-1], true
}

// eventWriter writes server-sent events, flushing each one, waiting the
// turn's Interval between them.
type eventWriter struct {
	s        *Server
	w        http.ResponseWriter
	rc       *http.ResponseController
	interval time.Duration
	sent     int
}

func (s *Server) startStream(w http.ResponseWriter, turn Turn) *eventWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &eventWriter{s: s, w: w, rc: http.NewResponseController(w), interval: turn.Interval}
}

// event writes one event; name "" writes a bare data line (OpenAI). It
// returns false once the client is gone (ctx is the request's).
func (ew *eventWriter) event(ctx context.Context, name string, data any) bool {
	raw, ok := data.(string)
	if !ok {
		b, err := json.Marshal(data)
		if err != nil {
			ew.s.t.Errorf("llmtest: encoding an event: %v", err)
			return false
		}
		raw = string(b)
	}
	if ew.sent > 0 && !ew.s.fake.Wait(ctx, ew.interval) {
		return false
	}
	ew.sent++
	var buf bytes.Buffer
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", raw)
	if _, err := ew.w.Write(buf.Bytes()); err != nil {
		return false
	}
	return ew.rc.Flush() == nil
}

// pieces splits s into chunks of about n bytes on rune boundaries, the way
// the APIs stream tool arguments a few tokens at a time.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// argPiece is the size of the argument pieces the fakes send.
const argPiece = 6

// compactArgs is a call's arguments as the model would write them: compact
// JSON, "{}" when there are none.
func compactArgs(args json.RawMessage) string {
	var buf bytes.Buffer
	if len(args) == 0 || json.Compact(&buf, args) != nil {
		return "{}"
	}
	return buf.String()
}

// usageFor fills in the turn's token counts.
func usageFor(turn Turn, body []byte, pieces int) (in, out int) {
	in, out = turn.InputTokens, turn.OutputTokens
	if in == 0 {
		in = (len(body) + 3) / 4
	}
	if out == 0 {
		out = max(1, pieces)
	}
	return in, out
}

// midpoint is how many text chunks are sent before a MidStreamError.
func midpoint(turn Turn) int { return (len(turn.Text) + 1) / 2 }

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && m != nil
}

// validToolName is the rule both APIs enforce on tool names.
func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
