package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"switchboard/internal/llm"
)

func TestArguments(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "{}"},
		{"  ", "{}"},
		{`{ "a" : 1 }`, `{"a":1}`},
		{`{"a":`, `"{\"a\":"`},
		{`[1, 2]`, `[1,2]`},
		{"not json", `"not json"`},
	}
	for _, tt := range tests {
		got := Arguments([]byte(tt.in))
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("Arguments(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]string{`{"a":1}`: `{"a":1}`, `[]`: `{}`, `"x"`: `{}`, `null`: `{}`, ``: `{}`} {
		if got := ObjectOrEmpty(json.RawMessage(in)); string(got) != want {
			t.Errorf("ObjectOrEmpty(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	ep := Endpoint("p", "sk-secret", nil, nil, nil)
	got := Invalid(&ep, errors.New("model: required\nmessages: at least one message is required"))
	want := llm.Error{Provider: "p", Code: llm.CodeInvalidRequest, Message: "model: required; messages: at least one message is required"}
	if *got != want {
		t.Errorf("Invalid(two problems) = %+v, want %+v", *got, want)
	}
}

func TestEndpoint(t *testing.T) {
	t.Parallel()
	ep := Endpoint("p", "sk-secret", nil, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got := ep.Failure(ctx, llm.CodeNetwork, true, errors.New("read: sk-secret"))
	if got.Code != llm.CodeCanceled || got.Message != "request canceled" || got.Retryable || !errors.Is(got, context.Canceled) {
		t.Errorf("Failure(canceled ctx) = %+v, want canceled, \"request canceled\", not retryable", got)
	}
	timedOut := fmt.Errorf("Post: %w", context.DeadlineExceeded) // what an http.Client Timeout unwraps to
	got = ep.Failure(context.Background(), llm.CodeNetwork, true, timedOut)
	if got.Code != llm.CodeNetwork || !got.Retryable {
		t.Errorf("Failure(timed-out request) = %+v, want a retryable %q, as the model clients always said", got, llm.CodeNetwork)
	}
}
