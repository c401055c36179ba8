package ui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"switchboard/internal/call"
	"switchboard/internal/store"
)

// brokenFlow's ask branch goes to a node that does not exist, and its
// second branch's match has no kind.
const brokenFlow = `{"start":"greet","nodes":{
 "greet":{"type":"say","text":"Hello!","next":"ask"},
 "ask":{"type":"ask","text":"Sales or support?","branches":[
   {"match":{"kind":"keywords","any":["sales"]},"next":"sales"},
   {"match":{"any":["support"]},"next":"bye"}]},
 "bye":{"type":"end","text":"Goodbye.","success":true}}}`

const goodFlow = `{"start":"greet","nodes":{
 "greet":{"type":"say","text":"Hello!","next":"ask"},
 "ask":{"type":"ask","text":"Sales or support?","branches":[
   {"match":{"kind":"keywords","any":["sales"]},"next":"bye"},
   {"match":{"kind":"keywords","any":["support"]},"next":"bye"}]},
 "bye":{"type":"end","text":"Goodbye.","success":true}}}`

// assistantForm is the editor's fields as a browser sends them.
func assistantFormValues(csrf, name, flow string) url.Values {
	return url.Values{"csrf": {csrf}, "mode": {"form"}, "name": {name}, "firstMessage": {"Hi"}, "model.provider": {"flow"},
		"voice.provider": {"local"}, "transcriber.provider": {"local"}, "maxDurationSeconds": {"600"}, "silenceTimeoutSeconds": {"30"},
		"voicemail.action": {"hangup"}, "flow": {flow}}
}

var pageOne = store.Page{Page: 1, PageSize: 100}

var idInLocation = regexp.MustCompile(`^/ui/assistants/(asst_[A-Za-z0-9]+)\?saved=1$`)

// TestAssistantEditor: an assistant is created from the form, a broken
// flow is refused with each error on its control and its node marked in
// the graph, fixed, edited as JSON (keeping what the form does not show),
// and deleted; another organization's is a 404, and every form needs
// its CSRF token.
func TestAssistantEditor(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.do(http.MethodPost, "/ui/assistants", assistantFormValues(token, "", brokenFlow))
	wantStatus(t, "create with no name and a broken flow", p, http.StatusBadRequest)
	for _, want := range []string{
		`name="name" value="" required maxlength="200" aria-invalid="true"><span class="field-error" role="alert">is required and must not be blank</span>`,
		`<li>nodes.ask.branches[0].next: unknown node &#34;sales&#34;</li>`,
		`<li>nodes.ask.branches[1].match.kind: must be one of keywords`,
		`class="node node-ask bad" data-node="ask"`,
		`class="node node-missing missing" data-node="sales"`,
		`class="node node-say start" data-node="greet"`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("refused create: the page lacks %s", want)
		}
	}
	if !strings.Contains(p.body, `&#34;name&#34;: &#34;&#34;`) {
		t.Errorf("refused create: the JSON editor should show the defaults' document")
	}
	if n, _, _ := b.st.ListAssistants(t.Context(), b.orgA, pageOne); len(n) != 0 {
		t.Errorf("a refused create stored %d assistants", len(n))
	}

	p = br.do(http.MethodPost, "/ui/assistants", assistantFormValues(token, "Front desk", goodFlow))
	wantStatus(t, "create", p, http.StatusSeeOther)
	m := idInLocation.FindStringSubmatch(p.header.Get("Location"))
	if m == nil {
		t.Fatalf("create: Location = %q; want the new assistant's page", p.header.Get("Location"))
	}
	aid := m[1]
	page := br.get(p.header.Get("Location"))
	wantStatus(t, "GET the new assistant", page, http.StatusOK)
	if !strings.Contains(page.body, `<p class="notice" role="status">Saved.</p>`) || !strings.Contains(page.body, `data-node="bye"`) ||
		!strings.Contains(page.body, `dy="4">sales</text>`) {
		t.Errorf("the assistant's page lacks the saved notice or its graph (a bye node, an edge labelled sales)")
	}
	if !strings.Contains(page.body, `href="/ui/test-call?assistant=`+aid+`">Place a test call</a>`) {
		t.Errorf("the assistant's page has no link to place a test call with it")
	}
	if list := br.get("/ui/assistants").body; !strings.Contains(list, `href="/ui/assistants/`+aid+`">Front desk</a>`) {
		t.Errorf("the listing does not show Front desk")
	}

	// The JSON editor sets what the form does not show, and the form keeps it.
	doc := `{"name":"Front desk","model":{"provider":"flow"},"flow":` + goodFlow + `,"endpointing":{"silenceMs":700},"analysisPlan":{"summaryPrompt":"Sum up."}}`
	wantStatus(t, "save JSON", br.do(http.MethodPost, "/ui/assistants/"+aid, url.Values{"csrf": {token}, "mode": {"json"}, "document": {doc}}), http.StatusSeeOther)
	wantStatus(t, "save the form", br.do(http.MethodPost, "/ui/assistants/"+aid, assistantFormValues(token, "Front desk 2", goodFlow)), http.StatusSeeOther)
	a, err := b.st.GetAssistant(t.Context(), b.orgA, aid)
	if err != nil || a.Name != "Front desk 2" || a.Endpointing.SilenceMs != 700 || a.AnalysisPlan.SummaryPrompt != "Sum up." {
		t.Errorf("after JSON then form: %+v, %v; want the new name with endpointing and analysis plan kept", a, err)
	}
	p = br.do(http.MethodPost, "/ui/assistants/"+aid, url.Values{"csrf": {token}, "mode": {"json"}, "document": {`{"maxDurationSeconds":"long","colour":1}`}})
	wantStatus(t, "save bad JSON", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "<li>maxDurationSeconds: must be an integer</li>") || !strings.Contains(p.body, "<li>colour: is not a known field</li>") ||
		!strings.Contains(p.body, `<details class="json-editor" open>`) || !strings.Contains(p.body, `name="name" value="Front desk 2"`) {
		t.Errorf("refused JSON: want each error named by its field in the open JSON editor\n%s", p.body)
	}

	// Another organization's assistant, and forms without a token.
	other := b.signedIn(b.opB)
	otherToken := other.csrf()
	wantStatus(t, "B: GET A's assistant", other.get("/ui/assistants/"+aid), http.StatusNotFound)
	wantStatus(t, "B: save A's assistant", other.do(http.MethodPost, "/ui/assistants/"+aid, assistantFormValues(otherToken, "Mine", "")), http.StatusNotFound)
	wantStatus(t, "B: delete A's assistant", other.do(http.MethodPost, "/ui/assistants/"+aid+"/delete", url.Values{"csrf": {otherToken}}), http.StatusNotFound)
	for _, path := range []string{"/ui/assistants", "/ui/assistants/" + aid, "/ui/assistants/" + aid + "/delete"} {
		wantStatus(t, "POST "+path+" without a token", br.do(http.MethodPost, path, assistantFormValues("", "X", "")), http.StatusForbidden)
	}

	wantStatus(t, "delete", br.do(http.MethodPost, "/ui/assistants/"+aid+"/delete", url.Values{"csrf": {token}}), http.StatusSeeOther)
	wantStatus(t, "GET a deleted assistant", br.get("/ui/assistants/"+aid), http.StatusNotFound)
}

// TestTalkToAssistant: an assistant's page offers "Talk to this
// assistant" (the widget, from this origin, joining a call the dashboard
// makes): the POST makes a web call of that assistant for the operator's
// organization and answers its gateway URL; another organization's
// assistant is a 404, and the POST needs the CSRF token.
func TestTalkToAssistant(t *testing.T) {
	t.Parallel()
	type started struct{ org, asst string }
	made := make(chan started, 4)
	b := setup(t, func(c *Config) {
		c.PublicURL = "https://calls.example.com"
		c.StartWebCall = func(_ context.Context, orgID, assistantID string) (call.Call, error) {
			made <- started{orgID, assistantID}
			return call.Call{ID: "call_talk", OrgID: orgID, AssistantID: assistantID, Type: call.Web}, nil
		}
	})
	br := b.signedIn(b.opA)
	token := br.csrf()
	p := br.do(http.MethodPost, "/ui/assistants", assistantFormValues(token, "Front desk", goodFlow))
	m := idInLocation.FindStringSubmatch(p.header.Get("Location"))
	if m == nil {
		t.Fatalf("create: %d %s", p.status, p.header.Get("Location"))
	}
	aid := m[1]
	page := br.get("/ui/assistants/" + aid)
	for _, want := range []string{`data-talk="/ui/assistants/` + aid + `/talk"`, `<script src="/widget.js"></script>`, `<script src="/ui/static/talk.js"></script>`} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the assistant's page lacks %s", want)
		}
	}
	r := br.do(http.MethodPost, "/ui/assistants/"+aid+"/talk", url.Values{"csrf": {token}})
	wantStatus(t, "talk", r, http.StatusOK)
	if want := "wss://calls.example.com/new-web-call/connection?assistant_id=" + aid + "&call_id=call_talk"; r.body != want {
		t.Errorf("talk answered %q, want the call's gateway URL %q", r.body, want)
	}
	if got := <-made; got != (started{b.orgA, aid}) {
		t.Errorf("talk started %+v, want org A's assistant %s", got, aid)
	}
	wantStatus(t, "talk without a token", br.do(http.MethodPost, "/ui/assistants/"+aid+"/talk", url.Values{}), http.StatusForbidden)
	other := b.signedIn(b.opB)
	wantStatus(t, "B: talk to A's assistant", other.do(http.MethodPost, "/ui/assistants/"+aid+"/talk", url.Values{"csrf": {other.csrf()}}), http.StatusNotFound)
	if len(made) != 0 {
		t.Errorf("refused talks started %d calls", len(made))
	}
}
