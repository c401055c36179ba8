package anthropic_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"switchboard/internal/llm"
	"switchboard/internal/llm/anthropic"
	"switchboard/internal/llm/llmtest"
)

func TestExercise(t *testing.T) {
	t.Parallel()
	llmtest.Exercise(t, llmtest.Provider{
		Name:      anthropic.Provider,
		NewServer: llmtest.NewAnthropic,
		NewClient: func(baseURL, apiKey string) llm.Client { return anthropic.New(baseURL, apiKey, nil) },
	})
}

// TestRequestEncoding checks the body of a tool round trip: the system
// prompt as the top-level field, max_tokens defaulted, the assistant's
// tool_use blocks kept after its text, and the result as a tool_result
// block in the next user message.
func TestRequestEncoding(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: []string{"Checking."}, ToolCalls: []llm.ToolCall{{ID: "toolu_w1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		llmtest.Turn{Text: []string{"18 degrees."}},
	)
	c := anthropic.New(srv.URL, llmtest.APIKey, nil)
	req := llm.Request{
		Model:    "claude-haiku-4-5",
		System:   "Be brief.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Weather in Paris?"}},
		Tools:    llmtest.Tools[:1],
	}
	first, err := c.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Stream (turn 1): %v", err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, Content: first.Text, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "toolu_w1", Content: `{"temp_c":18}`},
	)
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatalf("Stream (turn 2): %v", err)
	}
	want := `{
		"model": "claude-haiku-4-5",
		"max_tokens": 1024,
		"system": "Be brief.",
		"messages": [
			{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
			{"role": "assistant", "content": [
				{"type": "text", "text": "Checking."},
				{"type": "tool_use", "id": "toolu_w1", "name": "get_weather", "input": {"city": "Paris"}}
			]},
			{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w1", "content": "{\"temp_c\":18}"}]}
		],
		"tools": [{
			"name": "get_weather", "description": "Current weather in a city.",
			"input_schema": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}
		}],
		"stream": true
	}`
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server received %d requests, want 2", len(reqs))
	}
	if !llmtest.SameJSON(reqs[1], []byte(want)) {
		t.Errorf("request 2 body:\n got %s\nwant %s", reqs[1], want)
	}
}

func rawServer(t *testing.T, status int, contentType, body string) (*httptest.Server, *http.Request) {
	t.Helper()
	got := new(http.Request)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*got = *r.Clone(r.Context())
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// TestLenient feeds streams the fake does not write: newer event types, a
// proxy that sends tool input whole, events without "event:" lines.
func TestLenient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want llm.Result
	}{
		{
			name: "thinking blocks and unknown events are skipped, cached input is counted",
			body: `event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The caller wants hours."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: future_event
data: {"type":"future_event","x":1}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"We open at nine."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":42}}

event: message_stop
data: {"type":"message_stop"}

`,
			want: llm.Result{Text: "We open at nine.", FinishReason: llm.FinishStop, InputTokens: 1110, OutputTokens: 42},
		},
		{
			name: "tool input whole in content_block_start, no id, end_turn, no event lines",
			body: `data: {"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}

data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","name":"book_table","input":{"people":2}}}

data: {"type":"content_block_stop","index":0}

data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}

data: {"type":"message_stop"}

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{{Name: "book_table", Arguments: json.RawMessage(`{"people":2}`)}}, FinishReason: llm.FinishToolCalls, InputTokens: 5, OutputTokens: 9},
		},
		{
			name: "type only in the event line, max_tokens with a cut-off tool input",
			body: "event: content_block_start\r\ndata: {\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\r\n\r\n" +
				"event: content_block_delta\r\ndata: {\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Pa\"}}\r\n\r\n" +
				"event: message_delta\r\ndata: {\"delta\":{\"stop_reason\":\"max_tokens\"}}\r\n\r\n" +
				"event: message_stop\r\ndata: {}\r\n\r\n",
			want: llm.Result{ToolCalls: []llm.ToolCall{{ID: "toolu_1", Name: "get_weather", Arguments: json.RawMessage(`"{\"city\": \"Pa"`)}}, FinishReason: llm.FinishLength},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, got := rawServer(t, 200, "text/event-stream", tt.body)
			var deltas []string
			res, err := anthropic.New(srv.URL+"/v1/", "k", nil).Stream(t.Context(), request(), func(s string) { deltas = append(deltas, s) })
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if got.URL.Path != "/v1/messages" {
				t.Errorf("request path = %q for a base ending in /v1/, want /v1/messages", got.URL.Path)
			}
			if strings.Join(deltas, "") != res.Text {
				t.Errorf("deltas %q do not add up to Result.Text %q", deltas, res.Text)
			}
			for i := range res.ToolCalls {
				if res.ToolCalls[i].ID == "" {
					t.Errorf("Result.ToolCalls[%d].ID is empty, want one made up", i)
				}
				if tt.want.ToolCalls[i].ID == "" {
					res.ToolCalls[i].ID = ""
				}
			}
			if res.FirstTokenAfter <= 0 {
				t.Errorf("Result.FirstTokenAfter = %v, want > 0", res.FirstTokenAfter)
			}
			res.FirstTokenAfter = 0
			if !reflect.DeepEqual(res, tt.want) {
				t.Errorf("Stream:\n got %+v\nwant %+v", res, tt.want)
			}
		})
	}
}

// TestFailures covers errors the fake does not produce.
func TestFailures(t *testing.T) {
	t.Parallel()
	const key = "sk-ant-api03-5e4d3c2b1a09"
	tests := []struct {
		name   string
		status int
		body   string
		want   llm.Error
	}{
		{
			name:   "error echoing the key",
			status: 401,
			body:   `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`,
			want:   llm.Error{Status: 401, Code: "authentication_error", Message: "invalid x-api-key [redacted]"},
		},
		{
			name:   "overloaded before the stream",
			status: 529,
			body:   `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			want:   llm.Error{Status: 529, Code: "overloaded_error", Message: "Overloaded", Retryable: true},
		},
		{
			name:   "rate limited inside the stream",
			status: 200,
			body:   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n",
			want:   llm.Error{Status: 429, Code: "rate_limit_error", Message: "slow down", Retryable: true},
		},
		{
			name:   "invalid request inside the stream is not retryable",
			status: 200,
			body:   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}\n\n",
			want:   llm.Error{Status: 400, Code: "invalid_request_error", Message: "bad"},
		},
		{
			name:   "unknown error type inside the stream is retryable",
			status: 200,
			body:   "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"brand_new_error\",\"message\":\"?\"}}\n\n",
			want:   llm.Error{Code: "brand_new_error", Message: "?", Retryable: true},
		},
		{
			name:   "proxy text body",
			status: 503,
			body:   "upstream connect error",
			want:   llm.Error{Status: 503, Message: "upstream connect error", Retryable: true},
		},
		{
			name:   "event that is not JSON",
			status: 200,
			body:   "event: message_start\ndata: {nope\n\n",
			want:   llm.Error{Code: llm.CodeBadResponse},
		},
		{
			name:   "stream that ends after content_block_stop",
			status: 200,
			body:   "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			want:   llm.Error{Code: llm.CodeTruncated, Retryable: true},
		},
		{
			name:   "line over 1 MiB",
			status: 200,
			body:   "data: " + strings.Repeat("x", 1<<20+10) + "\n\n",
			want:   llm.Error{Code: llm.CodeTooLarge},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct := "application/json"
			if tt.status == 200 {
				ct = "text/event-stream"
			}
			srv, got := rawServer(t, tt.status, ct, tt.body)
			_, err := anthropic.New(srv.URL, key, nil).Stream(t.Context(), request(), nil)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("Stream = %v, want *llm.Error", err)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q contains the API key", err)
			}
			if got.Header.Get("X-Api-Key") != key || got.Header.Get("Anthropic-Version") != anthropic.Version {
				t.Errorf("request headers x-api-key %q, anthropic-version %q; want the key and %q", got.Header.Get("X-Api-Key"), got.Header.Get("Anthropic-Version"), anthropic.Version)
			}
			res := llm.Error{Status: le.Status, Code: le.Code, Message: le.Message, Retryable: le.Retryable, RetryAfter: le.RetryAfter}
			if tt.want.Message == "" {
				res.Message = ""
			}
			if !reflect.DeepEqual(res, tt.want) {
				t.Errorf("Stream error:\n got %+v\nwant %+v", res, tt.want)
			}
		})
	}
}

func request() llm.Request {
	return llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Tools: llmtest.Tools}
}
