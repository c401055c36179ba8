// Package openai is an llm.Client for the OpenAI Chat Completions API and the
// servers that speak its dialect at {base}/chat/completions: Ollama, vLLM and
// llama.cpp's server. It streams (server-sent events, one
// "chat.completion.chunk" per event, "data: [DONE]" at the end) and is
// lenient where those servers differ from OpenAI: tool calls without ids,
// arguments sent whole or as a JSON object, parallel calls sharing one
// index, "stop" where "tool_calls" was meant, a JSON reply instead of a
// stream.
package openai

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
const Provider = "openai"

// Client streams chat completions from one base URL.
type Client struct {
	ep  vendorapi.Endpoint
	url string
}

var _ llm.Client = (*Client)(nil)

// New returns a client for baseURL (for example https://api.openai.com/v1 or
// http://localhost:11434/v1). apiKey is sent as a bearer token when it is not
// empty; local servers usually need none. hc nil means http.DefaultClient;
// give it no Timeout, since streams are long: deadlines come from ctx.
func New(baseURL, apiKey string, hc *http.Client) *Client {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return &Client{
		ep:  wire.Endpoint(Provider, apiKey, h, hc, parseError),
		url: strings.TrimRight(baseURL, "/") + "/chat/completions",
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
	d := newDecoder(&c.ep, start, onDelta)
	if wire.IsJSON(resp) {
		return d.whole(ctx, resp.Body)
	}
	return d.stream(ctx, resp.Body)
}

// chatRequest is the request body. Only what the engine uses is sent, so the
// same body is accepted by OpenAI and by the local servers.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Tools         []chatTool     `json:"tools,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role string `json:"role"`
	// Content is null on an assistant message that only calls tools, as
	// OpenAI itself returns it.
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chatTool struct {
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// emptyParameters is what a tool with no Parameters sends: an object schema
// with no properties, which every server accepts.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

func encodeRequest(req llm.Request) chatRequest {
	out := chatRequest{
		Model:         req.Model,
		Temperature:   req.Temperature,
		MaxTokens:     req.MaxTokens,
		Stream:        true,
		StreamOptions: &streamOptions{IncludeUsage: true},
	}
	if req.System != "" {
		out.Messages = append(out.Messages, chatMessage{Role: "system", Content: ptr(req.System)})
	}
	for _, m := range req.Messages {
		cm := chatMessage{Role: string(m.Role), Content: ptr(m.Content), ToolCallID: m.ToolCallID}
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			if m.Content == "" {
				cm.Content = nil
			}
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, chatToolCall{
					ID:       tc.ID,
					Type:     "function",
					Function: chatFunction{Name: tc.Name, Arguments: string(wire.Arguments(tc.Arguments))},
				})
			}
		}
		out.Messages = append(out.Messages, cm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, chatTool{Type: "function", Function: toolFunction{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out
}

func ptr(s string) *string { return &s }

// errorBody is OpenAI's error envelope, {"error": {...}}. Servers vary: vLLM
// sends a numeric code, Ollama's native endpoints a bare string, some vLLM
// versions the fields at the top level.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// parseError reads a non-2xx body.
func parseError(body []byte) (code, message string, ok bool) {
	e, ok := decodeAPIError(body)
	return e.code(), e.Message, ok
}

// code is the error's code when it has a textual one, else its type.
func (e apiError) code() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil && s != "" {
		return s
	}
	return e.Type
}

// status is the HTTP status an in-stream error carries in its code (vLLM and
// llama.cpp send one), else 0.
func (e apiError) status() int {
	var n int
	if json.Unmarshal(e.Code, &n) == nil && n >= 400 && n <= 599 {
		return n
	}
	return 0
}
