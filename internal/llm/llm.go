// Package llm declares what the conversation engine needs from a large
// language model: one streamed completion at a time, its text as it arrives
// (so speech can start before the model finishes), the tools the model asked
// to call, and failures classified so the engine, not the client, decides
// whether to retry, wait or give up.
//
// Providers implement Client in their own sub-packages: openai (OpenAI and
// every server that speaks its Chat Completions dialect: Ollama, vLLM,
// llama.cpp) and anthropic (the Messages API). llmtest holds fake servers that
// speak both wire formats and the suite every client passes.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Role is who wrote a Message.
type Role string

const (
	// RoleSystem is an instruction to the model. Request.System is the usual
	// place for the prompt; system messages in the history are kept in place
	// where the provider allows it.
	RoleSystem Role = "system"
	// RoleUser is what the caller said.
	RoleUser Role = "user"
	// RoleAssistant is what the model said, including the tools it called.
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call, answering ToolCallID.
	RoleTool Role = "tool"
)

// Message is one turn of the conversation history, in the provider-neutral
// shape; each client translates it to its API (an OpenAI "tool" message, an
// Anthropic tool_result block, …).
type Message struct {
	Role    Role
	Content string
	// ToolCalls are the calls an assistant message made; they are sent back
	// with the history so the provider can match the results to them.
	ToolCalls []ToolCall
	// ToolCallID is, on a RoleTool message, the ToolCall.ID it answers.
	ToolCallID string
}

// Tool is a function the model may call.
type Tool struct {
	// Name must match ^[a-zA-Z0-9_-]{1,64}$, the rule both APIs enforce.
	Name        string
	Description string
	// Parameters is a JSON Schema object describing the arguments; empty
	// means the tool takes none.
	Parameters json.RawMessage
}

// ToolCall is the model asking for one tool to be run.
type ToolCall struct {
	// ID correlates the call with its result. Servers that omit it
	// (Ollama, llama.cpp) get one made up by the client, so it is never empty.
	ID   string
	Name string
	// Arguments is always valid JSON: "{}" when the model sent none, and a
	// JSON string holding the raw text when the model sent text that is not
	// JSON (a truncated call, a confused small model), so the tool can report
	// the problem back to the model instead of the stream failing.
	Arguments json.RawMessage
}

// Request is one completion to stream.
type Request struct {
	Model string
	// System is the system prompt (the top-level "system" field for
	// Anthropic, a leading system message for OpenAI).
	System   string
	Messages []Message
	Tools    []Tool
	// Temperature is left to the provider's default when nil.
	Temperature *float64
	// MaxTokens caps the reply; 0 leaves it to the provider (Anthropic, which
	// requires it, gets 1024).
	MaxTokens int
}

// The normalized values of Result.FinishReason.
const (
	// FinishStop means the model finished its reply.
	FinishStop = "stop"
	// FinishToolCalls means the model stopped to have tools run; the engine
	// runs Result.ToolCalls and asks again with their results.
	FinishToolCalls = "tool_calls"
	// FinishLength means the reply hit MaxTokens; text and tool arguments may
	// be cut short.
	FinishLength = "length"
)

// Result is a finished completion. On error, Stream returns what arrived
// before the failure, so the engine knows what the caller already heard.
type Result struct {
	Text      string
	ToolCalls []ToolCall
	// FinishReason is FinishStop, FinishToolCalls or FinishLength whatever
	// the provider called it; any other provider reason (content filter,
	// refusal) reads as FinishStop.
	FinishReason string
	// InputTokens and OutputTokens are the provider's usage report; zero
	// when it sent none. Anthropic's cached input tokens are included.
	InputTokens, OutputTokens int
	// FirstTokenAfter is the time from the start of Stream to the first text
	// or tool-call fragment: the model's share of the caller's wait.
	FirstTokenAfter time.Duration
}

// Client streams one completion. onDelta, which may be nil, receives text as
// it arrives, never empty and never concurrently; Stream returns when the
// stream ends. Failures are *Error; canceling ctx ends the stream promptly.
type Client interface {
	Stream(ctx context.Context, req Request, onDelta func(string)) (Result, error)
}

// Validate reports every problem with the request, each naming its field,
// so a bad request fails before it costs a round trip.
func (r Request) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if r.Model == "" {
		bad("model", "required")
	}
	if len(r.Messages) == 0 {
		bad("messages", "at least one message is required")
	}
	if r.MaxTokens < 0 {
		bad("maxTokens", "must be 0 (provider default) or positive, got %d", r.MaxTokens)
	}
	if r.Temperature != nil && *r.Temperature < 0 {
		bad("temperature", "must not be negative, got %v", *r.Temperature)
	}
	for i, m := range r.Messages {
		field := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case RoleSystem, RoleUser:
		case RoleAssistant:
			for j, tc := range m.ToolCalls {
				f := fmt.Sprintf("%s.toolCalls[%d]", field, j)
				if tc.ID == "" {
					bad(f+".id", "required")
				}
				if tc.Name == "" {
					bad(f+".name", "required")
				}
				if len(tc.Arguments) > 0 && !json.Valid(tc.Arguments) {
					bad(f+".arguments", "must be valid JSON")
				}
			}
		case RoleTool:
			if m.ToolCallID == "" {
				bad(field+".toolCallId", "required on a tool message")
			}
		default:
			bad(field+".role", "must be system, user, assistant or tool, got %q", m.Role)
		}
		if m.Role != RoleAssistant && len(m.ToolCalls) > 0 {
			bad(field+".toolCalls", "only assistant messages carry tool calls")
		}
	}
	seen := map[string]bool{}
	for i, t := range r.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		if !validToolName(t.Name) {
			bad(field+".name", "must match ^[a-zA-Z0-9_-]{1,64}$, got %q", t.Name)
		} else if seen[t.Name] {
			bad(field+".name", "duplicate tool %q", t.Name)
		}
		seen[t.Name] = true
		if len(t.Parameters) > 0 {
			var obj map[string]json.RawMessage
			if json.Unmarshal(t.Parameters, &obj) != nil {
				bad(field+".parameters", "must be a JSON Schema object")
			}
		}
	}
	return errors.Join(errs...)
}

func validToolName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, c := range []byte(s) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}
