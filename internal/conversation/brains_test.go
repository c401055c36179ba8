package conversation

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/llm"
	"switchboard/internal/llm/anthropic"
	"switchboard/internal/llm/llmtest"
	"switchboard/internal/llm/openai"
	"switchboard/internal/webhook"
)

// TestModelBrainEndCall: with a provider streaming text and then calling a
// declared HTTP tool and endCall, the assistant answers, the tool is called
// (signed), and the call ends — for both wire formats.
func TestModelBrainEndCall(t *testing.T) {
	var toolBody []byte
	var toolHeader http.Header
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		toolBody, _ = io.ReadAll(r.Body)
		toolHeader = r.Header.Clone()
		w.Write([]byte(`{"confirmed": true, "slot": "10:00"}`))
	}))
	defer tool.Close()

	for _, prov := range []string{"openai", "anthropic"} {
		t.Run(prov, func(t *testing.T) {
			script := []llmtest.Turn{
				{Text: []string{"Let me ", "check that."}, ToolCalls: []llm.ToolCall{{Name: "checkSlot", Arguments: json.RawMessage(`{"day":"tuesday"}`)}}},
				{Text: []string{"Tuesday at ten is free and booked. ", "Goodbye!"}, ToolCalls: []llm.ToolCall{{Name: "endCall", Arguments: json.RawMessage(`{"reason":"booked"}`)}}},
			}
			var srv *llmtest.Server
			var client llm.Client
			if prov == "openai" {
				srv = llmtest.NewOpenAI(t, script...)
				client = openai.New(srv.URL, llmtest.APIKey, nil)
			} else {
				srv = llmtest.NewAnthropic(t, script...)
				client = anthropic.New(srv.URL, llmtest.APIKey, nil)
			}
			defer srv.Close()
			a := testAssistant()
			a.Model = assistant.Model{Provider: prov, Model: "test-model"}
			a.SystemPrompt = "You book appointments."
			a.ToolSecret = webhook.NewSecret()
			a.Tools = []assistant.Tool{{Name: "checkSlot", URL: tool.URL, Parameters: json.RawMessage(`{"type":"object"}`), TimeoutSeconds: 5}}
			brains := &Brains{Models: map[string]llm.Client{prov: client}, Tools: func(c call.Call, a assistant.Assistant) ToolRunner {
				return &HTTPTools{Tools: a.Tools, Secret: a.ToolSecret, CallID: c.ID, Client: http.DefaultClient}
			}}
			c := call.Call{ID: "call_m", OrgID: "org_m"}
			brain, err := brains.New(context.Background(), c, a)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			in := make(chan Input, 1)
			in <- Input{Kind: UserText, Text: "Is Tuesday free?"}
			reason := Run(context.Background(), Config{Call: c, Assistant: a, Brain: brain, Turns: rec, Ender: rec}, in, rec)
			if reason != call.ReasonAssistantEnded {
				t.Errorf("Run = %q, want %s; events %q", reason, call.ReasonAssistantEnded, rec.events)
			}
			last := rec.turns[len(rec.turns)-1]
			if last.Role != call.RoleAssistant || !strings.Contains(last.Text, "Let me check that.") || !strings.Contains(last.Text, "Goodbye!") {
				t.Errorf("assistant turn = %q, want both rounds' text", last.Text)
			}
			if !strings.Contains(string(toolBody), `"day":"tuesday"`) || !strings.Contains(string(toolBody), `"callId":"call_m"`) {
				t.Errorf("tool got %s", toolBody)
			}
			if err := webhook.Verify([]string{a.ToolSecret}, toolHeader, toolBody, timeNow(), 0); err != nil {
				t.Errorf("tool request signature: %v", err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("provider got %d requests, want 2", len(reqs))
			}
			if !strings.Contains(string(reqs[0]), "You book appointments.") || !strings.Contains(string(reqs[0]), "endCall") || !strings.Contains(string(reqs[0]), "Hello!") {
				t.Errorf("first request lacks the system prompt, the endCall tool or the first message: %s", reqs[0])
			}
			if !strings.Contains(string(reqs[1]), "10:00") {
				t.Errorf("second request lacks the tool result: %s", reqs[1])
			}
		})
	}
}

// TestModelBrainProviderDown: a provider that keeps failing ends the call
// with the fallback, not a hang.
func TestModelBrainProviderDown(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Status: 503}, llmtest.Turn{Status: 503})
	defer srv.Close()
	a := testAssistant()
	a.Model = assistant.Model{Provider: "openai", Model: "m"}
	brains := &Brains{Models: map[string]llm.Client{"openai": openai.New(srv.URL, llmtest.APIKey, nil)}}
	brain, err := brains.New(context.Background(), call.Call{ID: "c"}, a)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	in := make(chan Input, 1)
	in <- Input{Kind: UserText, Text: "hello"}
	if reason := Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: brain, Turns: rec, Ender: rec}, in, rec); reason != call.ReasonModelFailed {
		t.Errorf("Run with a provider answering 503 = %q, want %s", reason, call.ReasonModelFailed)
	}
}

// TestModelBrainRetryKeepsHistory: a transient provider failure is retried
// once without sending the caller's words twice.
func TestModelBrainRetryKeepsHistory(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Status: 503}, llmtest.Turn{Text: []string{"Hi there."}})
	defer srv.Close()
	a := testAssistant()
	a.Model = assistant.Model{Provider: "openai", Model: "m"}
	brains := &Brains{Models: map[string]llm.Client{"openai": openai.New(srv.URL, llmtest.APIKey, nil)}}
	brain, err := brains.New(context.Background(), call.Call{ID: "c"}, a)
	if err != nil {
		t.Fatal(err)
	}
	a.SilenceTimeoutSeconds = 1 // ends the call after the reply
	rec := &recorder{}
	in := make(chan Input, 1)
	in <- Input{Kind: UserText, Text: "hello"}
	Run(context.Background(), Config{Call: call.Call{ID: "c"}, Assistant: a, Brain: brain, Turns: rec, Ender: rec}, in, rec)
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("provider requests = %d, want 2 (a failure and its retry)", len(reqs))
	}
	if n := strings.Count(string(reqs[1]), `"hello"`); n != 1 {
		t.Errorf("the retry sent the caller's words %d times, want once: %s", n, reqs[1])
	}
}

// TestModelBrainHeard: a barge-in truncates the model's side of the last
// exchange to what the caller heard; tool calls stay, and an assistant
// message left with nothing heard is dropped.
func TestModelBrainHeard(t *testing.T) {
	m := &modelBrain{history: []llm.Message{
		{Role: llm.RoleAssistant, Content: "Hello."},
		{Role: llm.RoleUser, Content: "book me"},
		{Role: llm.RoleAssistant, Content: "Let me check.", ToolCalls: []llm.ToolCall{{ID: "t1", Name: "slots"}}},
		{Role: llm.RoleTool, ToolCallID: "t1", Content: `{"slots":["9am"]}`},
		{Role: llm.RoleAssistant, Content: "We have nine in the morning free."},
	}}
	m.Heard("Let me check. We have nine")
	got := m.history[2:]
	if got[0].Content != "Let me check." || len(got[0].ToolCalls) != 1 || got[2].Content != "We have nine" {
		t.Errorf("history after Heard = %+v", got)
	}
	m.Heard("Let")
	if n := len(m.history); m.history[2].Content != "Let" || m.history[n-1].Role != llm.RoleTool {
		t.Errorf("history after Heard(\"Let\") = %+v, want the final message dropped", m.history)
	}
	if m.history[0].Content != "Hello." {
		t.Errorf("an earlier exchange changed: %+v", m.history[0])
	}
}

// TestFlowBrainRunsInTheCallsZone: a flow reads relative dates in the
// call's zone (its timezone variable), not the server's, and its texts
// name the call's variables.
func TestFlowBrainRunsInTheCallsZone(t *testing.T) {
	a := testAssistant()
	a.Model = assistant.Model{Provider: assistant.ProviderFlow}
	a.Flow = json.RawMessage(`{"start": "when", "nodes": {
		"when": {"type": "ask", "text": "Hi {{contact.firstName | there}}. Which day?", "branches": [{"match": {"kind": "date"}, "capture": "day", "next": "bye"}]},
		"bye": {"type": "end", "text": "Booked for {{day}}.", "success": true}}}`)
	// 23:30 UTC on Tuesday, December 1: already Wednesday in Tokyo.
	now := func() time.Time { return time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC) }
	brains := &Brains{Now: now, Location: time.UTC}
	for zone, want := range map[string]string{"": "Wednesday, December 2, 2026", "Asia/Tokyo": "Thursday, December 3, 2026"} {
		c := call.Call{ID: "c"}
		if zone != "" {
			c.Variables = json.RawMessage(`{"timezone":"` + zone + `","contact":{"firstName":"Ada"}}`)
		}
		brain, err := brains.New(context.Background(), c, a)
		if err != nil {
			t.Fatal(err)
		}
		open, err := brain.Open(context.Background(), func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		if greet := map[string]string{"": "Hi there. Which day?", "Asia/Tokyo": "Hi Ada. Which day?"}[zone]; open.Text != greet {
			t.Errorf("zone %q: Open = %q, want %q", zone, open.Text, greet)
		}
		r, err := brain.Respond(context.Background(), "tomorrow", func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		if r.Text != "Booked for "+want+"." {
			t.Errorf("zone %q: \"tomorrow\" = %q, want %s", zone, r.Text, want)
		}
	}
}
