package httpapi

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"switchboard/internal/assistant"
)

// ollamaProviders is a server started with --openai-base-url only (one
// model provider).
var ollamaProviders = assistant.Providers{Model: []string{"flow", "openai"}, Voice: []string{"local"}, Transcriber: []string{"local"}}

// wantField fails unless out is a 400 whose error on field contains every part.
func wantField(t *testing.T, what string, st int, out map[string]any, field string, parts ...string) {
	t.Helper()
	if st != http.StatusBadRequest {
		t.Errorf("%s = %d; want 400 on %s; body %v", what, st, field, out)
		return
	}
	msg, ok := fieldErrors(out)[field]
	if !ok {
		t.Errorf("%s: no error on %s; errors %v", what, field, fieldErrors(out))
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%s: error on %s = %q; want it to contain %q", what, field, msg, p)
		}
	}
}

// warningsOf returns the answer's warnings as field → message, failing
// when the answer has no warnings array.
func warningsOf(t *testing.T, what string, out map[string]any) map[string]string {
	t.Helper()
	ws, ok := out["warnings"].([]any)
	if !ok {
		t.Errorf("%s: answer has no warnings array: %v", what, out)
	}
	m := map[string]string{}
	for _, w := range ws {
		w, _ := w.(map[string]any)
		m[w["field"].(string)], _ = w["message"].(string)
	}
	return m
}

// TestAssistantWithoutModel: on a server with no language model, an
// assistant with only a name and a first message is the note taker and
// the answer says so; a system prompt that would be ignored, a model
// provider the server is not configured for and a typo are 400s naming
// the field, the first two with the flags that configure a model.
func TestAssistantWithoutModel(t *testing.T) {
	b := newAPI(t, assistant.DefaultProviders())
	st, out := b.do("POST", "/v1/assistants", `{"name":"Receptionist","firstMessage":"Hi! This is Acme, how can I help?"}`)
	if st != http.StatusCreated {
		t.Fatalf("POST name and firstMessage = %d; want 201; body %v", st, out)
	}
	if w := warningsOf(t, "POST name and firstMessage", out)["flow"]; !strings.Contains(w, "it takes a message") ||
		!strings.Contains(w, `answers "Thank you, I have noted that. Goodbye." and hangs up`) || !strings.Contains(w, "--openai-base-url / SWITCHBOARD_OPENAI_BASE_URL") {
		t.Errorf("POST name and firstMessage: warning on flow = %q; want the note taker explained and how to configure a model", w)
	}

	const configure = "--openai-api-key / SWITCHBOARD_OPENAI_API_KEY"
	const local = "--openai-base-url / SWITCHBOARD_OPENAI_BASE_URL (a local OpenAI-compatible server such as Ollama"
	st, out = b.do("POST", "/v1/assistants", `{"name":"Receptionist","systemPrompt":"You are the receptionist of Acme."}`)
	wantField(t, "POST with a systemPrompt", st, out, "systemPrompt", "would be ignored: only a language model reads it", configure, local, "--anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY")
	st, out = b.do("POST", "/v1/assistants", `{"name":"Receptionist","model":{"provider":"openai","model":"gpt-4o-mini"}}`)
	wantField(t, "POST with model.provider openai", st, out, "model.provider", `provider "openai" is not configured on this server (it has: flow)`, configure, local)
	if strings.Contains(fieldErrors(out)["model.provider"], "unknown") {
		t.Errorf("POST with model.provider openai: %q says unknown; openai is known, not configured", fieldErrors(out)["model.provider"])
	}
	st, out = b.do("POST", "/v1/assistants", `{"name":"Receptionist","model":{"provider":"open-ai","model":"gpt-4o-mini"}}`)
	wantField(t, "POST with model.provider open-ai", st, out, "model.provider", `unknown provider "open-ai"; known providers: flow, openai, anthropic`)

	// A flow assistant converses offline: no warning.
	st, out = b.do("POST", "/v1/assistants", `{"name":"Booking line","flow":{"start":"bye","nodes":{"bye":{"type":"end","text":"Bye."}}}}`)
	if st != http.StatusCreated || len(warningsOf(t, "POST a flow", out)) != 0 || out["data"].(map[string]any)["model"].(map[string]any)["provider"] != "flow" {
		t.Errorf("POST a flow = %d %v; want 201, provider flow, no warnings", st, out)
	}
}

// TestAssistantOneModel: on a server with exactly one model provider, an
// assistant without a flow gets it (the README's model assistant names
// only the model); one without a model name is a 400 on model.model
// saying why; a flow stays a flow.
func TestAssistantOneModel(t *testing.T) {
	b := newAPI(t, ollamaProviders)
	a := b.must(201, "POST", "/v1/assistants", `{"name":"Receptionist","firstMessage":"Hi! This is Acme, how can I help?",
		"systemPrompt":"You are the receptionist of Acme. Answer in one short sentence.","model":{"model":"llama3.2"}}`)
	if m := a["model"].(map[string]any); m["provider"] != "openai" || m["model"] != "llama3.2" {
		t.Errorf("POST with model.model only: model = %v; want openai, llama3.2", m)
	}
	st, out := b.do("POST", "/v1/assistants", `{"name":"Receptionist","firstMessage":"Hi!"}`)
	wantField(t, "POST name and firstMessage", st, out, "model.model", `is required for provider "openai"`, `"openai" is this server's only model provider, the default of an assistant without a flow`)
	f := b.must(201, "POST", "/v1/assistants", `{"name":"Booking line","flow":{"start":"bye","nodes":{"bye":{"type":"end","text":"Bye."}}}}`)
	if p := f["model"].(map[string]any)["provider"]; p != "flow" {
		t.Errorf("POST a flow without model: provider %v; want flow", p)
	}
	st, out = b.do("POST", "/v1/assistants", `{"name":"x","model":{"provider":"flow"},"flow":{"start":"bye","nodes":{"bye":{"type":"end","text":"Bye."}}},"systemPrompt":"Be brief."}`)
	wantField(t, "POST a flow with a systemPrompt", st, out, "systemPrompt", `set model.provider to "openai" and model.model`)
}

// TestAssistantServerChanged: a stored assistant whose model provider the
// server no longer runs is not refused an unrelated change: the answer
// keeps the provider and warns that its calls fail until the server has
// it again. Changing to it is refused.
func TestAssistantServerChanged(t *testing.T) {
	b := newAPI(t, ollamaProviders)
	id := b.must(201, "POST", "/v1/assistants", `{"name":"Receptionist","systemPrompt":"Be brief.","model":{"provider":"openai","model":"llama3.2"}}`)["id"].(string)
	// The same database, served without the model.
	b.s = New(Config{PublicURL: "http://api.test", Providers: assistant.DefaultProviders()}, b.db, nil, nil, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(b.s.Close)
	st, out := b.do("PATCH", "/v1/assistants/"+id, `{"name":"Front desk"}`)
	if st != http.StatusOK {
		t.Fatalf("PATCH name on a server without the model = %d; want 200; body %v", st, out)
	}
	if w := warningsOf(t, "PATCH name", out)["model.provider"]; !strings.Contains(w, "the stored value is kept, and its calls end failed (assistant-model-failed)") ||
		!strings.Contains(w, "--openai-base-url / SWITCHBOARD_OPENAI_BASE_URL") {
		t.Errorf("PATCH name: warning on model.provider = %q; want what fails and how to configure it", w)
	}
	if d := out["data"].(map[string]any); d["name"] != "Front desk" || d["systemPrompt"] != "Be brief." || d["model"].(map[string]any)["provider"] != "openai" {
		t.Errorf("PATCH name = %v; want the new name, the prompt and the provider kept", d)
	}
	other := b.must(201, "POST", "/v1/assistants", `{"name":"Other"}`)["id"].(string)
	st, out = b.do("PATCH", "/v1/assistants/"+other, `{"model":{"provider":"anthropic","model":"claude"}}`)
	wantField(t, "PATCH to anthropic", st, out, "model.provider", `provider "anthropic" is not configured on this server`, "--anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY")
}

// TestProviders: GET /v1/providers lists every known provider of each
// role with what the server runs, the defaults and how to enable the rest.
func TestProviders(t *testing.T) {
	b := newAPI(t, ollamaProviders)
	st, raw := b.raw("GET", "/v1/providers", "")
	if st != http.StatusOK {
		t.Fatalf("GET /v1/providers = %d; body %s", st, raw)
	}
	conformsTo(t, "ProvidersResponse", raw)
	d := b.must(200, "GET", "/v1/providers", "")
	model := d["model"].([]any)
	var got []string
	for _, m := range model {
		m := m.(map[string]any)
		got = append(got, m["name"].(string))
		switch m["name"] {
		case "openai":
			if m["configured"] != true || m["default"] != true {
				t.Errorf("openai = %v; want configured and the default", m)
			}
		case "anthropic":
			if m["configured"] != false || !strings.Contains(m["enable"].(string), "SWITCHBOARD_ANTHROPIC_API_KEY") {
				t.Errorf("anthropic = %v; want not configured, with how to enable it", m)
			}
		}
	}
	if strings.Join(got, ",") != "flow,openai,anthropic" {
		t.Errorf("model providers = %v; want flow, openai, anthropic", got)
	}
	if len(d["voice"].([]any)) != 4 || len(d["transcriber"].([]any)) != 3 {
		t.Errorf("GET /v1/providers = %v; want 4 voices and 3 transcribers", d)
	}
	if st, _ := b.raw("GET", "/v1/providers?x=1", ""); st != http.StatusBadRequest {
		t.Errorf("GET /v1/providers?x=1 = %d; want 400", st)
	}
}
