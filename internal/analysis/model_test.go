package analysis

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"switchboard/internal/assistant"
	"switchboard/internal/llm"
	"switchboard/internal/llm/llmtest"
	"switchboard/internal/llm/openai"
)

var modelTurns = []Turn{
	{RoleAssistant, "Hi! What day would suit you?"},
	{RoleUser, "Tuesday at three, and my name is Ana."},
	{RoleAssistant, "You are booked for Tuesday at 3 PM. Goodbye!"},
}

var modelPlan = Plan{
	SummaryPrompt:           "One sentence, in the third person.",
	SuccessEvaluationRubric: "Success when an appointment was booked.",
	StructuredDataSchema:    json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"hour":{"type":"integer","minimum":0,"maximum":23}},"required":["name","hour"]}`),
}

func record(args string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llm.ToolCall{{Name: recordTool, Arguments: json.RawMessage(args)}}}
}

func modelOf(srv *llmtest.Server) Model {
	return Model{Client: openai.New(srv.URL, llmtest.APIKey, nil), Provider: "openai", Name: "gpt-test"}
}

// TestAnalyzeWithModel: the model's summary, rubric verdict and reasoning
// and structured data are kept, the data validated against the schema;
// the request carries the prompt, the rubric, the transcript and the
// schema as the record tool's parameters; tokens and latency are counted.
func TestAnalyzeWithModel(t *testing.T) {
	srv := llmtest.NewOpenAI(t, record(`{"summary":"Ana booked Tuesday at 3 PM.","successEvaluation":true,"successReasoning":"A slot was booked.","structuredData":{"name":"Ana","hour":15}}`))
	defer srv.Close()
	r, u, why, err := AnalyzeWithModel(context.Background(), modelOf(srv), Input{Turns: modelTurns, Plan: modelPlan})
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary != "Ana booked Tuesday at 3 PM." || r.SuccessEvaluation == nil || !*r.SuccessEvaluation || why != "A slot was booked." {
		t.Errorf("result = %+v, reasoning %q", r, why)
	}
	if r.StructuredData["name"] != "Ana" || r.StructuredData["hour"] != 15.0 {
		t.Errorf("structuredData = %v", r.StructuredData)
	}
	if r.Sentiment.Label == "" || !strings.Contains(strings.Join(r.Notes, "|"), NoteSentimentOffline) {
		t.Errorf("sentiment %+v, notes %v: want the offline sentiment and a note saying so", r.Sentiment, r.Notes)
	}
	if u.Provider != "openai" || u.Model != "gpt-test" || u.Requests != 1 || u.LatencyMs <= 0 {
		t.Errorf("usage = %+v", u)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	body := string(reqs[0])
	for _, want := range []string{"One sentence, in the third person.", "Success when an appointment was booked.", "Caller: Tuesday at three", `"name":"record_analysis"`, `"maximum":23`} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %q:\n%s", want, body)
		}
	}
}

// TestAnalyzeWithModelRetriesBadData: data that fails the schema is sent
// back once with the problems; a second failure leaves it null, noted.
func TestAnalyzeWithModelRetriesBadData(t *testing.T) {
	bad := record(`{"summary":"s","successEvaluation":true,"structuredData":{"name":"Ana","hour":"three"}}`)
	good := record(`{"summary":"s","successEvaluation":true,"structuredData":{"name":"Ana","hour":15}}`)
	srv := llmtest.NewOpenAI(t, bad, good)
	defer srv.Close()
	r, u, _, err := AnalyzeWithModel(context.Background(), modelOf(srv), Input{Turns: modelTurns, Plan: modelPlan})
	if err != nil || r.StructuredData["hour"] != 15.0 || u.Requests != 2 {
		t.Fatalf("bad then good = %+v, %+v, %v; want the second answer's data after 2 requests", r, u, err)
	}
	if second := string(srv.Requests()[1]); !strings.Contains(second, "structuredData does not match the schema") || !strings.Contains(second, "/hour") {
		t.Errorf("the retry does not say what was wrong:\n%s", second)
	}

	srv2 := llmtest.NewOpenAI(t, bad, bad)
	defer srv2.Close()
	r, _, _, err = AnalyzeWithModel(context.Background(), modelOf(srv2), Input{Turns: modelTurns, Plan: modelPlan})
	if err != nil || r.StructuredData != nil || !strings.Contains(strings.Join(r.Notes, "|"), NoteModelNoData) || r.Summary != "s" {
		t.Errorf("bad twice = %+v, %v; want null data with a note and the rest kept", r, err)
	}
}

// TestAnalyzeWithModelFailures: a model that is down, or answers without
// the analysis, is an error (the worker retries, then fails the analysis);
// JSON written as text is read.
func TestAnalyzeWithModelFailures(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Status: 503}, llmtest.Turn{Status: 503}, llmtest.Turn{Status: 503})
	defer srv.Close()
	if _, _, _, err := AnalyzeWithModel(context.Background(), modelOf(srv), Input{Turns: modelTurns, Plan: modelPlan}); err == nil {
		t.Error("a model answering 503: no error")
	}
	srv2 := llmtest.NewOpenAI(t, llmtest.Turn{Text: []string{"I think it went well."}})
	defer srv2.Close()
	if _, _, _, err := AnalyzeWithModel(context.Background(), modelOf(srv2), Input{Turns: modelTurns, Plan: modelPlan}); err == nil || !strings.Contains(err.Error(), "without calling record_analysis") {
		t.Errorf("a model answering prose = %v, want an error", err)
	}
	srv3 := llmtest.NewOpenAI(t, llmtest.Turn{Text: []string{"```json\n", `{"summary":"t","successEvaluation":false,"structuredData":{"name":"Ana","hour":9}}`, "\n```"}})
	defer srv3.Close()
	r, _, _, err := AnalyzeWithModel(context.Background(), modelOf(srv3), Input{Turns: modelTurns, Plan: modelPlan})
	if err != nil || r.Summary != "t" || r.StructuredData["hour"] != 9.0 {
		t.Errorf("JSON as text = %+v, %v", r, err)
	}
}

// TestWorkerModelChoice: a model assistant's calls are analysed by its
// own model; a flow's by the server's analysis model; with neither, none.
func TestWorkerModelChoice(t *testing.T) {
	c := openai.New("http://127.0.0.1:1/v1", "k", nil)
	model := assistant.Assistant{Model: assistant.Model{Provider: "openai", Model: "own"}}
	flow := assistant.Assistant{Model: assistant.Model{Provider: assistant.ProviderFlow}, Flow: json.RawMessage(`{"start":"a","nodes":{"a":{"type":"end","text":"x"}}}`)}
	for _, tc := range []struct {
		name     string
		w        Worker
		a        *assistant.Assistant
		want     string
		wantNone bool
	}{
		{"model assistant", Worker{Models: map[string]llm.Client{"openai": c}}, &model, "own", false},
		{"model assistant over the fallback", Worker{Models: map[string]llm.Client{"openai": c}, Fallback: ModelChoice{"openai", "server"}}, &model, "own", false},
		{"flow with the server's model", Worker{Models: map[string]llm.Client{"openai": c}, Fallback: ModelChoice{"openai", "server"}}, &flow, "server", false},
		{"flow without one", Worker{Models: map[string]llm.Client{"openai": c}}, &flow, "", true},
		{"deleted assistant, server's model", Worker{Models: map[string]llm.Client{"openai": c}, Fallback: ModelChoice{"openai", "server"}}, nil, "server", false},
		{"provider not configured", Worker{}, &model, "", true},
	} {
		m, ok := tc.w.model(tc.a)
		if ok == tc.wantNone || m.Name != tc.want {
			t.Errorf("%s: model = %+v, %v; want %q", tc.name, m, ok, tc.want)
		}
	}
}

// TestAnalyzeWithModelNoTranscript: nothing is asked about an empty call.
func TestAnalyzeWithModelNoTranscript(t *testing.T) {
	srv := llmtest.NewOpenAI(t)
	defer srv.Close()
	r, u, _, err := AnalyzeWithModel(context.Background(), modelOf(srv), Input{Plan: modelPlan})
	if err != nil || u.Requests != 0 || len(srv.Requests()) != 0 || !strings.Contains(strings.Join(r.Notes, "|"), NoteNoTranscript) {
		t.Errorf("empty call = %+v, %+v, %v; want the offline analysis and no request", r, u, err)
	}
}
