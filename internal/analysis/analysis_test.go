package analysis

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func ptr(b bool) *bool { return &b }

func TestAnalyzeFlowCall(t *testing.T) {
	in := Input{
		Turns: booking,
		Plan: Plan{
			SummaryPrompt:        "Summarize the call.",
			StructuredDataSchema: json.RawMessage(bookingSchema),
		},
		FlowSuccess: ptr(true),
		FlowVars:    map[string]any{"date": "2026-03-14", "guests": "4", "name": "Dana Whitfield", "status": "Booked"},
		Outcome:     "completed",
	}
	got, err := Analyze(in)
	if err != nil {
		t.Fatalf("Analyze(flow call) error = %v, want nil", err)
	}
	if !strings.Contains(got.Summary, "March 14th") || !strings.HasPrefix(got.Summary, "Caller: ") {
		t.Errorf("Analyze(flow call).Summary = %q, want the caller's request and the date", got.Summary)
	}
	if got.Sentiment.Label != Positive {
		t.Errorf("Analyze(flow call).Sentiment = %+v, want positive (the caller said perfect, thanks)", got.Sentiment)
	}
	if got.SuccessEvaluation == nil || !*got.SuccessEvaluation {
		t.Errorf("Analyze(flow call).SuccessEvaluation = %v, want true from the flow's end node", got.SuccessEvaluation)
	}
	wantData := map[string]any{"date": "2026-03-14", "guests": 4.0, "status": "booked"}
	if !reflect.DeepEqual(got.StructuredData, wantData) {
		t.Errorf("Analyze(flow call).StructuredData = %#v, want %#v", got.StructuredData, wantData)
	}
	if want := []string{NoteSummaryPrompt}; !slices.Equal(got.Notes, want) {
		t.Errorf("Analyze(flow call).Notes = %q, want %q", got.Notes, want)
	}
	// The result survives storage as JSON unchanged, and Analyze is deterministic.
	again, _ := Analyze(in)
	if !reflect.DeepEqual(got, again) {
		t.Errorf("Analyze(flow call) twice = %+v and %+v, want equal", got, again)
	}
	b, _ := json.Marshal(got.StructuredData)
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, got.StructuredData) {
		t.Errorf("Analyze(flow call).StructuredData after a JSON round trip = %#v, want %#v", back, got.StructuredData)
	}
}

func TestAnalyzeEmpty(t *testing.T) {
	got, err := Analyze(Input{Outcome: "no-answer"})
	if err != nil {
		t.Fatalf("Analyze(empty) error = %v, want nil", err)
	}
	want := Result{
		Sentiment:         Sentiment{Label: Neutral, Score: 0},
		SuccessEvaluation: ptr(false),
		Notes:             []string{NoteNoTranscript, NoteNoSchema},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Analyze(empty, no-answer) = %+v, want %+v", got, want)
	}
}

func TestAnalyzeSuccess(t *testing.T) {
	tests := []struct {
		name        string
		flowSuccess *bool
		rubric      string
		outcome     string
		want        *bool
		note        string
	}{
		{"flow end node success", ptr(true), "", "completed", ptr(true), ""},
		{"flow end node failure", ptr(false), "", "completed", ptr(false), ""},
		{"flow wins over rubric and outcome", ptr(true), "Was a table booked?", "busy", ptr(true), ""},
		{"rubric needs a model", nil, "Was a table booked?", "completed", nil, NoteRubricNeedsModel},
		{"rubric needs a model even when busy", nil, "Was a table booked?", "busy", nil, NoteRubricNeedsModel},
		{"busy failed", nil, "", "busy", ptr(false), ""},
		{"voicemail failed", nil, "", "voicemail", ptr(false), ""},
		{"completed is undecided", nil, "", "completed", nil, NoteNoSuccessSignal},
		{"unknown outcome is undecided", nil, "", "", nil, NoteOutcomeUnknown},
	}
	for _, tt := range tests {
		in := Input{Turns: booking, Plan: Plan{SuccessEvaluationRubric: tt.rubric}, FlowSuccess: tt.flowSuccess, Outcome: tt.outcome}
		got, err := Analyze(in)
		if err != nil {
			t.Fatalf("%s: Analyze error = %v", tt.name, err)
		}
		if !reflect.DeepEqual(got.SuccessEvaluation, tt.want) {
			t.Errorf("%s: Analyze(flowSuccess=%v, rubric=%q, outcome=%q).SuccessEvaluation = %v, want %v",
				tt.name, fmtBool(tt.flowSuccess), tt.rubric, tt.outcome, fmtBool(got.SuccessEvaluation), fmtBool(tt.want))
		}
		if tt.note != "" && !slices.Contains(got.Notes, tt.note) {
			t.Errorf("%s: Analyze(...).Notes = %q, want %q among them", tt.name, got.Notes, tt.note)
		}
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestAnalyzeStructuredNotes(t *testing.T) {
	tests := []struct {
		name     string
		schema   string
		vars     map[string]any
		wantData map[string]any
		wantNote string // a part of one note
	}{
		{"no schema", "", map[string]any{"date": "2026-03-14"}, nil, NoteNoSchema},
		{"null schema", "null", nil, nil, NoteNoSchema},
		{"nothing matched", `{"type": "object", "properties": {"a": {"type": "string"}}}`, nil, map[string]any{}, NoteNoValues},
		{"invalid data", bookingSchema, map[string]any{"date": "2026-03-14", "status": "gone"}, nil, "structured data does not match the schema: at '/status': value must be one of 'booked', 'waitlist'"},
		{"broken schema", `{"type": 5}`, map[string]any{"date": "2026-03-14"}, nil, "structured data schema is not valid JSON Schema"},
	}
	for _, tt := range tests {
		got, err := Analyze(Input{Turns: booking, Plan: Plan{StructuredDataSchema: json.RawMessage(tt.schema)}, FlowVars: tt.vars, Outcome: "completed"})
		if err != nil {
			t.Fatalf("%s: Analyze error = %v, want nil (structured data problems are notes)", tt.name, err)
		}
		if !reflect.DeepEqual(got.StructuredData, tt.wantData) {
			t.Errorf("%s: Analyze(schema %s, vars %v).StructuredData = %#v, want %#v", tt.name, tt.schema, tt.vars, got.StructuredData, tt.wantData)
		}
		if !slices.ContainsFunc(got.Notes, func(n string) bool { return strings.Contains(n, tt.wantNote) }) {
			t.Errorf("%s: Analyze(schema %s, vars %v).Notes = %q, want one containing %q", tt.name, tt.schema, tt.vars, got.Notes, tt.wantNote)
		}
		if got.Summary == "" {
			t.Errorf("%s: Analyze(...).Summary is empty, want the summary despite the structured data", tt.name)
		}
	}
}

func TestAnalyzeOtherNotes(t *testing.T) {
	tests := []struct {
		name  string
		turns []Turn
		note  string
	}{
		{"assistant only", []Turn{{RoleAssistant, "Hello? Is anyone there?"}}, NoteNoCallerSpeech},
		{"nothing to summarise", []Turn{{RoleUser, "..."}}, NoteNothingToSum},
	}
	for _, tt := range tests {
		got, err := Analyze(Input{Turns: tt.turns, Outcome: "completed"})
		if err != nil || !slices.Contains(got.Notes, tt.note) {
			t.Errorf("%s: Analyze(%q) = notes %q, error %v; want note %q", tt.name, tt.turns, got.Notes, err, tt.note)
		}
	}
}

func TestAnalyzeRejectsUnknownRole(t *testing.T) {
	_, err := Analyze(Input{Turns: []Turn{{RoleUser, "hi"}, {"tool", "{}"}}})
	if err == nil || !strings.Contains(err.Error(), `turn 1 has role "tool"`) {
		t.Errorf("Analyze(turn role tool) error = %v, want one naming turn 1 and its role", err)
	}
}
