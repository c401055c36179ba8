// Package analysis computes a finished call's analysis — summary, sentiment,
// success and structured data — from its transcript, its assistant's analysis
// plan and what its flow captured, and runs the worker that analyses ended
// calls.
//
// Analyze runs offline and is deterministic, so an analysis job can be
// retried and produce the same record; parts of a plan that need a language
// model (a summary prompt, a success rubric) are reported in Result.Notes
// rather than guessed at. AnalyzeWithModel asks a language model for the
// summary, the rubric's verdict and the structured data (validated against
// the schema, sent back once), keeping the offline sentiment; the worker
// uses it when the call's assistant has a model, or the server an analysis
// model (docs/ARCHITECTURE.md, "Analysis by the model").
package analysis

import (
	"encoding/json"
	"fmt"

	"switchboard/internal/call"
)

// Speaker roles of a Turn.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// SummarySentences is how many sentences Analyze keeps in a summary: enough
// for the request, the key detail and the confirmation of a typical call.
const SummarySentences = 4

// Turn is one spoken turn of the transcript.
type Turn struct {
	Role string // RoleUser or RoleAssistant
	Text string
}

// Plan is the assistant's analysis plan (assistant.AnalysisPlan without the
// JSON tags, so this package does not depend on the assistant resource).
type Plan struct {
	SummaryPrompt           string
	SuccessEvaluationRubric string
	StructuredDataSchema    json.RawMessage
}

// Input is everything known about a finished call that its analysis uses.
type Input struct {
	Turns []Turn
	Plan  Plan
	// FlowSuccess is the success of the flow's end node, when the call ran a
	// flow and reached one.
	FlowSuccess *bool
	// FlowVars are the variables the flow captured, by name.
	FlowVars map[string]any
	// Outcome is the call's outcome (call.Completed, call.Busy, …).
	Outcome string
}

// Sentiment is the caller's mood over the call.
type Sentiment struct {
	Label string  // "positive", "neutral" or "negative"
	Score float64 // -1 (most negative) .. 1 (most positive)
}

// Sentiment labels.
const (
	Positive = "positive"
	Neutral  = "neutral"
	Negative = "negative"
)

// Result is a call's analysis. A field left empty has a Note saying why, so a
// reader can tell "nothing to report" from "could not be computed".
type Result struct {
	Summary           string
	Sentiment         Sentiment
	SuccessEvaluation *bool
	StructuredData    map[string]any
	Notes             []string
}

// Notes that Analyze attaches; exported so callers and tests can match them.
const (
	NoteNoTranscript     = "no transcript"
	NoteNothingToSum     = "transcript has no sentences to summarise"
	NoteSummaryPrompt    = "summary prompt needs a model provider; the summary is extractive"
	NoteNoCallerSpeech   = "the caller said nothing; sentiment is neutral"
	NoteRubricNeedsModel = "success rubric needs a model provider"
	NoteOutcomeUnknown   = "call outcome unknown; success not evaluated"
	NoteNoSuccessSignal  = "no flow end node or success rubric to evaluate success"
	NoteNoSchema         = "no structured data schema"
	NoteNoValues         = "no captured variable matched the structured data schema"
)

// Analyze computes the analysis of a finished call. It is deterministic.
//
// Problems with the structured data (a schema that does not compile, values
// that do not satisfy it) become Notes, not errors: the rest of the analysis
// is still worth keeping and retrying would not change it. Analyze returns an
// error only for an Input no caller should build: a turn whose role is not
// RoleUser or RoleAssistant.
func Analyze(in Input) (Result, error) {
	for i, t := range in.Turns {
		if t.Role != RoleUser && t.Role != RoleAssistant {
			return Result{}, fmt.Errorf("analysis: turn %d has role %q, want %q or %q", i, t.Role, RoleUser, RoleAssistant)
		}
	}
	var r Result
	note := func(s string) { r.Notes = append(r.Notes, s) }

	r.Summary = Summarize(in.Turns, SummarySentences)
	switch {
	case r.Summary != "":
	case len(in.Turns) == 0:
		note(NoteNoTranscript)
	default:
		note(NoteNothingToSum)
	}
	if in.Plan.SummaryPrompt != "" && r.Summary != "" {
		note(NoteSummaryPrompt)
	}

	r.Sentiment = Score(in.Turns)
	if len(in.Turns) > 0 && !hasCallerWords(in.Turns) {
		note(NoteNoCallerSpeech)
	}

	r.SuccessEvaluation = success(in, note)

	if !hasSchema(in.Plan.StructuredDataSchema) {
		note(NoteNoSchema)
	} else if data, err := Structured(in.Plan.StructuredDataSchema, in.FlowVars); err != nil {
		note("structured data: " + err.Error())
	} else {
		r.StructuredData = data
		if len(data) == 0 {
			note(NoteNoValues)
		}
	}
	return r, nil
}

// success decides SuccessEvaluation: the flow's end node when it reached one;
// nothing when only a model could apply the rubric; otherwise a call that did
// not complete (busy, no answer, …) failed and a completed one is undecided.
func success(in Input, note func(string)) *bool {
	switch {
	case in.FlowSuccess != nil:
		v := *in.FlowSuccess
		return &v
	case in.Plan.SuccessEvaluationRubric != "":
		note(NoteRubricNeedsModel)
		return nil
	case in.Outcome == "":
		note(NoteOutcomeUnknown)
		return nil
	case in.Outcome != string(call.Completed):
		v := false
		return &v
	default:
		note(NoteNoSuccessSignal)
		return nil
	}
}

func hasCallerWords(turns []Turn) bool {
	for _, t := range turns {
		if t.Role == RoleUser && len(words(t.Text)) > 0 {
			return true
		}
	}
	return false
}
