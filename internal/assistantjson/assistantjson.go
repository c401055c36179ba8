// Package assistantjson reads an assistant from its JSON document, as the
// REST API takes it (POST and PATCH /v1/assistants) and the dashboard's
// editor sends it: field by field (jsonobj), then the assistant's own
// checks (assistant.Validate) and what only the server can check (the flow
// graph, the analysis schema, tool URLs). Both callers go through Create
// and Update, so a field is refused with the same name and message
// whichever way it came: "flow.nodes.ask.branches[1].match".
package assistantjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"switchboard/internal/analysis"
	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/flow"
	"switchboard/internal/jsonobj"
)

// URLChecker refuses URLs the server must not call (webhook.Guard).
type URLChecker interface {
	CheckURL(ctx context.Context, raw string) error
}

// Config is what reading an assistant needs to know about the server.
type Config struct {
	// Providers are the configured model, voice and transcriber providers.
	Providers assistant.Providers
	// URLs checks tools' URLs.
	URLs URLChecker
}

// Create reads a new assistant from body (a JSON object; name required),
// starting from the defaults. The error is Invalid and names every bad
// field; the warnings say what the assistant will not do as it says, or
// does without being told (assistant.Warning). It sets neither the ids nor
// the times nor the tool secret.
func (c Config) Create(ctx context.Context, body []byte) (assistant.Assistant, []assistant.Warning, error) {
	o, err := jsonobj.Parse(body)
	if err != nil {
		return assistant.Assistant{}, nil, err
	}
	a := assistant.Defaults(c.Providers)
	if !o.Present("name") {
		o.Errs.Add("name", "is required")
	}
	w, err := c.finish(ctx, o, &a, nil)
	return a, w, err
}

// Update applies body, a partial document, onto a: absent fields keep
// their value, null resets one to its default. What depends on the server
// is refused only where body changes it (assistant.Validate): a stored
// value the server cannot run is kept and warned of. On error a may be
// half changed: callers keep their stored copy.
func (c Config) Update(ctx context.Context, body []byte, a *assistant.Assistant) ([]assistant.Warning, error) {
	o, err := jsonobj.Parse(body)
	if err != nil {
		return nil, err
	}
	was := *a
	return c.finish(ctx, o, a, &was)
}

// Warnings are the warnings of a stored assistant on this server (what
// its page in the dashboard shows): those Update answers when nothing
// changes.
func (c Config) Warnings(a assistant.Assistant) []assistant.Warning {
	var f apperr.Fields
	return append(a.Warnings(c.Providers), c.flowTools(&a, &a, &f)...)
}

// Document is a as a document Update takes back whole: its settings,
// without its id, tool secret and times (which no document sets).
func Document(a assistant.Assistant) (map[string]any, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("assistantjson: marshal %s: %w", a.ID, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("assistantjson: unmarshal %s: %w", a.ID, err)
	}
	for _, k := range []string{"id", "toolSecret", "createdAt", "updatedAt"} {
		delete(doc, k)
	}
	return doc, nil
}

func (c Config) finish(ctx context.Context, o *jsonobj.Object, a, was *assistant.Assistant) ([]assistant.Warning, error) {
	named := c.apply(o, a)
	if !named && (was == nil || o.Present("model")) {
		c.chooseModel(a, o.Errs)
	}
	var warnings []assistant.Warning
	if len(*o.Errs) == 0 {
		warnings = a.Validate(c.Providers, was, o.Errs)
		c.check(ctx, a, o.Errs)
		warnings = append(warnings, c.flowTools(a, was, o.Errs)...)
	}
	if err := o.Errs.Err(); err != nil {
		return nil, err
	}
	if warnings == nil {
		warnings = []assistant.Warning{}
	}
	return warnings, nil
}

// chooseModel sets the model provider of an assistant whose request named
// none (a new one without model.provider, or model sent without it): the
// server's only model provider when model.model names a model, else the
// default (assistant.Providers.DefaultModel: flow with a flow, the only
// model provider without one). A model named on a server with no model
// provider, or with several, is refused on model.provider.
func (c Config) chooseModel(a *assistant.Assistant, errs *apperr.Fields) {
	p := c.Providers
	if a.Model.Model == "" {
		a.Model.Provider = p.DefaultModel(a.HasFlow())
		return
	}
	if m := p.OnlyModel(); m != "" {
		a.Model.Provider = m
		return
	}
	if ms := p.Models(); len(ms) > 1 {
		errs.Add("model.provider", "is required with model.model: this server has several model providers (%s)", strings.Join(ms, ", "))
		return
	}
	errs.Add("model.provider", "is required with model.model, and %s", p.ModelHint())
}

// apply sets the fields present in o onto a. Absent fields keep their
// value; null resets a field to its default. It reports whether o names
// model.provider.
func (c Config) apply(o *jsonobj.Object, a *assistant.Assistant) (providerNamed bool) {
	def := assistant.Defaults(c.Providers)
	str := func(key string, dst *string, dflt string) {
		if o.Present(key) {
			*dst = o.Str(key, false)
			if *dst == "" {
				*dst = dflt
			}
		}
	}
	integer := func(key string, dst *int, dflt int) {
		if o.Present(key) {
			*dst = o.Int(key, false, dflt)
		}
	}
	str("name", &a.Name, "")
	str("firstMessage", &a.FirstMessage, "")
	str("systemPrompt", &a.SystemPrompt, "")
	str("language", &a.Language, def.Language)
	if o.Present("voice") {
		a.Voice = def.Voice
		if c := o.Child("voice"); c != nil {
			str2 := func(k string, dst *string, d string) {
				if v := c.Str(k, false); v != "" {
					*dst = v
				} else {
					*dst = d
				}
			}
			str2("provider", &a.Voice.Provider, def.Voice.Provider)
			str2("voiceId", &a.Voice.VoiceID, "")
			if fc := c.Child("fallback"); fc != nil {
				a.Voice.Fallback = &assistant.VoiceFallback{Provider: fc.Str("provider", true), VoiceID: fc.Str("voiceId", false)}
				fc.Done()
			}
			c.Done()
		}
	}
	if o.Present("transcriber") {
		a.Transcriber = def.Transcriber
		if c := o.Child("transcriber"); c != nil {
			if v := c.Str("provider", false); v != "" {
				a.Transcriber.Provider = v
			}
			a.Transcriber.Model = c.Str("model", false)
			a.Transcriber.Language = c.Str("language", false)
			if fc := c.Child("fallback"); fc != nil {
				a.Transcriber.Fallback = &assistant.TranscriberFallback{
					Provider: fc.Str("provider", true), Model: fc.Str("model", false), Language: fc.Str("language", false),
				}
				fc.Done()
			}
			c.Done()
		}
	}
	if o.Present("endpointing") {
		a.Endpointing = def.Endpointing
		if c := o.Child("endpointing"); c != nil {
			a.Endpointing = assistant.Endpointing{
				SilenceMs:     c.Int("silenceMs", false, 0),
				MinSpeechMs:   c.Int("minSpeechMs", false, 0),
				MaxWaitMs:     c.Int("maxWaitMs", false, 0),
				FastSilenceMs: c.Int("fastSilenceMs", false, 0),
			}
			c.Done()
		}
	}
	if o.Present("bargeIn") {
		a.BargeIn = def.BargeIn
		if c := o.Child("bargeIn"); c != nil {
			a.BargeIn = assistant.BargeIn{Disabled: c.Bool("disabled"), MinSpeechMs: c.Int("minSpeechMs", false, 0)}
			c.Done()
		}
	}
	if o.Present("model") {
		a.Model = def.Model
		if c := o.Child("model"); c != nil {
			a.Model.Provider = c.Str("provider", false)
			providerNamed = a.Model.Provider != ""
			a.Model.Model = c.Str("model", false)
			a.Model.Temperature = c.Number("temperature")
			a.Model.MaxTokens = c.Int("maxTokens", false, 0)
			c.Done()
		}
	}
	if o.Present("flow") {
		a.Flow = o.RawObject("flow")
	}
	if o.Present("endCallPhrases") {
		a.EndCallPhrases = o.Strings("endCallPhrases", false)
		if a.EndCallPhrases == nil {
			a.EndCallPhrases = []string{}
		}
	}
	if o.Present("optOutPhrases") {
		a.OptOutPhrases = o.Strings("optOutPhrases", false)
		if a.OptOutPhrases == nil { // null: the defaults
			a.OptOutPhrases = assistant.DefaultOptOutPhrases()
		}
	}
	integer("maxDurationSeconds", &a.MaxDurationSeconds, def.MaxDurationSeconds)
	integer("silenceTimeoutSeconds", &a.SilenceTimeoutSeconds, def.SilenceTimeoutSeconds)
	if o.Present("tools") {
		a.Tools = []assistant.Tool{}
		for _, it := range o.Objects("tools", false) {
			if it == nil {
				continue
			}
			t := assistant.Tool{
				Name:           it.Str("name", true),
				Description:    it.Str("description", false),
				URL:            it.Str("url", true),
				Parameters:     it.RawObject("parameters"),
				TimeoutSeconds: it.Int("timeoutSeconds", false, 10),
			}
			if len(t.Parameters) == 0 {
				t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			it.Done()
			a.Tools = append(a.Tools, t)
		}
	}
	if o.Present("transfer") {
		a.Transfer = def.Transfer
		if c := o.Child("transfer"); c != nil {
			a.Transfer.Destinations = []assistant.TransferDestination{}
			for _, it := range c.Objects("destinations", false) {
				if it == nil {
					continue
				}
				a.Transfer.Destinations = append(a.Transfer.Destinations, assistant.TransferDestination{
					Destination: it.Str("destination", true),
					Description: it.Str("description", false),
					Message:     it.Str("message", false),
				})
				it.Done()
			}
			c.Done()
		}
	}
	if o.Present("recording") {
		a.Recording = def.Recording
		if c := o.Child("recording"); c != nil {
			a.Recording.Enabled = c.Bool("enabled")
			c.Done()
		}
	}
	if o.Present("voicemail") {
		a.Voicemail = def.Voicemail
		if c := o.Child("voicemail"); c != nil {
			a.Voicemail.Detect = c.Bool("detect")
			if v := c.Str("action", false); v != "" {
				a.Voicemail.Action = v
			}
			a.Voicemail.Message = c.Str("message", false)
			c.Done()
		}
	}
	if o.Present("analysisPlan") {
		a.AnalysisPlan = assistant.AnalysisPlan{}
		if c := o.Child("analysisPlan"); c != nil {
			a.AnalysisPlan.SummaryPrompt = c.Str("summaryPrompt", false)
			a.AnalysisPlan.SuccessEvaluationRubric = c.Str("successEvaluationRubric", false)
			a.AnalysisPlan.StructuredDataSchema = c.RawObject("structuredDataSchema")
			c.Done()
		}
	}
	o.Done()
	return providerNamed
}

// check adds what only the server can check: the flow graph (and its
// transfer destinations), the analysis schema, and tool URLs against the
// SSRF guard.
func (c Config) check(ctx context.Context, a *assistant.Assistant, f *apperr.Fields) {
	if len(a.Flow) > 0 && string(a.Flow) != "null" && !f.Has("flow") {
		fl, err := flow.Parse(a.Flow)
		if err != nil {
			var e *apperr.Error
			if errors.As(err, &e) && len(e.Fields) > 0 {
				*f = append(*f, e.Fields...)
			} else {
				f.Add("flow", "%s", err.Error())
			}
		}
		if fl != nil { // transfer nodes: the number or URI itself, as for transfer.destinations
			for _, nid := range slices.Sorted(maps.Keys(fl.Nodes)) {
				if n := fl.Nodes[nid]; n.Destination != "" {
					if err := assistant.CheckDestination(n.Destination); err != nil {
						f.Add("flow.nodes."+nid+".destination", "%s", err.Error())
					}
				}
			}
		}
	}
	if sc := a.AnalysisPlan.StructuredDataSchema; len(sc) > 0 && !f.Has("analysisPlan.structuredDataSchema") {
		if err := analysis.ValidSchema(sc); err != nil {
			f.Add("analysisPlan.structuredDataSchema", "%s", err.Error())
		}
	}
	for i, t := range a.Tools {
		field := fmt.Sprintf("tools[%d].url", i)
		if f.Has(field) {
			continue
		}
		if c.URLs == nil {
			f.Add(field, "cannot be checked on this server")
		} else if err := c.URLs.CheckURL(ctx, t.URL); err != nil {
			f.Add(field, "%s", err.Error())
		}
	}
}

// flowTools reports what is wrong between a flow and the assistant's
// tools, which the flow's tool nodes call by name: a tool no node calls
// would be ignored (refused when the request adds it, else a warning), and
// a node that calls a tool the assistant lacks fails at run time (a
// warning: the tool may be added next; the flow then takes onError).
func (c Config) flowTools(a, was *assistant.Assistant, f *apperr.Fields) []assistant.Warning {
	if a.Brain() != assistant.BrainFlow || f.Has("flow") || slices.ContainsFunc(*f, func(e apperr.FieldError) bool {
		return strings.HasPrefix(e.Field, "flow.")
	}) {
		return nil
	}
	fl, err := flow.Parse(a.Flow)
	if err != nil {
		return nil
	}
	called := map[string]bool{}
	var warnings []assistant.Warning
	for _, nid := range slices.Sorted(maps.Keys(fl.Nodes)) {
		if name := fl.Nodes[nid].Tool; name != "" {
			called[name] = true
			if !slices.ContainsFunc(a.Tools, func(t assistant.Tool) bool { return t.Name == name }) {
				warnings = append(warnings, assistant.Warning{Field: "flow.nodes." + nid + ".tool",
					Message: fmt.Sprintf("calls %q, which is not one of this assistant's tools: the call fails at run time and the flow takes onError until a tool of that name is added", name)})
			}
		}
	}
	for i, t := range a.Tools {
		if called[t.Name] {
			continue
		}
		field := fmt.Sprintf("tools[%d].name", i)
		if f.Has(field) {
			continue
		}
		isNew := was == nil || !slices.ContainsFunc(was.Tools, func(w assistant.Tool) bool { return w.Name == t.Name })
		why := fmt.Sprintf("no tool node of the flow calls %q, and a flow calls only the tools its tool nodes name", t.Name)
		if isNew {
			f.Add(field, "would be ignored: %s", why)
		} else {
			warnings = append(warnings, assistant.Warning{Field: field, Message: "is kept but not used: " + why})
		}
	}
	return warnings
}
