package ui

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
	"switchboard/internal/id"
	"switchboard/internal/store"
	callview "switchboard/internal/view"
	"switchboard/internal/webhook"
)

// maxAssistantForm bounds an assistant's form: its document, as the REST
// API bounds a request body, and the form's other fields.
const maxAssistantForm = 1<<20 + 64<<10

// assistantsPageSize is the assistants listing's page size.
const assistantsPageSize = 50

type assistantsPage struct {
	Assistants []assistant.Assistant
	Total      int
	Page       int
	// PrevURL and NextURL are the neighbouring pages ("" at either end).
	PrevURL, NextURL string
}

func (s *Server) listAssistants(w http.ResponseWriter, r *request) error {
	n := pageParam(r)
	list, total, err := s.st.ListAssistants(r.Context(), r.op.OrgID, store.Page{Page: n, PageSize: assistantsPageSize})
	if err != nil {
		return err
	}
	p := assistantsPage{Assistants: list, Total: total, Page: n}
	p.PrevURL, p.NextURL = pager("/ui/assistants", n, assistantsPageSize, len(list), total)
	s.render(w, r, http.StatusOK, view{Name: "assistants", Nav: "assistants", Title: "Assistants", Data: p})
	return nil
}

// pageParam reads ?page=, 1 when absent or not a page number.
func pageParam(r *request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		return 1
	}
	return n
}

// pager gives the links to the pages around page n of a listing.
func pager(base string, n, size, shown, total int) (prev, next string) {
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	if n > 1 {
		prev = base + sep + "page=" + strconv.Itoa(n-1)
	}
	if (n-1)*size+shown < total {
		next = base + sep + "page=" + strconv.Itoa(n+1)
	}
	return prev, next
}

// assistantForm is the assistant's editor as filled in: the common
// settings as controls named by their field in the assistant's document,
// and the whole document as JSON.
type assistantForm struct {
	Name, FirstMessage, SystemPrompt, Language string
	ModelProvider, Model                       string
	VoiceProvider, VoiceID                     string
	TranscriberProvider, TranscriberModel      string
	EndCallPhrases                             string // one a line
	MaxDuration, SilenceTimeout                string
	VoicemailDetect                            bool
	VoicemailAction, VoicemailMessage          string
	Recording                                  bool
	Transfers                                  string // "destination | description | message", one a line
	Flow                                       string // JSON
	// Document is the whole assistant as JSON (the "JSON" tab).
	Document string
	// PromptSent says the system prompt control was posted: a disabled
	// one (the assistant's brain does not read it) is not, and the
	// stored prompt is kept.
	PromptSent bool
}

// assistantPage is the editor's data, for a new assistant (ID "") or an
// existing one.
type assistantPage struct {
	ID       string
	Talk     bool // the "Talk to this assistant" widget is offered
	Form     assistantForm
	Errs     *formErrors
	JSONMode bool // the JSON editor was the one sent (open it)
	Graph    *flowGraph
	// GraphNote says why there is no graph.
	GraphNote               string
	Models, Voices, Hearers []string
	// ServerRows are what this server runs and how to enable the rest,
	// a row a role.
	ServerRows []providerRow
	// PromptOff disables the system prompt: the form's model provider is
	// flow, or the server has no language model (NoModel); PromptNote
	// says why.
	PromptOff, NoModel bool
	PromptNote         string
	// Warnings are the stored assistant's (assistant.Warning).
	Warnings             []assistant.Warning
	VoicemailActions     []string
	Delete               *confirmForm
	Saved                bool
	CreatedAt, UpdatedAt string
}

// formOf fills the editor from a stored (or default) assistant.
func formOf(a assistant.Assistant) (assistantForm, error) {
	f := assistantForm{
		Name: a.Name, FirstMessage: a.FirstMessage, SystemPrompt: a.SystemPrompt, Language: a.Language,
		ModelProvider: a.Model.Provider, Model: a.Model.Model,
		VoiceProvider: a.Voice.Provider, VoiceID: a.Voice.VoiceID,
		TranscriberProvider: a.Transcriber.Provider, TranscriberModel: a.Transcriber.Model,
		EndCallPhrases: strings.Join(a.EndCallPhrases, "\n"),
		MaxDuration:    strconv.Itoa(a.MaxDurationSeconds), SilenceTimeout: strconv.Itoa(a.SilenceTimeoutSeconds),
		VoicemailDetect: a.Voicemail.Detect, VoicemailAction: a.Voicemail.Action, VoicemailMessage: a.Voicemail.Message,
		Recording: a.Recording.Enabled,
	}
	var lines []string
	for _, d := range a.Transfer.Destinations {
		lines = append(lines, strings.TrimRight(d.Destination+" | "+d.Description+" | "+d.Message, " |"))
	}
	f.Transfers = strings.Join(lines, "\n")
	if len(a.Flow) > 0 && string(a.Flow) != "null" {
		f.Flow = indentJSON(a.Flow)
	}
	doc, err := assistantjson.Document(a)
	if err != nil {
		return f, err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return f, err
	}
	f.Document = string(b)
	return f, nil
}

func indentJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// readAssistantForm reads the posted editor.
func readAssistantForm(r *request) assistantForm {
	v := r.PostForm.Get
	return assistantForm{
		Name: v("name"), FirstMessage: v("firstMessage"), SystemPrompt: v("systemPrompt"), Language: v("language"),
		ModelProvider: v("model.provider"), Model: v("model.model"),
		VoiceProvider: v("voice.provider"), VoiceID: v("voice.voiceId"),
		TranscriberProvider: v("transcriber.provider"), TranscriberModel: v("transcriber.model"),
		EndCallPhrases: v("endCallPhrases"), MaxDuration: v("maxDurationSeconds"), SilenceTimeout: v("silenceTimeoutSeconds"),
		VoicemailDetect: v("voicemail.detect") != "", VoicemailAction: v("voicemail.action"), VoicemailMessage: v("voicemail.message"),
		Recording: v("recording.enabled") != "", Transfers: v("transfer.destinations"), Flow: v("flow"), Document: v("document"),
		PromptSent: r.PostForm.Has("systemPrompt"),
	}
}

// lines splits a textarea into its non-blank lines, trimmed.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// number is a numeric control's value for the document: the number, or
// the text as typed, which the document's reader refuses by name.
func number(s string) any {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return s
}

// document turns the form's controls into the assistant's document,
// over base (the stored assistant's document, so that what the form does
// not show is kept; empty for a new one). A flow that is not JSON is an
// error on the flow control before anything else is checked.
func (f assistantForm) document(base map[string]any) ([]byte, error) {
	doc := base
	if doc == nil {
		doc = map[string]any{}
	}
	sub := func(key string) map[string]any {
		m, _ := doc[key].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		doc[key] = m
		return m
	}
	doc["name"], doc["firstMessage"] = f.Name, f.FirstMessage
	if f.PromptSent {
		doc["systemPrompt"] = f.SystemPrompt
	}
	if f.Language != "" {
		doc["language"] = f.Language
	}
	m := sub("model")
	m["provider"], m["model"] = f.ModelProvider, f.Model
	vo := sub("voice")
	vo["provider"], vo["voiceId"] = f.VoiceProvider, f.VoiceID
	tr := sub("transcriber")
	tr["provider"], tr["model"] = f.TranscriberProvider, f.TranscriberModel
	doc["endCallPhrases"] = append([]string{}, lines(f.EndCallPhrases)...)
	doc["maxDurationSeconds"], doc["silenceTimeoutSeconds"] = number(f.MaxDuration), number(f.SilenceTimeout)
	vm := sub("voicemail")
	vm["detect"], vm["action"], vm["message"] = f.VoicemailDetect, f.VoicemailAction, f.VoicemailMessage
	sub("recording")["enabled"] = f.Recording
	dests := []map[string]string{}
	for _, l := range lines(f.Transfers) {
		parts := strings.SplitN(l, "|", 3)
		d := map[string]string{"destination": strings.TrimSpace(parts[0])}
		if len(parts) > 1 {
			d["description"] = strings.TrimSpace(parts[1])
		}
		if len(parts) > 2 {
			d["message"] = strings.TrimSpace(parts[2])
		}
		dests = append(dests, d)
	}
	sub("transfer")["destinations"] = dests
	if fl := strings.TrimSpace(f.Flow); fl == "" {
		doc["flow"] = nil
	} else if err := json.Unmarshal([]byte(fl), new(any)); err != nil {
		return nil, apperr.Invalidf("flow", "is not valid JSON: %s", err.Error())
	} else {
		doc["flow"] = json.RawMessage(fl)
	}
	return json.Marshal(doc)
}

// assistantControl says which of the editor's controls shows an error
// about field: its own, or the list it is a line of ("line 2: …"), or the
// flow's (with the rest of the field's path).
func assistantControl(field string) (string, string) {
	switch {
	case field == "flow" || strings.HasPrefix(field, "flow."):
		rest := strings.TrimPrefix(strings.TrimPrefix(field, "flow"), ".")
		if rest == "" {
			return "flow", ""
		}
		return "flow", rest + ": "
	case strings.HasPrefix(field, "endCallPhrases["):
		return "endCallPhrases", lineOf(field) + ": "
	case strings.HasPrefix(field, "transfer.destinations"):
		if strings.HasPrefix(field, "transfer.destinations[") {
			return "transfer.destinations", lineOf(field) + ": "
		}
		return "transfer.destinations", ""
	}
	switch field {
	case "name", "firstMessage", "systemPrompt", "language", "model.provider", "model.model", "voice.provider", "voice.voiceId",
		"transcriber.provider", "transcriber.model", "endCallPhrases", "maxDurationSeconds", "silenceTimeoutSeconds",
		"voicemail.detect", "voicemail.action", "voicemail.message", "recording.enabled":
		return field, ""
	}
	return "", ""
}

// lineOf turns "endCallPhrases[2]…" into "line 3".
func lineOf(field string) string {
	_, rest, _ := strings.Cut(field, "[")
	n, err := strconv.Atoi(strings.SplitN(rest, "]", 2)[0])
	if err != nil {
		return field
	}
	return "line " + strconv.Itoa(n+1)
}

// jsonControl puts every error on the JSON editor, named by its field.
func jsonControl(field string) (string, string) { return "document", field + ": " }

// providerRow is one role of "What this server runs": the providers it
// runs, and those it does not with how to enable them.
type providerRow struct {
	Role, Label string
	Runs, Off   []assistant.Choice
}

func rowOf(role, label string, cs []assistant.Choice) providerRow {
	r := providerRow{Role: role, Label: label}
	for _, c := range cs {
		if c.Configured {
			r.Runs = append(r.Runs, c)
		} else {
			r.Off = append(r.Off, c)
		}
	}
	return r
}

// assistantChoices fills what the form offers: the providers this server
// runs (the selects), what it does not run and how to enable it, and the
// system prompt's state for the form's model provider.
func (s *Server) assistantChoices(p *assistantPage) {
	pr := s.cfg.Assistants.Providers
	p.Models, p.Voices, p.Hearers = pr.Model, pr.Voice, pr.Transcriber
	ch := pr.Choices()
	p.ServerRows = []providerRow{rowOf("model", "Model provider", ch.Model), rowOf("voice", "Voice", ch.Voice),
		rowOf("transcriber", "Transcriber", ch.Transcriber)}
	p.VoicemailActions = []string{assistant.VoicemailHangup, assistant.VoicemailLeaveMessage}
	p.NoModel = len(pr.Models()) == 0
	p.PromptOff = p.NoModel || p.Form.ModelProvider == assistant.ProviderFlow
	if p.NoModel {
		p.PromptNote = "Not used: only a language model reads a system prompt, and " + pr.ModelHint() + "."
	} else {
		p.PromptNote = "Not used with the model provider flow: only a language model reads a system prompt. Choose a model provider to write one."
	}
}

// withGraph draws the flow of the form (as sent, valid or not), marking
// the nodes errors name.
func (p *assistantPage) withGraph(flowJSON string) {
	var bad map[string][]string
	if p.Errs != nil {
		bad = flowErrorTargets(p.Errs.ByField)
	}
	if strings.TrimSpace(flowJSON) == "" {
		p.GraphNote = "This assistant has no flow: its model answers."
		if p.Form.ModelProvider == assistant.ProviderFlow || p.Form.ModelProvider == "" {
			p.GraphNote = "This assistant has no flow and no model: it takes a message (it says its first message, hears one caller turn, thanks the caller and hangs up). Write a flow below, or choose a model provider, to converse."
		}
		return
	}
	if p.Graph = buildGraph(json.RawMessage(flowJSON), bad); p.Graph == nil {
		p.GraphNote = "The flow cannot be drawn: it is not a JSON object with nodes."
	}
}

// flowOfDocument is the flow of a JSON document, for the graph.
func flowOfDocument(doc string) string {
	var d struct {
		Flow json.RawMessage `json:"flow"`
	}
	if json.Unmarshal([]byte(doc), &d) != nil || string(d.Flow) == "null" {
		return ""
	}
	return string(d.Flow)
}

func (s *Server) newAssistant(w http.ResponseWriter, r *request) error {
	def := assistant.Defaults(s.cfg.Assistants.Providers)
	f, err := formOf(def)
	if err != nil {
		return err
	}
	f.Document = "{\n  \"name\": \"\"\n}"
	p := assistantPage{Form: f}
	s.assistantChoices(&p)
	p.withGraph("")
	s.render(w, r, http.StatusOK, view{Name: "assistant", Nav: "assistants", Title: "New assistant", Data: p})
	return nil
}

// ownAssistant reads the path's assistant of the operator's organization;
// another organization's is not found, like one that does not exist.
func (s *Server) ownAssistant(r *request) (assistant.Assistant, error) {
	return own(r, id.Assistant, "assistant", s.st.GetAssistant)
}

func (s *Server) showAssistant(w http.ResponseWriter, r *request) error {
	a, err := s.ownAssistant(r)
	if err != nil {
		return err
	}
	return s.storedAssistant(w, r, http.StatusOK, a, assistantPage{Saved: r.URL.Query().Get("saved") != ""})
}

// storedAssistant renders the editor of a as stored, with p's notice or
// errors.
func (s *Server) storedAssistant(w http.ResponseWriter, r *request, status int, a assistant.Assistant, p assistantPage) error {
	f, err := formOf(a)
	if err != nil {
		return err
	}
	p.ID, p.Form = a.ID, f
	s.assistantPage(&p, a)
	if p.Errs == nil {
		p.Warnings = s.cfg.Assistants.Warnings(a)
	}
	p.withGraph(f.Flow)
	s.render(w, r, status, view{Name: "assistant", Nav: "assistants", Title: a.Name, Data: p})
	return nil
}

func (s *Server) assistantPage(p *assistantPage, a assistant.Assistant) {
	s.assistantChoices(p)
	p.Talk = s.cfg.StartWebCall != nil
	p.CreatedAt, p.UpdatedAt = formatTime(a.CreatedAt), formatTime(a.UpdatedAt)
	p.Delete = &confirmForm{Label: "Delete assistant", Action: "/ui/assistants/" + a.ID + "/delete",
		Question: "Delete " + a.Name + "? Calls keep their records; numbers using it must be given another assistant first."}
}

// saveAssistant creates (no id in the path) or updates an assistant from
// the form's controls or, when the JSON editor was sent, its document; a
// refused one is shown again as sent, each error on its control and its
// flow node.
func (s *Server) saveAssistant(w http.ResponseWriter, r *request) error {
	var (
		cur  assistant.Assistant
		base map[string]any
		err  error
	)
	creating := r.PathValue("id") == ""
	if !creating {
		if cur, err = s.ownAssistant(r); err != nil {
			return err
		}
		if base, err = assistantjson.Document(cur); err != nil {
			return err
		}
	}
	f := readAssistantForm(r)
	jsonMode := r.PostForm.Get("mode") == "json"
	var body []byte
	if jsonMode {
		body = []byte(f.Document)
	} else {
		body, err = f.document(base)
	}
	a := cur
	if err == nil {
		// The warnings are shown by the assistant's page after the redirect.
		if creating {
			a, _, err = s.cfg.Assistants.Create(r.Context(), body)
		} else {
			_, err = s.cfg.Assistants.Update(r.Context(), body, &a)
		}
	}
	if err == nil {
		now := s.cfg.Now().UTC()
		a.UpdatedAt = now
		if a.ToolSecret == "" {
			a.ToolSecret = webhook.NewSecret()
		}
		if creating {
			a.ID, a.OrgID, a.CreatedAt = id.New(id.Assistant), r.op.OrgID, now
			err = s.st.CreateAssistant(r.Context(), a)
		} else {
			err = s.st.UpdateAssistant(r.Context(), a)
		}
		if err == nil {
			return seeOther(w, r, "/ui/assistants/"+a.ID+"?saved=1")
		}
	}
	control := assistantControl
	if jsonMode {
		control = jsonControl
	}
	fe, ok := userError(err, control)
	if !ok {
		return err
	}
	// The editor that was not sent shows the stored assistant (or the
	// defaults), the one that was sent shows what was sent.
	stored := cur
	if creating {
		stored = assistant.Defaults(s.cfg.Assistants.Providers)
	}
	shown, ferr := formOf(stored)
	if ferr != nil {
		return ferr
	}
	if jsonMode {
		shown.Document = f.Document
	} else {
		doc, prompt := shown.Document, shown.SystemPrompt
		shown = f
		shown.Document = doc
		if !f.PromptSent { // disabled: the stored prompt, kept
			shown.SystemPrompt = prompt
		}
	}
	p := assistantPage{ID: cur.ID, Form: shown, Errs: fe, JSONMode: jsonMode}
	if creating {
		s.assistantChoices(&p)
	} else {
		s.assistantPage(&p, cur)
	}
	if jsonMode {
		p.withGraph(flowOfDocument(f.Document))
	} else {
		p.withGraph(f.Flow)
	}
	title := "New assistant"
	if !creating {
		title = cur.Name
	}
	s.render(w, r, errorStatus(err), view{Name: "assistant", Nav: "assistants", Title: title, Data: p})
	return nil
}

func (s *Server) deleteAssistant(w http.ResponseWriter, r *request) error {
	a, err := s.ownAssistant(r)
	if err != nil {
		return err
	}
	err = s.st.DeleteAssistant(r.Context(), r.op.OrgID, a.ID)
	if err == nil {
		return seeOther(w, r, "/ui/assistants")
	}
	if !apperr.Is(err, apperr.Conflict) {
		return err
	}
	// Shown on the assistant's page, which stays as it was.
	fe, _ := userError(apperr.New(apperr.Conflict, "%s is used by a purchased number: give the number another assistant under Numbers first", a.Name), nil)
	return s.storedAssistant(w, r, http.StatusConflict, a, assistantPage{Errs: fe})
}

// talkToAssistant creates a web call of the assistant for the signed-in
// operator ("Talk to this assistant") and answers its gateway URL as
// text: the page's widget joins it (Switchboard.join), so the browser
// holds no key. The call is an ordinary web call, listed in Calls.
func (s *Server) talkToAssistant(w http.ResponseWriter, r *request) error {
	a, err := s.ownAssistant(r)
	if err != nil {
		return err
	}
	if s.cfg.StartWebCall == nil {
		return apperr.New(apperr.Unavailable, "web calls cannot be started from the dashboard on this server")
	}
	c, err := s.cfg.StartWebCall(r.Context(), r.op.OrgID, a.ID)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err = io.WriteString(w, callview.GatewayURL(s.cfg.PublicURL, c))
	return err
}
