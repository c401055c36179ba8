package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/llm"
)

// recordingTB stands in for the test a fake reports to, so these tests can
// check what the fake reports instead of failing.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")))
}

func (r *recordingTB) reported() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, " | ")
}

// post sends body with the headers and returns the status and response body.
func post(t *testing.T, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer of POST %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

var (
	openAIHeaders    = map[string]string{"Authorization": "Bearer " + APIKey, "Content-Type": "application/json"}
	anthropicHeaders = map[string]string{"X-Api-Key": APIKey, "Anthropic-Version": AnthropicVersion, "Content-Type": "application/json"}
	weatherCall      = llm.ToolCall{ID: "call_1", Name: "get_weather", Arguments: json.RawMessage(`{"city": "Paris"}`)}
)

// TestOpenAIWire pins the bytes the OpenAI fake writes.
func TestOpenAIWire(t *testing.T) {
	t.Parallel()
	srv := NewOpenAI(t, Turn{Text: []string{"Hi"}, ToolCalls: []llm.ToolCall{weatherCall}, InputTokens: 9, OutputTokens: 5})
	status, got := post(t, srv.URL+"/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`, openAIHeaders)
	const head = `data: {"id":"chatcmpl-llmtest1","object":"chat.completion.chunk","created":1750000001,"model":"gpt-4o","system_fingerprint":"fp_llmtest","choices":[`
	want := head + `{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{"content":"Hi"},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\":\"Par"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"is\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

` + head + `{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

` + head + `],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}

data: [DONE]

`
	if status != http.StatusOK || got != want {
		t.Errorf("OpenAI fake stream: status %d, body\n%s\nwant 200, body\n%s", status, got, want)
	}
}

// TestAnthropicWire pins the bytes the Anthropic fake writes.
func TestAnthropicWire(t *testing.T) {
	t.Parallel()
	srv := NewAnthropic(t, Turn{Text: []string{"Hi"}, ToolCalls: []llm.ToolCall{weatherCall}, InputTokens: 9, OutputTokens: 5})
	status, got := post(t, srv.URL+"/v1/messages", `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":"hi"}],"stream":true}`, anthropicHeaders)
	want := `event: message_start
data: {"type":"message_start","message":{"id":"msg_llmtest1","type":"message","role":"assistant","model":"claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"call_1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\":\"Par"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"is\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`
	if status != http.StatusOK || got != want {
		t.Errorf("Anthropic fake stream: status %d, body\n%s\nwant 200, body\n%s", status, got, want)
	}
}

func TestErrorBodies(t *testing.T) {
	t.Parallel()
	o := NewOpenAI(t, Turn{Status: 429})
	if status, got := post(t, o.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, openAIHeaders); status != 429 ||
		got != `{"error":{"message":"Rate limit reached for requests. Please try again later.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`+"\n" {
		t.Errorf("OpenAI fake 429: %d %s", status, got)
	}
	a := NewAnthropic(t, Turn{Status: 529})
	if status, got := post(t, a.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"stream":true}`, anthropicHeaders); status != 529 ||
		got != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_llmtest1"}`+"\n" {
		t.Errorf("Anthropic fake 529: %d %s", status, got)
	}
}

// TestWrongKey checks that a bad key is the provider's 401, not a test
// failure, and that it does not consume a turn.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	o := NewOpenAI(rec, Turn{Text: []string{"ok"}})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`
	status, got := post(t, o.URL+"/chat/completions", body, map[string]string{"Authorization": "Bearer sk-wrong-0123456789", "Content-Type": "application/json"})
	if status != 401 || !strings.Contains(got, `"code":"invalid_api_key"`) || !strings.Contains(got, "sk-************6789") {
		t.Errorf("OpenAI fake with a wrong key: %d %s, want 401 invalid_api_key with the key masked", status, got)
	}
	if status, _ := post(t, o.URL+"/chat/completions", body, openAIHeaders); status != 200 {
		t.Errorf("OpenAI fake after a 401: status %d, want the scripted turn (200)", status)
	}
	a := NewAnthropic(rec, Turn{Text: []string{"ok"}})
	if status, got := post(t, a.URL+"/v1/messages", `{}`, map[string]string{"X-Api-Key": "nope"}); status != 401 || !strings.Contains(got, "authentication_error") {
		t.Errorf("Anthropic fake with a wrong key: %d %s, want 401 authentication_error", status, got)
	}
	if r := rec.reported(); r != "" {
		t.Errorf("fakes reported %q for wrong keys, want nothing", r)
	}
}

// TestMalformed checks that each fake fails the test on requests the real
// API would refuse, naming the problem.
func TestMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		path     string
		header   map[string]string
		body     string
		want     string // in the reported failure
	}{
		{"unknown field", "openai", "", nil, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"temprature":1}`, `unknown field "temprature"`},
		{"not streaming", "openai", "", nil, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "stream: must be true"},
		{"tool result for no call", "openai", "", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"x","content":"1"}]}`, `tool_call_id: "x" answers no tool call`},
		{"unanswered tool call", "openai", "", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"?"}]}`, "unanswered: c1"},
		{"arguments not a string", "openai", "", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{}}}]},{"role":"tool","tool_call_id":"c1","content":"1"}]}`, "must be a string of JSON"},
		{"bad tool name", "openai", "", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get weather"}}]}`, `"get weather" does not match`},
		{"wrong path", "openai", "/v1/completions", nil, `{}`, "want POST /v1/chat/completions"},
		{"no version header", "anthropic", "", map[string]string{"Anthropic-Version": ""}, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version header"},
		{"no max_tokens", "anthropic", "", nil, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens: required"},
		{"system role in messages", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"system","content":"x"}]}`, `"system" is not user or assistant`},
		{"tool_use without a result", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":"and?"}]}`, "without tool_result blocks immediately after: t1"},
		{"result after text", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"t1"}]}]}`, "must come before any other content"},
		{"empty text block", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "non-whitespace text"},
		{"tool input not an object", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":"{}"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"}]}]}`, "input: must be an object"},
		{"schema without type object", "anthropic", "", nil, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}}]}`, `"type": "object"`},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recordingTB{TB: t}
			var srv *Server
			header := map[string]string{}
			path := tt.path
			if tt.provider == "openai" {
				srv = NewOpenAI(rec, Turn{Text: []string{"never sent"}})
				for k, v := range openAIHeaders {
					header[k] = v
				}
				if path == "" {
					path = "/chat/completions"
				}
				path = strings.TrimPrefix(path, "/v1")
			} else {
				srv = NewAnthropic(rec, Turn{Text: []string{"never sent"}})
				for k, v := range anthropicHeaders {
					header[k] = v
				}
				if path == "" {
					path = "/v1/messages"
				}
			}
			for k, v := range tt.header {
				header[k] = v
			}
			status, _ := post(t, srv.URL+path, tt.body, header)
			if status < 400 {
				t.Errorf("fake answered %d to a malformed request, want an error status", status)
			}
			if r := rec.reported(); !strings.Contains(r, tt.want) {
				t.Errorf("fake reported %q, want it to mention %q", r, tt.want)
			}
			if got := srv.Requests(); len(got) != 1 {
				t.Errorf("Requests() has %d bodies, want the 1 received", len(got))
			}
		})
	}
}

func TestScriptExhausted(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	srv := NewOpenAI(rec)
	status, _ := post(t, srv.URL+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, openAIHeaders)
	if r := rec.reported(); status != 500 || !strings.Contains(r, "no turn left") {
		t.Errorf("request past the script: status %d, reported %q; want 500 and a failure saying so", status, r)
	}
}

// TestPieces checks the argument splitting: pieces of about n bytes that
// never cut a rune, so each piece is valid UTF-8 on the wire.
func TestPieces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 6, nil},
		{"{}", 6, []string{"{}"}},
		{`{"city":"Paris"}`, 6, []string{`{"city`, `":"Par`, `is"}`}},
		{`"élan"`, 2, []string{`"é`, "la", `n"`}}, // é is 2 bytes: the cut moves past it
		{"☀☀☀", 4, []string{"☀☀", "☀"}},           // ☀ is 3 bytes
	}
	for _, tt := range tests {
		if got := pieces(tt.in, tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("pieces(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
