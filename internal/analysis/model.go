package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/llm"
)

// Model is the language model an analysis asks (docs/ARCHITECTURE.md,
// "Analysis by the model").
type Model struct {
	Client   llm.Client
	Provider string // "openai", "anthropic": for the record
	Name     string // the model's name, as the provider knows it
}

// Usage is what asking the model cost, kept with the analysis.
type Usage struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	InputTokens  int     `json:"inputTokens"`
	OutputTokens int     `json:"outputTokens"`
	LatencyMs    float64 `json:"latencyMs"`
	Requests     int     `json:"requests"`
}

// recordTool is the one tool the model is offered: its answer.
const recordTool = "record_analysis"

// Notes of an analysis by the model.
const (
	NoteSentimentOffline = "sentiment is offline (lexicon)"
	NoteModelNoData      = "the model's structured data did not match the schema twice; structuredData is null"
)

// AnalyzeWithModel asks m for the summary, the success evaluation (with a
// rubric, and its reasoning) and the structured data of in, and scores the
// sentiment offline. The structured data is validated against the plan's
// schema; a failure is sent back once, then the data is left null with a
// note. An error is the model failing (the caller retries the analysis).
func AnalyzeWithModel(ctx context.Context, m Model, in Input) (_ Result, u Usage, _ string, _ error) {
	offline, err := Analyze(in)
	if err != nil {
		return Result{}, Usage{}, "", err
	}
	u = Usage{Provider: m.Provider, Model: m.Name}
	var r Result
	r.Sentiment = offline.Sentiment
	r.Notes = []string{NoteSentimentOffline}
	if len(in.Turns) == 0 {
		// Nothing to ask about: the offline analysis says so.
		return offline, u, "", nil
	}
	schema := bytes.TrimSpace(in.Plan.StructuredDataSchema)
	withSchema := hasSchema(schema)
	if withSchema {
		if _, _, err := compile(schema); err != nil {
			r.Notes = append(r.Notes, "structured data: "+err.Error())
			withSchema = false
		}
	}
	req := llm.Request{Model: m.Name, System: systemPrompt(in.Plan, withSchema), Temperature: new(float64),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: transcriptText(in.Turns)}},
		Tools:    []llm.Tool{{Name: recordTool, Description: "Record the analysis of the call.", Parameters: toolSchema(in.Plan, schema, withSchema)}}}
	start := time.Now()
	defer func() { u.LatencyMs = float64(time.Since(start).Microseconds()) / 1000 }()
	for attempt := range 2 {
		res, err := m.Client.Stream(ctx, req, nil)
		u.Requests++
		u.InputTokens += res.InputTokens
		u.OutputTokens += res.OutputTokens
		if err != nil {
			return Result{}, u, "", fmt.Errorf("analysis model %s/%s: %w", m.Provider, m.Name, err)
		}
		args, callID, ok := answerOf(res)
		if !ok {
			return Result{}, u, "", fmt.Errorf("analysis model %s/%s answered without calling %s or writing its JSON", m.Provider, m.Name, recordTool)
		}
		var a struct {
			Summary           string         `json:"summary"`
			SuccessEvaluation *bool          `json:"successEvaluation"`
			SuccessReasoning  string         `json:"successReasoning"`
			StructuredData    map[string]any `json:"structuredData"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return Result{}, u, "", fmt.Errorf("analysis model %s/%s: its answer is not the analysis object: %v", m.Provider, m.Name, err)
		}
		r.Summary = strings.TrimSpace(a.Summary)
		r.SuccessEvaluation = a.SuccessEvaluation
		if in.Plan.SuccessEvaluationRubric == "" && in.FlowSuccess != nil {
			r.SuccessEvaluation = in.FlowSuccess // the flow's end node decided
		}
		if !withSchema {
			r.StructuredData = offline.StructuredData
			return r, u, strings.TrimSpace(a.SuccessReasoning), nil
		}
		problems := validateData(schema, a.StructuredData)
		if len(problems) == 0 {
			r.StructuredData = a.StructuredData
			return r, u, strings.TrimSpace(a.SuccessReasoning), nil
		}
		if attempt == 1 {
			r.StructuredData = nil
			r.Notes = append(r.Notes, NoteModelNoData+": "+strings.Join(problems, "; "))
			return r, u, strings.TrimSpace(a.SuccessReasoning), nil
		}
		// Once more, with what was wrong.
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Content: res.Text, ToolCalls: []llm.ToolCall{{ID: callID, Name: recordTool, Arguments: args}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: callID, Content: "structuredData does not match the schema: " + strings.Join(problems, "; ") +
				". Call " + recordTool + " again with corrected structuredData."})
	}
	return r, u, "", nil // not reached
}

// answerOf finds the model's analysis: the record tool's arguments, or a
// JSON object written as text.
func answerOf(res llm.Result) (json.RawMessage, string, bool) {
	for _, tc := range res.ToolCalls {
		if tc.Name == recordTool && len(tc.Arguments) > 0 && tc.Arguments[0] == '{' {
			return tc.Arguments, tc.ID, true
		}
	}
	t := strings.TrimSpace(res.Text)
	t = strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(t, "```json"), "```"), "```")
	t = strings.TrimSpace(t)
	if i, j := strings.Index(t, "{"), strings.LastIndex(t, "}"); i >= 0 && j > i && json.Valid([]byte(t[i:j+1])) {
		return json.RawMessage(t[i : j+1]), "call_text", true
	}
	return nil, "", false
}

// validateData checks data against the plan's schema, returning the
// problems (none: it validates).
func validateData(schema json.RawMessage, data map[string]any) []string {
	if data == nil {
		return []string{"structuredData is missing"}
	}
	sch, _, err := compile(schema)
	if err != nil {
		return []string{err.Error()}
	}
	// The validator wants decoded JSON: numbers as json.Number or float64.
	b, err := json.Marshal(data)
	if err != nil {
		return []string{err.Error()}
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return []string{err.Error()}
	}
	if err := sch.Validate(v); err != nil {
		var ps []string
		var de *DataError
		if errors.As(err, &de) {
			return de.Problems
		}
		ps = problems(err)
		if len(ps) == 0 {
			ps = []string{clean(err.Error())}
		}
		return ps
	}
	return nil
}

// systemPrompt is the task, with the plan's instructions.
func systemPrompt(p Plan, withSchema bool) string {
	var b strings.Builder
	b.WriteString("You analyse a finished phone or web call between an assistant and a caller. ")
	b.WriteString("The user message is the transcript. Answer only by calling the tool " + recordTool + " once.\n")
	b.WriteString("summary: ")
	if p.SummaryPrompt != "" {
		b.WriteString(p.SummaryPrompt)
	} else {
		b.WriteString("a short summary of the call in two or three sentences.")
	}
	b.WriteString("\nsuccessEvaluation: ")
	if p.SuccessEvaluationRubric != "" {
		b.WriteString("true if the call succeeded by this rubric, else false, with your reasoning in successReasoning. Rubric: " + p.SuccessEvaluationRubric)
	} else {
		b.WriteString("true if the caller's request was handled, else false.")
	}
	if withSchema {
		b.WriteString("\nstructuredData: the values the schema asks for, taken from the transcript; leave out what the caller did not say.")
	}
	return b.String()
}

// toolSchema is the record tool's parameters.
func toolSchema(p Plan, schema json.RawMessage, withSchema bool) json.RawMessage {
	props := map[string]json.RawMessage{
		"summary":           json.RawMessage(`{"type":"string"}`),
		"successEvaluation": json.RawMessage(`{"type":"boolean"}`),
		"successReasoning":  json.RawMessage(`{"type":"string"}`),
	}
	required := []string{"summary", "successEvaluation"}
	if withSchema {
		props["structuredData"] = schema
		required = append(required, "structuredData")
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required})
	return b
}

// transcriptText is the transcript as the model reads it.
func transcriptText(turns []Turn) string {
	var b strings.Builder
	for _, t := range turns {
		who := "Caller"
		if t.Role == RoleAssistant {
			who = "Assistant"
		}
		b.WriteString(who + ": " + t.Text + "\n")
	}
	return b.String()
}
