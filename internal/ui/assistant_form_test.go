package ui

import (
	"net/http"
	"strings"
	"testing"

	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
)

// TestAssistantFormServer: the form shows what this server runs and how
// to enable the rest; without a model on the server the system prompt is
// disabled with why, and a stored prompt survives a save; a saved note
// taker's page shows its warning; the list marks it.
func TestAssistantFormServer(t *testing.T) {
	t.Parallel()
	b := setup(t, nil) // assistant.DefaultProviders: no language model
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.get("/ui/assistants/new")
	wantStatus(t, "GET the new assistant form", p, http.StatusOK)
	for _, want := range []string{
		`<summary>What this server runs</summary>`,
		`<tr data-role="model"><th scope="row">Model provider</th>`,
		`<span class="provider">flow ▸ default</span>`,
		`<code>openai</code>: <span class="small">start the server with --openai-api-key / SWITCHBOARD_OPENAI_API_KEY (OpenAI itself), or --openai-base-url / SWITCHBOARD_OPENAI_BASE_URL (a local OpenAI-compatible server such as Ollama: http://127.0.0.1:11434/v1)</span>`,
		`<code>anthropic</code>: <span class="small">start the server with --anthropic-api-key / SWITCHBOARD_ANTHROPIC_API_KEY</span>`,
		`<tr data-role="voice"><th scope="row">Voice</th>`,
		`<code>elevenlabs</code>: <span class="small">start the server with --elevenlabs-api-key / SWITCHBOARD_ELEVENLABS_API_KEY</span>`,
		`<tr data-role="transcriber"><th scope="row">Transcriber</th>`,
		`<textarea name="systemPrompt" rows="4" id="system-prompt" aria-describedby="system-prompt-note" disabled data-no-model="1">`,
		`<span class="hint" id="system-prompt-note">Not used: only a language model reads a system prompt, and this server has no language model: start it with --openai-api-key`,
		`/ui/static/assistant.js?v=`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("new assistant form lacks %s", want)
		}
	}

	// A note taker: saved, and its page says what it will do.
	p = br.do(http.MethodPost, "/ui/assistants", assistantFormValues(token, "Front desk", ""))
	wantStatus(t, "create a note taker", p, http.StatusSeeOther)
	m := idInLocation.FindStringSubmatch(p.header.Get("Location"))
	if m == nil {
		t.Fatalf("create: Location = %q", p.header.Get("Location"))
	}
	page := br.get(p.header.Get("Location")).body
	if !strings.Contains(page, `<section class="assistant-warnings" id="assistant-warnings" role="status"`) ||
		!strings.Contains(page, `<li data-field="flow"><code>flow</code> this assistant has neither a flow nor a language model, so it takes a message`) {
		t.Errorf("the note taker's page does not show its warning")
	}
	if list := br.get("/ui/assistants").body; !strings.Contains(list, `flow <span class="muted small">(no flow: takes a message)</span>`) {
		t.Errorf("the listing does not mark the note taker")
	}

	// A prompt stored from before (a server that had a model) is shown,
	// disabled, warned of, and kept by a save of the form.
	a, err := b.st.GetAssistant(t.Context(), b.orgA, m[1])
	if err != nil {
		t.Fatal(err)
	}
	a.SystemPrompt = "Be brief."
	if err := b.st.UpdateAssistant(t.Context(), a); err != nil {
		t.Fatal(err)
	}
	page = br.get("/ui/assistants/" + a.ID).body
	if !strings.Contains(page, `disabled data-no-model="1">Be brief.</textarea>`) || !strings.Contains(page, `<li data-field="systemPrompt"><code>systemPrompt</code> is kept but not used`) {
		t.Errorf("a stored prompt: want it shown disabled and warned of\n%s", page)
	}
	wantStatus(t, "save the form", br.do(http.MethodPost, "/ui/assistants/"+a.ID, assistantFormValues(token, "Front desk 2", "")), http.StatusSeeOther)
	if got, _ := b.st.GetAssistant(t.Context(), b.orgA, a.ID); got.Name != "Front desk 2" || got.SystemPrompt != "Be brief." {
		t.Errorf("after a save: name %q, prompt %q; want the new name and the prompt kept", got.Name, got.SystemPrompt)
	}
}

// TestAssistantFormOneModel: with one model provider, a new assistant
// defaults to it and the prompt is enabled; a flow's prompt control is
// disabled (the script enables it when a model is chosen), and a prompt
// typed for a flow is refused on its control.
func TestAssistantFormOneModel(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		c.Assistants = assistantjson.Config{Providers: assistant.Providers{Model: []string{"flow", "openai"}, Voice: []string{"local"}, Transcriber: []string{"local"}}}
	})
	br := b.signedIn(b.opA)
	token := br.csrf()
	p := br.get("/ui/assistants/new").body
	if !strings.Contains(p, `<option selected>openai</option>`) || !strings.Contains(p, `<span class="provider">openai ▸ default</span>`) {
		t.Errorf("new form: want openai selected, the default")
	}
	if !strings.Contains(p, `id="system-prompt" aria-describedby="system-prompt-note">`) || !strings.Contains(p, `<span class="hint" id="system-prompt-note" hidden>Not used with the model provider flow`) {
		t.Errorf("new form with a model: want the prompt enabled, its note hidden")
	}
	v := assistantFormValues(token, "Booking", goodFlow)
	v.Set("systemPrompt", "Be brief.")
	r := br.do(http.MethodPost, "/ui/assistants", v)
	wantStatus(t, "create a flow with a prompt", r, http.StatusBadRequest)
	if !strings.Contains(r.body, `would be ignored: only a language model reads it, and this assistant&#39;s replies come from its flow`) {
		t.Errorf("refused flow with a prompt: want the error on systemPrompt\n%.2000s", r.body)
	}
	if !strings.Contains(r.body, `id="system-prompt" aria-describedby="system-prompt-note" disabled aria-invalid="true">Be brief.</textarea>`) {
		t.Errorf("refused flow with a prompt: want the control disabled (flow), invalid, with the text as sent")
	}
	v.Del("systemPrompt")
	wantStatus(t, "create the flow", br.do(http.MethodPost, "/ui/assistants", v), http.StatusSeeOther)
}
