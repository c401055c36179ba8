package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/vendorapi/vendorapitest"
)

// Provider binds a client implementation to the fake speaking its wire format.
type Provider struct {
	// Name is the client's llm.Error.Provider.
	Name string
	// NewServer starts the fake (NewOpenAI or NewAnthropic).
	NewServer func(t testing.TB, script ...Turn) *Server
	// NewClient builds the client under test for a base URL and key.
	NewClient func(baseURL, apiKey string) llm.Client
}

// Exercise runs the behaviour every llm.Client must have against its fake:
// streaming text, tool calls in pieces, a tool round trip, the
// classification of every failure, cancellation and the first-token time.
// Each provider package calls it from one test; wire-format details (how a
// tool result is encoded) are tested next to each client.
func Exercise(t *testing.T, p Provider) {
	t.Helper()

	type testBundle struct {
		srv    *Server
		client llm.Client
	}
	setup := func(t *testing.T, script ...Turn) *testBundle {
		t.Helper()
		srv := p.NewServer(t, script...)
		return &testBundle{srv: srv, client: p.NewClient(srv.URL, APIKey)}
	}

	t.Run("Text", func(t *testing.T) {
		t.Parallel()
		want := []string{"Hello", ", this is ", "Ada from the clinic", "."}
		bundle := setup(t, Turn{Text: want, InputTokens: 21, OutputTokens: 7})
		res, deltas, err := collect(t.Context(), bundle.client, baseRequest())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if !reflect.DeepEqual(deltas, want) {
			t.Errorf("Stream deltas = %q, want %q", deltas, want)
		}
		if joined := strings.Join(want, ""); res.Text != joined {
			t.Errorf("Result.Text = %q, want %q", res.Text, joined)
		}
		if res.FinishReason != llm.FinishStop || len(res.ToolCalls) != 0 {
			t.Errorf("Result = finish %q with %d tool calls, want %q and none", res.FinishReason, len(res.ToolCalls), llm.FinishStop)
		}
		if res.InputTokens != 21 || res.OutputTokens != 7 {
			t.Errorf("Result tokens = %d in, %d out; want 21, 7", res.InputTokens, res.OutputTokens)
		}
		if res.FirstTokenAfter <= 0 {
			t.Errorf("Result.FirstTokenAfter = %v, want > 0", res.FirstTokenAfter)
		}
	})

	t.Run("ToolCallInPieces", func(t *testing.T) {
		t.Parallel()
		call := llm.ToolCall{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris","unit":"celsius","note":"météo ☀ for the caller"}`)}
		bundle := setup(t, Turn{Text: []string{"Let me check."}, ToolCalls: []llm.ToolCall{call}})
		res, deltas, err := collect(t.Context(), bundle.client, toolRequest())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if got := strings.Join(deltas, ""); got != "Let me check." || res.Text != got {
			t.Errorf("text = deltas %q, Result.Text %q; want %q", got, res.Text, "Let me check.")
		}
		if res.FinishReason != llm.FinishToolCalls {
			t.Errorf("Result.FinishReason = %q, want %q", res.FinishReason, llm.FinishToolCalls)
		}
		if len(res.ToolCalls) != 1 {
			t.Fatalf("Result.ToolCalls = %+v, want one call", res.ToolCalls)
		}
		got := res.ToolCalls[0]
		if got.ID == "" || got.Name != call.Name || !SameJSON(got.Arguments, call.Arguments) {
			t.Errorf("Result.ToolCalls[0] = {%q %q %s}, want a non-empty id, %q, %s", got.ID, got.Name, got.Arguments, call.Name, call.Arguments)
		}
	})

	t.Run("ParallelToolCalls", func(t *testing.T) {
		t.Parallel()
		calls := []llm.ToolCall{
			{ID: "call_a1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_b2", Name: "book_table", Arguments: json.RawMessage(`{"time":"19:30","people":4}`)},
		}
		bundle := setup(t, Turn{ToolCalls: calls})
		res, deltas, err := collect(t.Context(), bundle.client, toolRequest())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if len(deltas) != 0 || res.Text != "" {
			t.Errorf("text = deltas %q, Result.Text %q; want none", deltas, res.Text)
		}
		if res.FinishReason != llm.FinishToolCalls {
			t.Errorf("Result.FinishReason = %q, want %q", res.FinishReason, llm.FinishToolCalls)
		}
		if len(res.ToolCalls) != len(calls) {
			t.Fatalf("Result.ToolCalls = %+v, want %d calls", res.ToolCalls, len(calls))
		}
		for i, want := range calls {
			got := res.ToolCalls[i]
			if got.ID != want.ID || got.Name != want.Name || !SameJSON(got.Arguments, want.Arguments) {
				t.Errorf("Result.ToolCalls[%d] = {%q %q %s}, want {%q %q %s}", i, got.ID, got.Name, got.Arguments, want.ID, want.Name, want.Arguments)
			}
		}
	})

	t.Run("ToolRoundTrip", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t,
			Turn{ToolCalls: []llm.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}},
			Turn{Text: []string{"It is 18 degrees ", "in Paris."}},
		)
		req := toolRequest()
		first, _, err := collect(t.Context(), bundle.client, req)
		if err != nil {
			t.Fatalf("Stream (turn 1): %v", err)
		}
		if len(first.ToolCalls) != 1 {
			t.Fatalf("turn 1 tool calls = %+v, want one", first.ToolCalls)
		}
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: first.Text, ToolCalls: first.ToolCalls},
			llm.Message{Role: llm.RoleTool, ToolCallID: first.ToolCalls[0].ID, Content: `{"temp_c":18}`},
		)
		second, _, err := collect(t.Context(), bundle.client, req)
		if err != nil {
			t.Fatalf("Stream (turn 2, with the tool result): %v", err)
		}
		if second.Text != "It is 18 degrees in Paris." || second.FinishReason != llm.FinishStop {
			t.Errorf("turn 2 = %q (%s), want %q (stop)", second.Text, second.FinishReason, "It is 18 degrees in Paris.")
		}
		if n := len(bundle.srv.Requests()); n != 2 {
			t.Errorf("server received %d requests, want 2", n)
		}
	})

	t.Run("MaxTokens", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Turn{Text: []string{"The opening hours are"}, MaxTokens: true})
		res, _, err := collect(t.Context(), bundle.client, baseRequest())
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if res.FinishReason != llm.FinishLength {
			t.Errorf("Result.FinishReason = %q, want %q", res.FinishReason, llm.FinishLength)
		}
	})

	vendorapitest.ExerciseClassification(t, p.Name, func(t *testing.T, status int, retryAfter string) error {
		bundle := setup(t, Turn{Status: status, RetryAfter: retryAfter})
		_, _, err := collect(t.Context(), bundle.client, baseRequest())
		return err
	}, vendorapitest.Refusal{Status: 529, Retryable: true}) // Anthropic's overloaded_error

	t.Run("WrongKey", func(t *testing.T) {
		t.Parallel()
		srv := p.NewServer(t)
		const key = "sk-wrong-7c1d5e9a3b8f2d6e4a0c"
		_, _, err := collect(t.Context(), p.NewClient(srv.URL, key), baseRequest())
		le := vendorapitest.AsError(t, err)
		if le.Status != http.StatusUnauthorized || le.Retryable {
			t.Errorf("Stream with a wrong key: Status %d, Retryable %v; want 401, not retryable", le.Status, le.Retryable)
		}
		if strings.Contains(err.Error(), key) {
			t.Errorf("Stream with a wrong key: error %q contains the key", err)
		}
	})

	t.Run("MidStreamError", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Turn{Text: []string{"One", " two", " three", " four"}, MidStreamError: true})
		res, deltas, err := collect(t.Context(), bundle.client, baseRequest())
		le := vendorapitest.AsError(t, err)
		if !le.Retryable || le.Message == "" {
			t.Errorf("Stream with an error mid-stream: %+v, want retryable with a message", le)
		}
		if res.Text != "One two" || strings.Join(deltas, "") != res.Text {
			t.Errorf("partial Result.Text = %q, deltas %q; want %q for both", res.Text, deltas, "One two")
		}
	})

	t.Run("Truncated", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Turn{Text: []string{"Your appointment", " is at"}, Truncate: true})
		res, _, err := collect(t.Context(), bundle.client, baseRequest())
		le := vendorapitest.AsError(t, err)
		if !le.Retryable || le.Code != llm.CodeTruncated {
			t.Errorf("Stream of a truncated stream: %+v, want retryable %q", le, llm.CodeTruncated)
		}
		if res.Text != "Your appointment is at" {
			t.Errorf("partial Result.Text = %q, want %q", res.Text, "Your appointment is at")
		}
	})

	t.Run("CancelMidStream", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Turn{Text: []string{"Sure, let me"}, Hang: true})
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var canceledAt time.Time
		done := make(chan struct{})
		var (
			res llm.Result
			err error
		)
		go func() {
			defer close(done)
			res, err = bundle.client.Stream(ctx, baseRequest(), func(string) {
				canceledAt = time.Now()
				cancel() // the caller barged in
			})
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Stream did not return within 5s of its context being canceled")
		}
		if took := time.Since(canceledAt); took > time.Second {
			t.Errorf("Stream returned %v after cancel, want promptly", took)
		}
		le := vendorapitest.AsError(t, err)
		if !errors.Is(err, context.Canceled) || le.Retryable || le.Code != llm.CodeCanceled {
			t.Errorf("Stream canceled: %v (%+v), want errors.Is context.Canceled, code %q, not retryable", err, le, llm.CodeCanceled)
		}
		if res.Text != "Sure, let me" {
			t.Errorf("partial Result.Text = %q, want %q", res.Text, "Sure, let me")
		}
	})

	t.Run("Deadline", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, Turn{Delay: time.Minute, Text: []string{"late"}})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, _, err := collect(ctx, bundle.client, baseRequest())
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("Stream took %v past a 100ms deadline", took)
		}
		le := vendorapitest.AsError(t, err)
		if !errors.Is(err, context.DeadlineExceeded) || le.Code != llm.CodeDeadline || !le.Retryable {
			t.Errorf("Stream past its deadline: %v (%+v), want errors.Is context.DeadlineExceeded, code %q, retryable", err, le, llm.CodeDeadline)
		}
	})

	t.Run("FirstTokenAfter", func(t *testing.T) {
		t.Parallel()
		const delay = 80 * time.Millisecond
		bundle := setup(t, Turn{Delay: delay, Interval: 40 * time.Millisecond, Text: []string{"Hi", " there", "."}})
		start := time.Now()
		res, _, err := collect(t.Context(), bundle.client, baseRequest())
		total := time.Since(start)
		if err != nil {
			t.Fatalf("Stream: %v", err)
		}
		// The first text comes after the delay and before the last two intervals.
		if res.FirstTokenAfter < delay || res.FirstTokenAfter > total-60*time.Millisecond {
			t.Errorf("Result.FirstTokenAfter = %v, want in [%v, %v]", res.FirstTokenAfter, delay, total-60*time.Millisecond)
		}
	})

	t.Run("InvalidRequest", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		req := baseRequest()
		req.Model = ""
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleTool, Content: "orphan"})
		_, _, err := collect(t.Context(), bundle.client, req)
		le := vendorapitest.AsError(t, err)
		if le.Code != llm.CodeInvalidRequest || le.Retryable || !strings.Contains(le.Message, "model") || !strings.Contains(le.Message, "messages[1].toolCallId") {
			t.Errorf("Stream(invalid request) = %+v, want %q naming model and messages[1].toolCallId", le, llm.CodeInvalidRequest)
		}
		if n := len(bundle.srv.Requests()); n != 0 {
			t.Errorf("server received %d requests, want none", n)
		}
	})
}

// collect streams req and returns the result, the deltas in order, and the error.
func collect(ctx context.Context, c llm.Client, req llm.Request) (llm.Result, []string, error) {
	var (
		mu     sync.Mutex
		deltas []string
	)
	res, err := c.Stream(ctx, req, func(s string) {
		mu.Lock()
		defer mu.Unlock()
		deltas = append(deltas, s)
	})
	return res, deltas, err
}

func baseRequest() llm.Request {
	return llm.Request{
		Model:    "test-model",
		System:   "You are the receptionist of a small clinic. Keep answers short.",
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Hi, who is this?"}},
	}
}

// Tools are the tools the suite's requests offer.
var Tools = []llm.Tool{
	{Name: "get_weather", Description: "Current weather in a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
	{Name: "book_table", Description: "Book a table.", Parameters: json.RawMessage(`{"type":"object","properties":{"time":{"type":"string"},"people":{"type":"integer"}}}`)},
}

func toolRequest() llm.Request {
	req := baseRequest()
	req.Messages = []llm.Message{{Role: llm.RoleUser, Content: "What's the weather in Paris?"}}
	req.Tools = Tools
	return req
}

// SameJSON reports whether a and b are the same JSON value, whatever their
// spacing and key order.
func SameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
