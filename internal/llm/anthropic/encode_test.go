package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/llm/llmtest"
	"switchboard/internal/vendorapi"
)

// TestEncodeHistory is the table from provider-neutral histories to the
// Messages API's user/assistant turns.
func TestEncodeHistory(t *testing.T) {
	t.Parallel()
	call := func(id string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: "get_weather", Arguments: json.RawMessage(`{"city":"Oslo"}`)}
	}
	tests := []struct {
		name       string
		system     string
		messages   []llm.Message
		wantSystem string
		want       string
	}{
		{
			name:       "system messages join the system prompt",
			system:     "Be brief.",
			messages:   []llm.Message{{Role: llm.RoleSystem, Content: "The caller is Ada."}, {Role: llm.RoleUser, Content: "Hi"}},
			wantSystem: "Be brief.\n\nThe caller is Ada.",
			want:       `[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`,
		},
		{
			name: "parallel results share one user message, then the caller's words",
			messages: []llm.Message{
				{Role: llm.RoleUser, Content: "Weather?"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call("t1"), call("t2")}},
				{Role: llm.RoleTool, ToolCallID: "t1", Content: "4C"},
				{Role: llm.RoleTool, ToolCallID: "t2", Content: ""},
				{Role: llm.RoleUser, Content: "And tomorrow?"},
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"Weather?"}]},
				{"role":"assistant","content":[
					{"type":"tool_use","id":"t1","name":"get_weather","input":{"city":"Oslo"}},
					{"type":"tool_use","id":"t2","name":"get_weather","input":{"city":"Oslo"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"t1","content":"4C"},
					{"type":"tool_result","tool_use_id":"t2"},
					{"type":"text","text":"And tomorrow?"}]}
			]`,
		},
		{
			name: "consecutive user messages merge, blank text is left out",
			messages: []llm.Message{
				{Role: llm.RoleUser, Content: "Hello"},
				{Role: llm.RoleUser, Content: "  "},
				{Role: llm.RoleUser, Content: "Anyone?"},
			},
			want: `[{"role":"user","content":[{"type":"text","text":"Hello"},{"type":"text","text":"Anyone?"}]}]`,
		},
		{
			name: "arguments that are not an object become {}",
			messages: []llm.Message{
				{Role: llm.RoleUser, Content: "Go"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "t1", Name: "f", Arguments: json.RawMessage(`"{\"cut"`)}}},
				{Role: llm.RoleTool, ToolCallID: "t1", Content: "error: bad arguments"},
			},
			want: `[
				{"role":"user","content":[{"type":"text","text":"Go"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"error: bad arguments"}]}
			]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := encodeRequest(llm.Request{Model: "m", System: tt.system, Messages: tt.messages})
			if got.System != tt.wantSystem {
				t.Errorf("encodeRequest system = %q, want %q", got.System, tt.wantSystem)
			}
			b, _ := json.Marshal(got.Messages)
			if !llmtest.SameJSON(b, []byte(tt.want)) {
				t.Errorf("encodeRequest messages:\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

// FuzzDecode feeds arbitrary bytes as a stream body; the decoder must keep
// llm.Client's promises whatever it reads.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"Hi\"}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"f\",\"input\":[]}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":-1}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
	} {
		f.Add(seed)
	}
	ep := &vendorapi.Endpoint{Provider: Provider}
	f.Fuzz(func(t *testing.T, body string) {
		var text strings.Builder
		d := newDecoder(ep, time.Now(), func(s string) {
			if s == "" {
				t.Errorf("onDelta called with empty text")
			}
			text.WriteString(s)
		})
		res, err := d.stream(context.Background(), strings.NewReader(body))
		var le *llm.Error
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("stream(%q) error %v (%T) is not *llm.Error", body, err, err)
		}
		if res.Text != text.String() {
			t.Fatalf("stream(%q): Result.Text %q, deltas %q", body, res.Text, text.String())
		}
		for _, tc := range res.ToolCalls {
			if !json.Valid(tc.Arguments) || tc.ID == "" || tc.Name == "" {
				t.Fatalf("stream(%q): tool call %+v lacks valid arguments, an id or a name", body, tc)
			}
		}
		switch res.FinishReason {
		case llm.FinishStop, llm.FinishToolCalls, llm.FinishLength:
		default:
			t.Fatalf("stream(%q): FinishReason %q is not normalized", body, res.FinishReason)
		}
	})
}
