package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/vendorapi/vendorapitest"
)

// AnthropicVersion is the anthropic-version header the fake requires.
const AnthropicVersion = "2023-06-01"

// NewAnthropic starts a fake Anthropic Messages API server; its URL is the
// API root, like https://api.anthropic.com. Each request consumes the next
// turn of script; a request past the end of the script fails the test.
func NewAnthropic(t testing.TB, script ...Turn) *Server {
	t.Helper()
	return newServer(t, script, func(s *Server) http.Handler { return &anthropicFake{s: s} })
}

type anthropicFake struct{ s *Server }

func (f *anthropicFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := f.s
	n, body, err := s.receive(r)
	if err != nil {
		s.t.Errorf("llmtest: anthropic request %d: reading body: %v", n, err)
		anthropicError(w, n, http.StatusBadRequest, "")
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		s.t.Errorf("llmtest: anthropic request %d: %s %s, want POST /v1/messages", n, r.Method, r.URL.Path)
		anthropicError(w, n, http.StatusNotFound, "")
		return
	}
	if r.Header.Get("X-Api-Key") != APIKey {
		anthropicError(w, n, http.StatusUnauthorized, "invalid x-api-key")
		return
	}
	req, probs := checkAnthropic(r, body)
	if len(probs) > 0 {
		s.t.Errorf("llmtest: anthropic request %d is malformed:\n  %s", n, strings.Join(probs, "\n  "))
		anthropicError(w, n, http.StatusBadRequest, "")
		return
	}
	turn, ok := s.take(body)
	if !ok {
		s.t.Errorf("llmtest: anthropic request %d: the script has no turn left", n)
		anthropicError(w, n, http.StatusInternalServerError, "")
		return
	}
	if !s.fake.Wait(r.Context(), turn.Delay) {
		return
	}
	if turn.Status != 0 {
		if turn.RetryAfter != "" {
			w.Header().Set("Retry-After", turn.RetryAfter)
		}
		anthropicError(w, n, turn.Status, "")
		return
	}
	f.stream(w, r, n, turn, req, body)
}

// stream writes the turn as the Messages API does: message_start, a text
// block (start, ping, text_delta per piece, stop), one tool_use block per
// call (start with empty input, input_json_delta pieces beginning with an
// empty one, stop), message_delta with the stop reason and usage, and
// message_stop.
func (f *anthropicFake) stream(w http.ResponseWriter, r *http.Request, n int, turn Turn, req *anRequest, body []byte) {
	w.Header().Set("Request-Id", fmt.Sprintf("req_llmtest%d", n))
	ctx := r.Context()
	ew := f.s.startStream(w, turn)
	sent := 0
	in, _ := usageFor(turn, body, 0)
	msg := anMessageOut{
		ID: fmt.Sprintf("msg_llmtest%d", n), Type: "message", Role: "assistant", Model: req.Model,
		Content: []struct{}{}, Usage: anUsageOut{InputTokens: &in, CacheCreationInputTokens: new(int), CacheReadInputTokens: new(int), OutputTokens: 1},
	}
	if !ew.event(ctx, "message_start", anEvent{Type: "message_start", Message: &msg}) {
		return
	}
	index := 0
	if len(turn.Text) > 0 || turn.MidStreamError {
		if !ew.event(ctx, "content_block_start", anEvent{Type: "content_block_start", Index: &index, ContentBlock: anTextBlock{Type: "text"}}) {
			return
		}
		if !ew.event(ctx, "ping", `{"type": "ping"}`) {
			return
		}
		for i, text := range turn.Text {
			if turn.MidStreamError && i == midpoint(turn) {
				break
			}
			if !ew.event(ctx, "content_block_delta", anEvent{Type: "content_block_delta", Index: &index, Delta: anTextBlock{Type: "text_delta", Text: text}}) {
				return
			}
			sent++
		}
		if turn.MidStreamError {
			ew.event(ctx, "error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
			return
		}
		if !ew.event(ctx, "content_block_stop", anEvent{Type: "content_block_stop", Index: &index}) {
			return
		}
		index++
	}
	for i, tc := range turn.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("toolu_llmtest%d_%d", n, i)
		}
		start := anToolUseBlock{Type: "tool_use", ID: id, Name: tc.Name, Input: json.RawMessage("{}")}
		if !ew.event(ctx, "content_block_start", anEvent{Type: "content_block_start", Index: &index, ContentBlock: start}) {
			return
		}
		for _, p := range append([]string{""}, pieces(compactArgs(tc.Arguments), argPiece)...) {
			if !ew.event(ctx, "content_block_delta", anEvent{Type: "content_block_delta", Index: &index, Delta: anJSONDelta{Type: "input_json_delta", PartialJSON: p}}) {
				return
			}
			sent++
		}
		if !ew.event(ctx, "content_block_stop", anEvent{Type: "content_block_stop", Index: &index}) {
			return
		}
		index++
	}
	if turn.Hang {
		f.s.fake.Hang(r.Context())
		return
	}
	if turn.Truncate {
		return
	}
	stop := "end_turn"
	switch {
	case turn.MaxTokens:
		stop = "max_tokens"
	case len(turn.ToolCalls) > 0:
		stop = "tool_use"
	}
	_, out := usageFor(turn, body, sent)
	if !ew.event(ctx, "message_delta", anEvent{Type: "message_delta", Delta: anStop{StopReason: stop}, Usage: &anUsageOut{OutputTokens: out}}) {
		return
	}
	ew.event(ctx, "message_stop", `{"type":"message_stop"}`)
}

// anEvent is one event of the stream, in the API's key order ("type" first).
type anEvent struct {
	Type         string        `json:"type"`
	Message      *anMessageOut `json:"message,omitempty"`
	Index        *int          `json:"index,omitempty"`
	ContentBlock any           `json:"content_block,omitempty"`
	Delta        any           `json:"delta,omitempty"`
	Usage        *anUsageOut   `json:"usage,omitempty"`
}

type anMessageOut struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []struct{} `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        anUsageOut `json:"usage"`
}

type anUsageOut struct {
	InputTokens              *int `json:"input_tokens,omitempty"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens,omitempty"`
	OutputTokens             int  `json:"output_tokens"`
}

type anTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anToolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anStop struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

// anthropicErrors is the error type and message for each status.
var anthropicErrors = map[int]struct{ typ, msg string }{
	400: {"invalid_request_error", "Invalid request: see the test log for what the fake refused."},
	401: {"authentication_error", "invalid x-api-key"},
	403: {"permission_error", "Your API key does not have permission to use the specified resource."},
	404: {"not_found_error", "The requested resource could not be found."},
	413: {"request_too_large", "Request exceeds the maximum allowed number of bytes."},
	429: {"rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."},
	500: {"api_error", "Internal server error"},
	529: {"overloaded_error", "Overloaded"},
}

func anthropicError(w http.ResponseWriter, n, status int, msg string) {
	e, ok := anthropicErrors[status]
	if !ok {
		e.typ, e.msg = "invalid_request_error", http.StatusText(status)
		if status >= 500 {
			e.typ = "api_error"
		}
	}
	if msg != "" {
		e.msg = msg
	}
	id := fmt.Sprintf("req_llmtest%d", n)
	w.Header().Set("Request-Id", id)
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	vendorapitest.WriteJSON(w, status, struct {
		Type      string `json:"type"`
		Error     detail `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", detail{e.typ, e.msg}, id})
}

// anRequest is the part of the Messages request the fake accepts; unknown
// fields are refused, as the API refuses extra inputs.
type anRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	Messages      []anMessage     `json:"messages"`
	System        json.RawMessage `json:"system"`
	Tools         []anTool        `json:"tools"`
	ToolChoice    json.RawMessage `json:"tool_choice"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        *bool           `json:"stream"`
	Metadata      json.RawMessage `json:"metadata"`
	Thinking      json.RawMessage `json:"thinking"`
	ServiceTier   string          `json:"service_tier"`
}

type anMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      *bool           `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
	Citations    json.RawMessage `json:"citations"`
}

type anTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// checkAnthropic validates a request as the API would and lists what is wrong.
func checkAnthropic(r *http.Request, body []byte) (*anRequest, vendorapitest.Problems) {
	var p vendorapitest.Problems
	if v := r.Header.Get("Anthropic-Version"); v != AnthropicVersion {
		p.Add("anthropic-version header is %q, want %q", v, AnthropicVersion)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p.Add("Content-Type is %q, want application/json", ct)
	}
	var req anRequest
	if err := vendorapitest.StrictDecode(body, &req); err != nil {
		p.Add("body: %v", err)
		return &req, p
	}
	if req.Model == "" {
		p.Add("model: required")
	}
	if req.MaxTokens == nil {
		p.Add("max_tokens: required")
	} else if *req.MaxTokens < 1 {
		p.Add("max_tokens: %d, want at least 1", *req.MaxTokens)
	}
	if req.Stream == nil || !*req.Stream {
		p.Add("stream: must be true (the fake only streams)")
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		p.Add("temperature: %v is outside [0, 1]", *req.Temperature)
	}
	if len(req.System) > 0 {
		var s string
		var blocks []anBlock
		if json.Unmarshal(req.System, &s) != nil && (vendorapitest.StrictDecode(req.System, &blocks) != nil || !allText(blocks)) {
			p.Add("system: must be a string or an array of text blocks")
		}
	}
	if len(req.Messages) == 0 {
		p.Add("messages: at least one message is required")
	} else if req.Messages[0].Role != "user" {
		p.Add("messages[0].role: the first message must use the user role")
	}
	var toolUses []string // ids of the previous assistant message's tool_use blocks
	for i, m := range req.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		blocks, ok := contentBlocks(m.Content)
		if !ok {
			p.Add("%s.content: must be a non-empty string or a non-empty array of content blocks", field)
			continue
		}
		answered := map[string]bool{}
		seenOther := false
		for j, b := range blocks {
			f := fmt.Sprintf("%s.content[%d]", field, j)
			switch b.Type {
			case "text":
				if b.Text == nil || strings.TrimSpace(*b.Text) == "" {
					p.Add("%s: text content blocks must contain non-whitespace text", f)
				}
				seenOther = true
			case "tool_use":
				if m.Role != "assistant" {
					p.Add("%s: tool_use blocks only appear in assistant messages", f)
				}
				if b.ID == "" || b.Name == "" {
					p.Add("%s: tool_use needs id and name", f)
				}
				if !isObject(b.Input) {
					p.Add("%s.input: must be an object", f)
				}
				seenOther = true
			case "tool_result":
				switch {
				case m.Role != "user":
					p.Add("%s: tool_result blocks only appear in user messages", f)
				case !slices.Contains(toolUses, b.ToolUseID):
					p.Add("%s.tool_use_id: %q matches no tool_use block of the previous message", f, b.ToolUseID)
				case seenOther:
					p.Add("%s: tool_result blocks must come before any other content", f)
				}
				answered[b.ToolUseID] = true
			default:
				p.Add("%s.type: %q is not supported by the fake", f, b.Type)
			}
		}
		for _, id := range toolUses {
			if !answered[id] {
				p.Add("%s: tool_use ids were found without tool_result blocks immediately after: %s", field, id)
			}
		}
		toolUses = nil
		if m.Role == "assistant" {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					toolUses = append(toolUses, b.ID)
				}
			}
		} else if m.Role != "user" {
			p.Add("%s.role: %q is not user or assistant (the system prompt is the top-level system field)", field, m.Role)
		}
	}
	if len(toolUses) > 0 {
		p.Add("messages: the last message calls tools (%s) that no tool_result answers", strings.Join(toolUses, ", "))
	}
	for i, t := range req.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if !validToolName(t.Name) {
			p.Add("%s.name: %q does not match ^[a-zA-Z0-9_-]{1,64}$", field, t.Name)
		}
		var schema struct {
			Type string `json:"type"`
		}
		if !isObject(t.InputSchema) || json.Unmarshal(t.InputSchema, &schema) != nil || schema.Type != "object" {
			p.Add(`%s.input_schema: must be a JSON Schema object with "type": "object"`, field)
		}
	}
	return &req, p
}

// contentBlocks reads a message's content: a non-empty string is one text block.
func contentBlocks(raw json.RawMessage) ([]anBlock, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: &s}}, s != ""
	}
	var blocks []anBlock
	if err := vendorapitest.StrictDecode(raw, &blocks); err != nil || len(blocks) == 0 {
		return nil, false
	}
	return blocks, true
}

func allText(blocks []anBlock) bool {
	for _, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return false
		}
	}
	return true
}
