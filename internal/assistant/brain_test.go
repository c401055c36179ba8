package assistant

import (
	"encoding/json"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

var (
	// noModel is a server without a language model (DefaultProviders).
	noModel = DefaultProviders()
	// ollama is a server with one model provider, as --openai-base-url makes it.
	ollama = Providers{Model: []string{"flow", "openai"}, Voice: []string{"local"}, Transcriber: []string{"local"}}
	// twoModels has both model providers.
	twoModels = Providers{Model: []string{"flow", "openai", "anthropic"}, Voice: []string{"local"}, Transcriber: []string{"local"}}
)

const aFlow = `{"start":"bye","nodes":{"bye":{"type":"end","text":"Bye."}}}`

// TestBrain: a model provider answers; flow runs the flow; flow without
// one is the note taker.
func TestBrain(t *testing.T) {
	for _, tc := range []struct {
		provider, flow, want string
	}{
		{"openai", "", BrainModel},
		{"openai", aFlow, BrainModel},
		{"flow", aFlow, BrainFlow},
		{"", aFlow, BrainFlow},
		{"flow", "", BrainNoteTaker},
		{"flow", "null", BrainNoteTaker},
		{"", "", BrainNoteTaker},
	} {
		a := Assistant{Model: Model{Provider: tc.provider}, Flow: json.RawMessage(tc.flow)}
		if got := a.Brain(); got != tc.want {
			t.Errorf("Brain() of provider %q, flow %q = %s; want %s", tc.provider, tc.flow, got, tc.want)
		}
	}
}

// TestDefaultModel: a server with exactly one model provider makes it
// the default of an assistant without a flow; with a flow, or with none
// or several, the default is flow.
func TestDefaultModel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		p       Providers
		hasFlow bool
		want    string
	}{
		{"no model", noModel, false, "flow"},
		{"one model", ollama, false, "openai"},
		{"one model, a flow", ollama, true, "flow"},
		{"two models", twoModels, false, "flow"},
	} {
		if got := tc.p.DefaultModel(tc.hasFlow); got != tc.want {
			t.Errorf("DefaultModel(%s, flow %v) = %q; want %q", tc.name, tc.hasFlow, got, tc.want)
		}
	}
	if got := Defaults(ollama).Model.Provider; got != "openai" {
		t.Errorf("Defaults(one model).Model.Provider = %q; want openai", got)
	}
}

// TestValidateServer: what depends on the server or on the brain is
// refused when set (a new assistant, or a change), and only warned of
// when it is stored from before; a name no build knows is refused either
// way.
func TestValidateServer(t *testing.T) {
	stored := func(p Providers, change func(a *Assistant)) *Assistant {
		a := valid(p)
		change(&a)
		return &a
	}
	for _, tc := range []struct {
		name   string
		p      Providers
		was    *Assistant // nil: a new assistant
		change func(a *Assistant)
		// errs and warns map fields to a part of their message.
		errs, warns map[string]string
	}{
		{"note taker: a warning that says what it does", noModel, nil, func(a *Assistant) { a.FirstMessage = "Hi" }, nil,
			map[string]string{"flow": `it takes a message: on a call it says its firstMessage, hears one caller turn, answers "Thank you, I have noted that. Goodbye." and hangs up`}},
		{"system prompt without a model on the server", noModel, nil, func(a *Assistant) {
			a.SystemPrompt = "Be brief."
			a.Flow = json.RawMessage(aFlow)
		}, map[string]string{"systemPrompt": "would be ignored: only a language model reads it, and this assistant's replies come from its flow" +
			` (model.provider "flow"); this server has no language model: start it with --openai-api-key / SWITCHBOARD_OPENAI_API_KEY (OpenAI itself), or --openai-base-url / SWITCHBOARD_OPENAI_BASE_URL (a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1), or --anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY`}, nil},
		{"system prompt on a flow, a model on the server", twoModels, nil, func(a *Assistant) {
			a.SystemPrompt = "Be brief."
			a.Flow = json.RawMessage(aFlow)
		}, map[string]string{"systemPrompt": `set model.provider to "openai" or "anthropic" and model.model`}, nil},
		{"model settings on a flow", ollama, nil, func(a *Assistant) {
			a.Model = Model{Provider: "flow", Model: "llama3.2", MaxTokens: 100}
			a.Flow = json.RawMessage(aFlow)
		}, map[string]string{"model.model": "would be ignored", "model.maxTokens": "would be ignored"}, nil},
		{"a flow under a model", ollama, nil, func(a *Assistant) {
			a.Model = Model{Provider: "openai", Model: "llama3.2"}
			a.Flow = json.RawMessage(aFlow)
		}, map[string]string{"flow": `would be ignored: model.provider is "openai", so the model answers, not the flow`}, nil},
		{"tools of a note taker", noModel, nil, func(a *Assistant) {
			a.Tools = []Tool{{Name: "lookup", URL: "https://tools.example.com", TimeoutSeconds: 10}}
		}, map[string]string{"tools[0].name": "would be ignored: this assistant has neither a flow nor a model, so it calls no tool"},
			map[string]string{"flow": "it takes a message"}},
		{"model provider not configured", noModel, nil, func(a *Assistant) { a.Model = Model{Provider: "openai", Model: "gpt-4o-mini"} },
			map[string]string{"model.provider": `provider "openai" is not configured on this server (it has: flow); start the server with --openai-api-key / SWITCHBOARD_OPENAI_API_KEY`}, nil},
		{"unknown model provider", noModel, nil, func(a *Assistant) { a.Model = Model{Provider: "gpt", Model: "x"} },
			map[string]string{"model.provider": `unknown provider "gpt"; known providers: flow, openai, anthropic`}, nil},
		{"the only model provider without a model", ollama, nil, func(a *Assistant) {},
			map[string]string{"model.model": `"openai" is this server's only model provider, the default of an assistant without a flow`}, nil},

		// Stored values: kept, warned of, never blocking an unrelated change.
		{"stored model provider the server lost", noModel, stored(noModel, func(a *Assistant) { a.Model = Model{Provider: "openai", Model: "m"} }),
			func(a *Assistant) { a.Model = Model{Provider: "openai", Model: "m"}; a.Name = "Renamed" }, nil,
			map[string]string{"model.provider": "the stored value is kept, and its calls end failed (assistant-model-failed) until then"}},
		{"stored voice the server lost", noModel, stored(noModel, func(a *Assistant) { a.Voice.Provider = "deepgram" }),
			func(a *Assistant) { a.Voice.Provider = "deepgram"; a.Name = "Renamed" }, nil,
			map[string]string{"voice.provider": "the stored value is kept, and its calls with audio end failed (voice-failed) until then", "flow": "it takes a message"}},
		{"stored prompt of a flow", noModel, stored(noModel, func(a *Assistant) { a.SystemPrompt = "Be brief."; a.Flow = json.RawMessage(aFlow) }),
			func(a *Assistant) { a.SystemPrompt = "Be brief."; a.Flow = json.RawMessage(aFlow); a.Name = "Renamed" }, nil,
			map[string]string{"systemPrompt": "is kept but not used: only a language model reads it"}},
		{"a stored prompt changed on a flow", noModel, stored(noModel, func(a *Assistant) { a.SystemPrompt = "Be brief."; a.Flow = json.RawMessage(aFlow) }),
			func(a *Assistant) { a.SystemPrompt = "Be very brief."; a.Flow = json.RawMessage(aFlow) },
			map[string]string{"systemPrompt": "would be ignored"}, nil},
		{"a model assistant switched to a flow keeps its prompt", twoModels,
			stored(twoModels, func(a *Assistant) { a.SystemPrompt = "Be brief."; a.Model = Model{Provider: "openai", Model: "m"} }),
			func(a *Assistant) { a.SystemPrompt = "Be brief."; a.Flow = json.RawMessage(aFlow) }, nil,
			map[string]string{"systemPrompt": "is kept but not used"}},
		{"the same flow, reindented, under a model", ollama,
			stored(ollama, func(a *Assistant) { a.Model = Model{Provider: "openai", Model: "m"}; a.Flow = json.RawMessage(aFlow) }),
			func(a *Assistant) {
				a.Model = Model{Provider: "openai", Model: "m"}
				a.Flow = json.RawMessage("{\n  \"start\": \"bye\",\n  \"nodes\": {\"bye\": {\"type\": \"end\", \"text\": \"Bye.\"}}\n}")
			}, nil, map[string]string{"flow": "is kept but not used"}},
		{"a typo is refused even unchanged", noModel, stored(noModel, func(a *Assistant) { a.Voice.Provider = "hal" }),
			func(a *Assistant) { a.Voice.Provider = "hal" }, map[string]string{"voice.provider": `unknown provider "hal"`},
			map[string]string{"flow": "it takes a message"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid(tc.p)
			tc.change(&a)
			var f apperr.Fields
			warns := a.Validate(tc.p, tc.was, &f)
			gotErrs := map[string]string{}
			for _, e := range f {
				gotErrs[e.Field] = e.Message
			}
			check(t, "error", gotErrs, tc.errs)
			if len(f) > 0 {
				return // warnings mean nothing with errors
			}
			gotWarns := map[string]string{}
			for _, w := range warns {
				gotWarns[w.Field] = w.Message
			}
			check(t, "warning", gotWarns, tc.warns)
		})
	}
}

func check(t *testing.T, kind string, got, want map[string]string) {
	t.Helper()
	for field, msg := range got {
		if w, ok := want[field]; !ok {
			t.Errorf("Validate: unexpected %s on %s: %s", kind, field, msg)
		} else if !strings.Contains(msg, w) {
			t.Errorf("Validate: %s on %s = %q; want it to contain %q", kind, field, msg, w)
		}
	}
	for field := range want {
		if _, ok := got[field]; !ok {
			t.Errorf("Validate: no %s on %s; got %v", kind, field, got)
		}
	}
}

// TestChoices: every known provider of each role, configured or with what
// enables it, and the defaults marked.
func TestChoices(t *testing.T) {
	ch := ollama.Choices()
	var model []string
	for _, c := range ch.Model {
		s := c.Name
		if c.Configured {
			s += "+"
		}
		if c.Default {
			s += "*"
		}
		model = append(model, s)
	}
	if got := strings.Join(model, " "); got != "flow+ openai+* anthropic" {
		t.Errorf("Choices().Model = %s; want flow+ openai+* anthropic (+ configured, * default)", got)
	}
	if a := ch.Model[2]; !strings.Contains(a.Enable, "--anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY") {
		t.Errorf("Choices().Model anthropic Enable = %q; want the flag and variable", a.Enable)
	}
	if v := ch.Voice[0]; v.Name != "local" || !v.Configured || !v.Default || v.Enable != "" {
		t.Errorf("Choices().Voice[0] = %+v; want local, configured, default", v)
	}
	if len(ch.Transcriber) != 3 || ch.Transcriber[1].Enable == "" {
		t.Errorf("Choices().Transcriber = %+v; want local, deepgram, openai with how to enable the cloud ones", ch.Transcriber)
	}
}
