package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	neg := -0.5
	tests := []struct {
		name   string
		change func(*Request)
		want   []string // fields named in the error; none means valid
	}{
		{"valid", func(*Request) {}, nil},
		{"no model", func(r *Request) { r.Model = "" }, []string{"model: required"}},
		{"no messages", func(r *Request) { r.Messages = nil }, []string{"messages: at least one"}},
		{"negative max tokens", func(r *Request) { r.MaxTokens = -1 }, []string{"maxTokens"}},
		{"negative temperature", func(r *Request) { r.Temperature = &neg }, []string{"temperature"}},
		{"unknown role", func(r *Request) { r.Messages[0].Role = "bot" }, []string{`messages[0].role: must be system, user, assistant or tool, got "bot"`}},
		{"tool message without id", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleTool, Content: "1"})
		}, []string{"messages[1].toolCallId: required"}},
		{"tool call without id, name, JSON", func(r *Request) {
			r.Messages = append(r.Messages, Message{Role: RoleAssistant, ToolCalls: []ToolCall{{Arguments: json.RawMessage("{")}}})
		}, []string{"messages[1].toolCalls[0].id", "messages[1].toolCalls[0].name", "messages[1].toolCalls[0].arguments"}},
		{"tool calls on a user message", func(r *Request) {
			r.Messages[0].ToolCalls = []ToolCall{{ID: "a", Name: "f"}}
		}, []string{"messages[0].toolCalls: only assistant"}},
		{"bad and duplicate tool names, parameters not an object", func(r *Request) {
			r.Tools = []Tool{{Name: "get weather"}, {Name: "f", Parameters: json.RawMessage(`[]`)}, {Name: "f"}}
		}, []string{"tools[0].name", "tools[1].parameters", `tools[2].name: duplicate tool "f"`}},
		{"tool name too long", func(r *Request) { r.Tools = []Tool{{Name: strings.Repeat("a", 65)}} }, []string{"tools[0].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := ok
			req.Messages = append([]Message(nil), ok.Messages...)
			tt.change(&req)
			err := req.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestRetryableStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]bool{
		400: false, 401: false, 402: false, 403: false, 404: false, 413: false, 422: false,
		408: true, 409: true, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true,
	} {
		if got := RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Provider: "openai", Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Retryable: true, RetryAfter: 2 * time.Second},
			"openai: status 429 (rate_limit_exceeded) slow down (retry after 2s)"},
		{&Error{Provider: "anthropic", Code: CodeCanceled, Message: "request canceled", Err: context.Canceled},
			"anthropic: (canceled) request canceled: context canceled"},
		{&Error{Provider: "openai", Code: CodeNetwork, Message: "dial tcp: refused", Err: errors.New("dial tcp: refused")},
			"openai: (network_error) dial tcp: refused"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	wrapped := fmt.Errorf("turn 3: %w", &Error{Provider: "openai", Status: 503, Retryable: true})
	if !IsRetryable(wrapped) {
		t.Errorf("IsRetryable(%v) = false, want true", wrapped)
	}
	if IsRetryable(errors.New("plain")) || IsRetryable(&Error{Status: 401}) {
		t.Errorf("IsRetryable of a plain error or a 401 = true, want false")
	}
	// The conversation engine asks through these two methods, without importing llm.
	var asked interface {
		Temporary() bool
		RetryDelay() time.Duration
	}
	if !errors.As(wrapped, &asked) || !asked.Temporary() {
		t.Errorf("errors.As(%v, Temporary/RetryDelay) failed or says not temporary", wrapped)
	}
	if d := (&Error{RetryAfter: 3 * time.Second}).RetryDelay(); d != 3*time.Second {
		t.Errorf("RetryDelay() = %v, want 3s", d)
	}
	canceled := &Error{Code: CodeCanceled, Err: context.Canceled}
	if !errors.Is(canceled, context.Canceled) {
		t.Errorf("errors.Is(%v, context.Canceled) = false, want true through Unwrap", canceled)
	}
}
