// Package anthropic is an llm.Client for the Anthropic Messages API
// (POST {base}/v1/messages, "stream": true). The stream is a sequence of
// named events: message_start, then per content block content_block_start,
// content_block_delta (text_delta or input_json_delta) and
// content_block_stop, then message_delta with the stop reason and
// message_stop; ping and error may come at any point.
package anthropic

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/llm/internal/wire"
	"switchboard/internal/vendorapi"
)

// Provider is the name in llm.Error.Provider.
const Provider = "anthropic"

// Version is the anthropic-version header every request carries.
const Version = "2023-06-01"

// DefaultMaxTokens is sent when the request leaves MaxTokens at 0: the API
// requires a value, and 1024 tokens is minutes of speech.
const DefaultMaxTokens = 1024

// Client streams messages from one base URL.
type Client struct {
	ep  vendorapi.Endpoint
	url string
}

var _ llm.Client = (*Client)(nil)

// New returns a client for baseURL (https://api.anthropic.com; a base
// already ending in /v1 is accepted too). hc nil means http.DefaultClient;
// give it no Timeout, since streams are long: deadlines come from ctx.
func New(baseURL, apiKey string, hc *http.Client) *Client {
	base := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Anthropic-Version", Version)
	if apiKey != "" {
		h.Set("X-Api-Key", apiKey)
	}
	return &Client{
		ep:  wire.Endpoint(Provider, apiKey, h, hc, parseError),
		url: base + "/v1/messages",
	}
}

// Stream implements llm.Client.
func (c *Client) Stream(ctx context.Context, req llm.Request, onDelta func(string)) (llm.Result, error) {
	start := time.Now()
	if err := req.Validate(); err != nil {
		return llm.Result{}, wire.Invalid(&c.ep, err)
	}
	body, err := json.Marshal(encodeRequest(req))
	if err != nil {
		return llm.Result{}, wire.Invalid(&c.ep, err)
	}
	resp, err := c.ep.Post(ctx, c.url, "application/json", body)
	if err != nil {
		return llm.Result{}, err
	}
	defer resp.Body.Close()
	return newDecoder(&c.ep, start, onDelta).stream(ctx, resp.Body)
}

type messagesRequest struct {
	Model       string    `json:"model"`
	MaxTokens   int       `json:"max_tokens"`
	System      string    `json:"system,omitempty"`
	Messages    []message `json:"messages"`
	Tools       []tool    `json:"tools,omitempty"`
	Temperature *float64  `json:"temperature,omitempty"`
	Stream      bool      `json:"stream"`
}

type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is a request content block: text, tool_use or tool_result.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// encodeRequest translates the history. The API knows only user and
// assistant turns, so: system messages join the top-level system prompt;
// an assistant's tool calls become tool_use blocks after its text; tool
// results become tool_result blocks in the following user message, ahead of
// any text; consecutive messages of one role merge into one; empty text is
// left out (the API refuses empty text blocks).
func encodeRequest(req llm.Request) messagesRequest {
	out := messagesRequest{
		Model:       req.Model,
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
		Stream:      true,
	}
	if out.MaxTokens == 0 {
		out.MaxTokens = DefaultMaxTokens
	}
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	add := func(role string, blocks ...block) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, message{Role: role, Content: blocks})
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case llm.RoleUser:
			add("user", textBlocks(m.Content)...)
		case llm.RoleAssistant:
			blocks := textBlocks(m.Content)
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, block{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: wire.ObjectOrEmpty(tc.Arguments)})
			}
			add("assistant", blocks...)
		case llm.RoleTool:
			add("user", block{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Content})
		}
	}
	// The API wants the conversation to open with a user turn; a call's
	// assistant often speaks first (its first message), so mark the start.
	if len(out.Messages) > 0 && out.Messages[0].Role != "user" {
		out.Messages = append([]message{{Role: "user", Content: []block{{Type: "text", Text: CallStarted}}}}, out.Messages...)
	}
	out.System = strings.Join(system, "\n\n")
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// CallStarted opens a history whose first turn is the assistant's.
const CallStarted = "(The call has connected.)"

func textBlocks(s string) []block {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return []block{{Type: "text", Text: s}}
}

// errorBody is the API's error envelope, used both for non-2xx bodies and
// for the error event inside a stream.
type errorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseError(body []byte) (code, message string, ok bool) {
	var b errorBody
	if json.Unmarshal(body, &b) != nil || b.Error.Type == "" && b.Error.Message == "" {
		return "", "", false
	}
	return b.Error.Type, b.Error.Message, true
}

// errorStatus is the table from an error type to the HTTP status the API
// uses for it, so an error met inside a stream (after a 200) is classified
// like the same error before it: overloaded_error is 529 and retryable,
// invalid_request_error 400 and not. Unknown types get 0: retryable, since
// the stream broke on the server's side.
var errorStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}
