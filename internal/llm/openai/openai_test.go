package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/llm/llmtest"
	"switchboard/internal/llm/openai"
)

func TestExercise(t *testing.T) {
	t.Parallel()
	llmtest.Exercise(t, llmtest.Provider{
		Name:      openai.Provider,
		NewServer: llmtest.NewOpenAI,
		NewClient: func(baseURL, apiKey string) llm.Client { return openai.New(baseURL, apiKey, nil) },
	})
}

// TestRequestEncoding checks the body byte for byte in meaning: the system
// prompt as the first message, tools as functions, the assistant's tool
// calls with content null and arguments as a JSON string, and the result as
// a "tool" message carrying tool_call_id.
func TestRequestEncoding(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewOpenAI(t,
		llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}}},
		llmtest.Turn{Text: []string{"18 degrees."}},
	)
	c := openai.New(srv.URL, llmtest.APIKey, nil)
	temp := 0.3
	req := llm.Request{
		Model:       "gpt-4o-mini",
		System:      "Be brief.",
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: "Weather in Paris?"}},
		Tools:       llmtest.Tools[:1],
		Temperature: &temp,
		MaxTokens:   200,
	}
	first, err := c.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Stream (turn 1): %v", err)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: first.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: "call_w1", Content: `{"temp_c":18}`},
	)
	if _, err := c.Stream(t.Context(), req, nil); err != nil {
		t.Fatalf("Stream (turn 2): %v", err)
	}
	want := `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "Be brief."},
			{"role": "user", "content": "Weather in Paris?"},
			{"role": "assistant", "content": null, "tool_calls": [
				{"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}
			]},
			{"role": "tool", "content": "{\"temp_c\":18}", "tool_call_id": "call_w1"}
		],
		"tools": [{"type": "function", "function": {
			"name": "get_weather", "description": "Current weather in a city.",
			"parameters": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}
		}}],
		"temperature": 0.3,
		"max_tokens": 200,
		"stream": true,
		"stream_options": {"include_usage": true}
	}`
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server received %d requests, want 2", len(reqs))
	}
	if !llmtest.SameJSON(reqs[1], []byte(want)) {
		t.Errorf("request 2 body:\n got %s\nwant %s", reqs[1], want)
	}
}

// rawServer serves body as an event stream (or with the given content type)
// and records the request headers.
func rawServer(t *testing.T, contentType, body string) (*httptest.Server, *http.Header) {
	t.Helper()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// TestLenient feeds streams as Ollama, vLLM, llama.cpp and proxies really
// write them, by hand.
func TestLenient(t *testing.T) {
	t.Parallel()
	call := func(id, name, args string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	tests := []struct {
		name        string
		contentType string
		body        string
		want        llm.Result
	}{
		{
			name: "ollama: no ids, whole arguments, stop with tool calls, no usage",
			body: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama3.1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}

data: [DONE]

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{call("", "get_weather", `{"city":"Paris"}`)}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "ollama: parallel calls sharing index 0, told apart by id",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_y","index":0,"type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}

data: [DONE]

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{call("call_x", "get_weather", `{"city":"Paris"}`), call("call_y", "get_weather", `{"city":"Rome"}`)}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "no ids and no index: calls told apart by a new name after complete arguments",
			body: `data: {"choices":[{"delta":{"tool_calls":[{"function":{"name":"get_weather","arguments":"{\"city\":"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"Oslo\"}"}}]}}]}

data: {"choices":[{"delta":{"tool_calls":[{"function":{"name":"book_table","arguments":"{}"}}]}}]}

data: {"choices":[{"delta":{},"finish_reason":"stop"}]}

data: [DONE]

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{call("", "get_weather", `{"city":"Oslo"}`), call("", "book_table", `{}`)}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "arguments as a JSON object, not a string",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"book_table","arguments":{"people":2}}}]},"finish_reason":"tool_calls"}]}

data: [DONE]

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{call("c1", "book_table", `{"people":2}`)}, FinishReason: llm.FinishToolCalls},
		},
		{
			name: "llama.cpp: empty content chunks, usage and timings in the last choice chunk, CRLF, comments",
			body: ": ping\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}]}\r\n\r\n" +
				"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" there\"}}]}\r\n\r\n" +
				"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2,\"total_tokens\":11},\"timings\":{\"predicted_ms\":12.5}}\r\n\r\n" +
				"data: [DONE]\r\n\r\n",
			want: llm.Result{Text: "Hi there", FinishReason: llm.FinishStop, InputTokens: 9, OutputTokens: 2},
		},
		{
			name: "vLLM: reasoning_content is not spoken, a missing finish_reason reads as stop",
			body: `data: {"choices":[{"index":0,"delta":{"reasoning_content":"The user greets."}}]}

data: {"choices":[{"index":0,"delta":{"content":"Hello!"}}]}

data: [DONE]

`,
			want: llm.Result{Text: "Hello!", FinishReason: llm.FinishStop},
		},
		{
			name: "arguments that are not JSON are kept as a JSON string",
			body: `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"get_weather","arguments":"{\"city\": \"Par"}}]}}]}

data: {"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}

data: [DONE]

`,
			want: llm.Result{ToolCalls: []llm.ToolCall{call("c1", "get_weather", `"{\"city\": \"Par"`)}, FinishReason: llm.FinishLength},
		},
		{
			name:        "a server that ignored stream: true answers with one JSON completion",
			contentType: "application/json",
			body:        `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Whole reply.","tool_calls":[{"id":"c9","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Lima\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`,
			want:        llm.Result{Text: "Whole reply.", ToolCalls: []llm.ToolCall{call("c9", "get_weather", `{"city":"Lima"}`)}, FinishReason: llm.FinishToolCalls, InputTokens: 5, OutputTokens: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ct := tt.contentType
			if ct == "" {
				ct = "text/event-stream"
			}
			srv, header := rawServer(t, ct, tt.body)
			var deltas []string
			got, err := openai.New(srv.URL+"/", "", nil).Stream(t.Context(), request(), func(s string) { deltas = append(deltas, s) })
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if a := header.Get("Authorization"); a != "" {
				t.Errorf("Authorization = %q with no key, want none", a)
			}
			if strings.Join(deltas, "") != got.Text {
				t.Errorf("deltas %q do not add up to Result.Text %q", deltas, got.Text)
			}
			if got.FirstTokenAfter <= 0 {
				t.Errorf("Result.FirstTokenAfter = %v, want > 0", got.FirstTokenAfter)
			}
			for i := range got.ToolCalls {
				if got.ToolCalls[i].ID == "" {
					t.Errorf("Result.ToolCalls[%d].ID is empty, want one made up", i)
				}
				if i < len(tt.want.ToolCalls) && tt.want.ToolCalls[i].ID == "" {
					got.ToolCalls[i].ID = "" // made up: compare the rest
				}
			}
			got.FirstTokenAfter = 0
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Stream:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestFailures covers errors the fake cannot produce: hostile and broken
// servers, and errors in the shapes other servers send them.
func TestFailures(t *testing.T) {
	t.Parallel()
	const key = "sk-live-8d7c6b5a4f3e2d1c"
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    llm.Error
		wantErr error
	}{
		{
			name:   "error echoing the key",
			status: 401,
			body:   `{"error":{"message":"key ` + key + ` is revoked","type":"invalid_request_error","code":"invalid_api_key"}}`,
			want:   llm.Error{Status: 401, Code: "invalid_api_key", Message: "key [redacted] is revoked"},
		},
		{
			name:   "retry-after-ms wins over retry-after",
			status: 429,
			header: map[string]string{"Retry-After": "20", "Retry-After-Ms": "1500"},
			body:   `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
			want:   llm.Error{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Retryable: true, RetryAfter: 1500 * time.Millisecond},
		},
		{
			name:   "ollama: error as a bare string",
			status: 404,
			body:   `{"error":"model \"llama9\" not found, try pulling it first"}`,
			want:   llm.Error{Status: 404, Message: `model "llama9" not found, try pulling it first`},
		},
		{
			name:   "vLLM: top-level error with a numeric code",
			status: 400,
			body:   `{"object":"error","message":"This model's maximum context length is 8192 tokens.","type":"BadRequestError","param":null,"code":400}`,
			want:   llm.Error{Status: 400, Code: "BadRequestError", Message: "This model's maximum context length is 8192 tokens."},
		},
		{
			name:   "proxy HTML page",
			status: 502,
			body:   "<html><body>Bad Gateway</body></html>",
			want:   llm.Error{Status: 502, Message: "Bad Gateway", Retryable: true},
		},
		{
			name:   "in-stream error",
			status: 200,
			body:   "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"error\":{\"message\":\"The server had an error\",\"type\":\"server_error\",\"code\":null}}\n\n",
			want:   llm.Error{Code: "server_error", Message: "The server had an error", Retryable: true},
		},
		{
			name:   "llama.cpp error line",
			status: 200,
			body:   "error: {\"code\":500,\"message\":\"failed to decode the batch\",\"type\":\"server_error\"}\n\n",
			want:   llm.Error{Status: 500, Code: "server_error", Message: "failed to decode the batch", Retryable: true},
		},
		{
			name:   "in-stream error with a client status",
			status: 200,
			body:   "data: {\"error\":{\"message\":\"prompt too long\",\"type\":\"BadRequestError\",\"code\":400}}\n\n",
			want:   llm.Error{Status: 400, Code: "BadRequestError", Message: "prompt too long"},
		},
		{
			name:   "chunk that is not JSON",
			status: 200,
			body:   "data: {\"choices\":[\n\n",
			want:   llm.Error{Code: llm.CodeBadResponse},
		},
		{
			name:   "stream cut mid-line",
			status: 200,
			body:   "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\ndata: {\"choices\":[{\"ind",
			want:   llm.Error{Code: llm.CodeTruncated, Retryable: true},
		},
		{
			name:   "line over 1 MiB",
			status: 200,
			body:   "data: \"" + strings.Repeat("x", 1<<20+10) + "\"\n\n",
			want:   llm.Error{Code: llm.CodeTooLarge},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				if tt.status == 200 {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			_, err := openai.New(srv.URL, key, nil).Stream(t.Context(), request(), nil)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("Stream = %v, want *llm.Error", err)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error %q contains the API key", err)
			}
			got := llm.Error{Status: le.Status, Code: le.Code, Message: le.Message, Retryable: le.Retryable, RetryAfter: le.RetryAfter}
			if tt.want.Message == "" {
				got.Message = "" // only the classification matters
			}
			want := tt.want
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Stream error:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestNetworkError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	_, err := openai.New(url, "k", nil).Stream(t.Context(), request(), nil)
	var le *llm.Error
	if !errors.As(err, &le) || le.Code != llm.CodeNetwork || !le.Retryable {
		t.Errorf("Stream to a closed port = %v, want retryable %q", err, llm.CodeNetwork)
	}
}

func request() llm.Request {
	return llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}, Tools: llmtest.Tools}
}
