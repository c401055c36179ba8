package assistant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/catalog"
)

// What answers an assistant's calls (Assistant.Brain).
const (
	// BrainModel: a language model, model.provider (not flow).
	BrainModel = "model"
	// BrainFlow: the assistant's scripted flow (model.provider flow).
	BrainFlow = "flow"
	// BrainNoteTaker: neither a model nor a flow. It takes a message: its
	// firstMessage is said, one caller turn is heard, NoteTakerReply is
	// said and the call ends (assistant-ended-call); the transcript and
	// the analysis keep the caller's message.
	BrainNoteTaker = "noteTaker"
)

// NoteTakerReply is what the note taker answers the caller's message.
const NoteTakerReply = "Thank you, I have noted that. Goodbye."

// HasFlow reports whether the assistant has a flow (not absent, not null).
func (a *Assistant) HasFlow() bool { return len(a.Flow) > 0 && string(a.Flow) != "null" }

// Brain says what answers the assistant's calls: BrainModel, BrainFlow or
// BrainNoteTaker. It is the one place that decides it: conversation.Brains
// builds what it says, and Validate refuses the settings it would ignore.
func (a *Assistant) Brain() string {
	switch {
	case a.Model.Provider != ProviderFlow && a.Model.Provider != "":
		return BrainModel
	case a.HasFlow():
		return BrainFlow
	}
	return BrainNoteTaker
}

// Warning is something a saved assistant will not do as its settings say,
// or does without having been told: a stored setting this server cannot
// run or that the assistant's brain ignores (a request that set it would
// have been refused), or the note taker of an assistant with neither a
// flow nor a model. The REST API answers them in the envelope's
// "warnings"; the dashboard shows them on the assistant's page.
type Warning struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Warnings are the warnings of a stored assistant on a server running p:
// Validate's, with nothing changed.
func (a *Assistant) Warnings(p Providers) []Warning {
	var f apperr.Fields
	return a.checkServer(p, a, &f)
}

// serverCheck refuses what a request set that the server cannot run or
// that the assistant's brain would ignore, and turns the same findings
// about values stored from before into warnings.
type serverCheck struct {
	p        Providers
	f        *apperr.Fields
	warnings []Warning
}

// report refuses field (changed by the request) or warns of it (stored).
func (s *serverCheck) report(field string, changed bool, refusal, warning string) {
	if s.f.Has(field) {
		return
	}
	if changed {
		s.f.Add(field, "%s", refusal)
		return
	}
	s.warnings = append(s.warnings, Warning{Field: field, Message: warning})
}

// ignored reports field, which the assistant's brain does not use, for
// why: refused when the request changed it, else a warning that it is
// kept but not used. (assistantjson reports a flow's unused tools so.)
func (s *serverCheck) ignored(field string, changed bool, why string) {
	s.report(field, changed, "would be ignored: "+why, "is kept but not used: "+why)
}

// provider checks a provider name of role: a name no build knows is
// refused whatever the request changed; a known one the server does not
// run is reported (refused if changed, else a warning saying what fails).
func (s *serverCheck) provider(role catalog.Role, field, name string, changed bool, configured []string, fails string) {
	msg := catalog.Check(role, name, configured)
	if msg == "" || s.f.Has(field) {
		return
	}
	if _, known := catalog.Lookup(role, name); !known {
		s.f.Add(field, "%s", msg)
		return
	}
	s.report(field, changed, msg, msg+"; the stored value is kept, and "+fails+" until then")
}

// checkServer is Validate's part that depends on the server: the
// providers, the settings the brain ignores, and the note taker. was is
// the stored assistant (nil: a new one).
func (a *Assistant) checkServer(p Providers, was *Assistant, f *apperr.Fields) []Warning {
	if was == nil {
		was = &Assistant{}
	}
	s := &serverCheck{p: p, f: f}
	const (
		modelFails = "its calls end failed (assistant-model-failed)"
		voiceFails = "its calls with audio end failed (voice-failed)"
		earFails   = "its calls with audio end failed (transcriber-failed)"
	)
	s.provider(catalog.Model, "model.provider", a.Model.Provider, a.Model.Provider != was.Model.Provider, p.Model, modelFails)
	s.provider(catalog.Voice, "voice.provider", a.Voice.Provider, a.Voice.Provider != was.Voice.Provider, p.Voice, voiceFails)
	if fb := a.Voice.Fallback; fb != nil {
		changed := was.Voice.Fallback == nil || was.Voice.Fallback.Provider != fb.Provider
		s.provider(catalog.Voice, "voice.fallback.provider", fb.Provider, changed, p.Voice, "the fallback cannot take over")
	}
	s.provider(catalog.Transcriber, "transcriber.provider", a.Transcriber.Provider, a.Transcriber.Provider != was.Transcriber.Provider, p.Transcriber, earFails)
	if fb := a.Transcriber.Fallback; fb != nil {
		changed := was.Transcriber.Fallback == nil || was.Transcriber.Fallback.Provider != fb.Provider
		s.provider(catalog.Transcriber, "transcriber.fallback.provider", fb.Provider, changed, p.Transcriber, "the fallback cannot take over")
	}

	brain := a.Brain()
	if brain != BrainModel {
		why := "only a language model reads it, and " + a.answers() + "; " + p.ModelHint()
		if a.SystemPrompt != "" {
			s.ignored("systemPrompt", a.SystemPrompt != was.SystemPrompt, why)
		}
		if a.Model.Model != "" {
			s.ignored("model.model", a.Model.Model != was.Model.Model, why)
		}
		if t := a.Model.Temperature; t != nil {
			s.ignored("model.temperature", was.Model.Temperature == nil || *was.Model.Temperature != *t, why)
		}
		if a.Model.MaxTokens != 0 {
			s.ignored("model.maxTokens", a.Model.MaxTokens != was.Model.MaxTokens, why)
		}
	}
	switch brain {
	case BrainModel:
		if a.HasFlow() {
			why := fmt.Sprintf("model.provider is %q, so the model answers, not the flow; model.provider %q runs it", a.Model.Provider, ProviderFlow)
			s.ignored("flow", !sameJSON(a.Flow, was.Flow), why)
		}
	case BrainNoteTaker:
		for i, t := range a.Tools {
			why := "this assistant has neither a flow nor a model, so it calls no tool; a flow's tool nodes or a model call the tools (" + p.ModelHint() + ")"
			s.ignored("tools["+itoa(i)+"].name", !was.hasTool(t.Name), why)
		}
		s.warnings = append(s.warnings, Warning{Field: "flow", Message: fmt.Sprintf(
			"this assistant has neither a flow nor a language model, so it takes a message: on a call it says its firstMessage, "+
				"hears one caller turn, answers %q and hangs up (the transcript and the analysis keep the message); "+
				"to converse, give it a flow (docs/flows.md) or a language model (%s)", NoteTakerReply, p.ModelHint())})
	}
	return s.warnings
}

// answers says what answers the assistant's calls, when it is not a model.
func (a *Assistant) answers() string {
	if a.HasFlow() {
		return fmt.Sprintf("this assistant's replies come from its flow (model.provider %q)", ProviderFlow)
	}
	return fmt.Sprintf("this assistant has neither a flow nor a model (model.provider %q without a flow): it takes a message", ProviderFlow)
}

func (a *Assistant) hasTool(name string) bool {
	for _, t := range a.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// ModelHint says how an assistant gets a language model on a server
// running p: the model providers to choose from, or, on a server without
// any, the flags and environment variables that configure one.
func (p Providers) ModelHint() string {
	if ms := p.Models(); len(ms) > 0 {
		return fmt.Sprintf("set model.provider to %s and model.model to the model's name", strings.Join(quoteAll(ms), " or "))
	}
	var ways []string
	for _, name := range catalog.Known(catalog.Model) {
		if pr, _ := catalog.Lookup(catalog.Model, name); len(pr.Enable) > 0 {
			for _, st := range pr.Enable {
				ways = append(ways, st.String())
			}
		}
	}
	return "this server has no language model: start it with " + strings.Join(ways, ", or ") +
		", then set model.provider and model.model"
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// sameJSON reports whether two JSON documents are the same but for
// whitespace (a flow sent back as the dashboard shows it, indented).
func sameJSON(a, b json.RawMessage) bool {
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
