package analysis

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/llm"
	"switchboard/internal/store"
)

// Store is what the worker needs.
type Store interface {
	ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Analysis, error)
	FinishAnalysis(ctx context.Context, a store.Analysis, events ...event.Event) error
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error)
}

// Worker runs the analyses of ended calls: the store queues one (pending)
// in the transaction that ends a call; every node's worker claims pending
// ones with a lease, so an analysis survives a restart and runs once.
type Worker struct {
	Store Store
	Log   *slog.Logger
	// PublicURL is the server's public URL, under which call.analysis.ready
	// gives the call's recordingUrl as the API does.
	PublicURL string
	// Every is the polling interval (default 500 ms).
	Every time.Duration
	// MaxAttempts before an analysis is marked failed (default 3).
	MaxAttempts int
	// Models are the server's model providers by name: a call whose
	// assistant is a model assistant of one of them is analysed by its
	// model (AnalyzeWithModel).
	Models map[string]llm.Client
	// Fallback is the server's analysis model (--analysis-model), for
	// the calls of flow and note-taker assistants; zero: none.
	Fallback ModelChoice
	// ModelTimeout bounds one analysis by a model (default 60 s).
	ModelTimeout time.Duration
}

// ModelChoice names a model of a provider: "openai", "gpt-4o-mini".
type ModelChoice struct{ Provider, Model string }

// model is the model that analyses calls of assistant a, if any.
func (w *Worker) model(a *assistant.Assistant) (Model, bool) {
	if a != nil && a.Brain() == assistant.BrainModel {
		if c, ok := w.Models[a.Model.Provider]; ok && a.Model.Model != "" {
			return Model{Client: c, Provider: a.Model.Provider, Name: a.Model.Model}, true
		}
	}
	if c, ok := w.Models[w.Fallback.Provider]; ok && w.Fallback.Model != "" {
		return Model{Client: c, Provider: w.Fallback.Provider, Name: w.Fallback.Model}, true
	}
	return Model{}, false
}

// resultJSON is the stored and served form of a Result.
type resultJSON struct {
	Summary           string         `json:"summary"`
	Sentiment         Sentiment      `json:"sentiment"`
	SuccessEvaluation *bool          `json:"successEvaluation"`
	StructuredData    map[string]any `json:"structuredData"`
	Notes             []string       `json:"notes"`
	// SuccessReasoning and Model are an analysis by the model's.
	SuccessReasoning string `json:"successReasoning,omitempty"`
	Model            *Usage `json:"model,omitempty"`
}

// MarshalJSON renders a Sentiment as {label, score}.
func (s Sentiment) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Label string  `json:"label"`
		Score float64 `json:"score"`
	}{s.Label, s.Score})
}

// Run works until ctx is done.
func (w *Worker) Run(ctx context.Context) {
	every := w.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := w.RunOnce(ctx); err != nil && ctx.Err() == nil {
			w.Log.Warn("analysis round failed", "err", err)
		}
	}
}

// RunOnce claims and runs the pending analyses; it returns how many it finished.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	claimed, err := w.Store.ClaimAnalyses(ctx, time.Now(), time.Minute, 20)
	if err != nil {
		return 0, err
	}
	maxAttempts := w.MaxAttempts
	if maxAttempts <= 0 {
		maxAttempts = 3
	}
	n := 0
	for _, a := range claimed {
		res, c, err := w.analyze(ctx, a)
		a.UpdatedAt = time.Now().UTC()
		var events []event.Event
		switch {
		case err == nil:
			a.State, a.Result = store.AnalysisReady, res
			events = append(events, event.NewAnalysisReady(c, w.PublicURL, res, a.UpdatedAt))
		case a.Attempts >= maxAttempts:
			a.State, a.Error = store.AnalysisFailed, err.Error()
		default:
			w.Log.Warn("analysis failed; it will be retried", "call_id", a.CallID, "attempt", a.Attempts, "err", err)
			continue // the lease expires and another round retries it
		}
		if err := w.Store.FinishAnalysis(ctx, a, events...); err != nil {
			if apperr.Is(err, apperr.NotFound) {
				continue // finished elsewhere meanwhile
			}
			return n, err
		}
		n++
	}
	return n, nil
}

func (w *Worker) analyze(ctx context.Context, a store.Analysis) ([]byte, call.Call, error) {
	c, err := w.Store.GetCallAnyOrg(ctx, a.CallID)
	if err != nil {
		return nil, c, err
	}
	var plan Plan
	var asst *assistant.Assistant
	if as, err := w.Store.GetAssistant(ctx, c.OrgID, c.AssistantID); err == nil {
		plan = Plan{SummaryPrompt: as.AnalysisPlan.SummaryPrompt, SuccessEvaluationRubric: as.AnalysisPlan.SuccessEvaluationRubric,
			StructuredDataSchema: as.AnalysisPlan.StructuredDataSchema}
		asst = &as
	} else if !apperr.Is(err, apperr.NotFound) {
		return nil, c, err
	}
	turns, err := w.Store.ListTurns(ctx, c.OrgID, c.ID)
	if err != nil {
		return nil, c, err
	}
	in := Input{Plan: plan, FlowSuccess: c.Result.FlowSuccess, FlowVars: c.Result.Vars, Outcome: string(c.Outcome)}
	for _, t := range turns {
		in.Turns = append(in.Turns, Turn{Role: t.Role, Text: t.Text})
	}
	if m, ok := w.model(asst); ok {
		timeout := w.ModelTimeout
		if timeout <= 0 {
			timeout = 60 * time.Second
		}
		mctx, cancel := context.WithTimeout(ctx, timeout)
		r, usage, reasoning, err := AnalyzeWithModel(mctx, m, in)
		cancel()
		if err != nil {
			return nil, c, err // retried by the worker, then failed with it
		}
		j := resultJSON{Summary: r.Summary, Sentiment: r.Sentiment, SuccessEvaluation: r.SuccessEvaluation,
			StructuredData: r.StructuredData, Notes: r.Notes, SuccessReasoning: reasoning}
		if usage.Requests > 0 { // an empty transcript is analysed offline: nothing was asked
			j.Model = &usage
		}
		if j.Notes == nil {
			j.Notes = []string{}
		}
		b, err := json.Marshal(j)
		return b, c, err
	}
	r, err := Analyze(in)
	if err != nil {
		return nil, c, err
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	b, err := json.Marshal(resultJSON{Summary: r.Summary, Sentiment: r.Sentiment, SuccessEvaluation: r.SuccessEvaluation,
		StructuredData: r.StructuredData, Notes: r.Notes})
	return b, c, err
}
