package assistantjson

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
)

// TestDocumentRoundTrip: an assistant's Document, applied back with
// Update, changes nothing, so an editor that starts from it loses no
// setting; a bad field is named as the REST API names it.
func TestDocumentRoundTrip(t *testing.T) {
	c := Config{Providers: assistant.DefaultProviders()}
	a, _, err := c.Create(t.Context(), []byte(`{"name":"Desk","firstMessage":"Hi","endCallPhrases":["bye"],"endpointing":{"silenceMs":700},
		"voicemail":{"detect":true,"action":"leaveMessage","message":"Call us back"},"transfer":{"destinations":[{"destination":"+14155550123","description":"Sales"}]},
		"flow":{"start":"a","nodes":{"a":{"type":"end","text":"Bye."}}}}`))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	doc, err := Document(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "toolSecret", "createdAt", "updatedAt"} {
		if _, ok := doc[k]; ok {
			t.Errorf("Document has %s, which Update refuses", k)
		}
	}
	body, _ := json.Marshal(doc)
	b := a
	if _, err := c.Update(t.Context(), body, &b); err != nil {
		t.Fatalf("Update(Document(a)): %v", err)
	}
	a.Flow, b.Flow = compact(t, a.Flow), compact(t, b.Flow)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Update(Document(a)) changed the assistant:\n got %+v\nwant %+v", b, a)
	}

	_, err = c.Update(t.Context(), []byte(`{"flow":{"start":"a","nodes":{"a":{"type":"ask","text":"?","branches":[{"match":{"kind":"keywords","any":["x"]},"next":"b"}]}}}}`), &b)
	var e *apperr.Error
	if !errors.As(err, &e) || len(e.Fields) == 0 || !strings.HasPrefix(e.Fields[0].Field, "flow.nodes.a.branches[0].next") {
		t.Errorf("Update with a flow naming a missing node = %v; want an error on flow.nodes.a.branches[0].next", err)
	}
}

func compact(t *testing.T, raw json.RawMessage) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return b
}

var (
	noModel   = assistant.DefaultProviders()
	oneModel  = assistant.Providers{Model: []string{"flow", "openai"}, Voice: []string{"local"}, Transcriber: []string{"local"}}
	twoModels = assistant.Providers{Model: []string{"flow", "openai", "anthropic"}, Voice: []string{"local"}, Transcriber: []string{"local"}}
)

const byeFlow = `{"start":"bye","nodes":{"bye":{"type":"end","text":"Bye."}}}`

// TestChooseModel: a request that names no model provider gets the
// server's only one when it has no flow (or names a model); with a flow,
// flow; a model named on a server with none or several is refused on
// model.provider, saying what to do.
func TestChooseModel(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    assistant.Providers
		body string
		want string // the provider, or "error on FIELD: part of its message"
	}{
		{"one model, no flow", oneModel, `{"name":"a","systemPrompt":"Be brief.","model":{"model":"llama3.2"}}`, "openai"},
		{"one model, no model named", oneModel, `{"name":"a","firstMessage":"Hi"}`, `error on model.model: "openai" is this server's only model provider`},
		{"one model, a flow", oneModel, `{"name":"a","flow":` + byeFlow + `}`, "flow"},
		{"one model, flow named", oneModel, `{"name":"a","model":{"provider":"flow"}}`, "flow"},
		{"no model", noModel, `{"name":"a","firstMessage":"Hi"}`, "flow"},
		{"no model, a model named", noModel, `{"name":"a","model":{"model":"llama3.2"}}`, "error on model.provider: is required with model.model, and this server has no language model: start it with --openai-api-key"},
		{"two models, a model named", twoModels, `{"name":"a","model":{"model":"llama3.2"}}`, "error on model.provider: this server has several model providers (openai, anthropic)"},
		{"two models, none named", twoModels, `{"name":"a"}`, "flow"},
	} {
		a, _, err := Config{Providers: tc.p}.Create(t.Context(), []byte(tc.body))
		field, msg, isErr := strings.Cut(strings.TrimPrefix(tc.want, "error on "), ": ")
		if !strings.HasPrefix(tc.want, "error on ") {
			isErr = false
		}
		switch {
		case isErr:
			var e *apperr.Error
			if !errors.As(err, &e) || !slices.ContainsFunc(e.Fields, func(f apperr.FieldError) bool { return f.Field == field && strings.Contains(f.Message, msg) }) {
				t.Errorf("Create(%s) %s: err = %v; want an error on %s containing %q", tc.name, tc.body, err, field, msg)
			}
		case err != nil:
			t.Errorf("Create(%s) %s: %v", tc.name, tc.body, err)
		case a.Model.Provider != tc.want:
			t.Errorf("Create(%s) %s: model.provider = %q; want %q", tc.name, tc.body, a.Model.Provider, tc.want)
		}
	}
	// A stored assistant keeps its provider when the server changes; a
	// model sent without a provider takes the rule again.
	a, _, err := Config{Providers: noModel}.Create(t.Context(), []byte(`{"name":"a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (Config{Providers: oneModel}).Update(t.Context(), []byte(`{"name":"b"}`), &a); err != nil || a.Model.Provider != "flow" {
		t.Errorf("Update(name) on a server that gained a model: provider %q, err %v; want flow kept", a.Model.Provider, err)
	}
	if _, err := (Config{Providers: oneModel}).Update(t.Context(), []byte(`{"model":{"model":"llama3.2"}}`), &a); err != nil || a.Model.Provider != "openai" {
		t.Errorf("Update(model without provider): provider %q, err %v; want openai", a.Model.Provider, err)
	}
}

// TestFlowTools: a tool no node of the flow calls would be ignored:
// refused when the request adds it, a warning when stored; a node calling
// a tool the assistant lacks is a warning (it fails at run time).
func TestFlowTools(t *testing.T) {
	c := Config{Providers: noModel, URLs: allowAll{}}
	flow := `{"start":"look","nodes":{"look":{"type":"tool","tool":"lookup","next":"bye","onError":"bye"},"bye":{"type":"end","text":"Bye."}}}`
	tool := func(name string) string {
		return `{"name":"` + name + `","url":"https://tools.example.com/` + name + `"}`
	}

	_, _, err := c.Create(t.Context(), []byte(`{"name":"a","flow":`+flow+`,"tools":[`+tool("lookup")+`,`+tool("cancel")+`]}`))
	var e *apperr.Error
	if !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "tools[1].name" || !strings.Contains(e.Fields[0].Message, `no tool node of the flow calls "cancel"`) {
		t.Fatalf("Create with a tool the flow does not call: %v; want one error on tools[1].name", err)
	}
	a, w, err := c.Create(t.Context(), []byte(`{"name":"a","flow":`+flow+`}`))
	if err != nil || len(w) != 1 || w[0].Field != "flow.nodes.look.tool" || !strings.Contains(w[0].Message, `calls "lookup", which is not one of this assistant's tools`) {
		t.Fatalf("Create with a flow calling a missing tool: warnings %v, err %v; want one warning on flow.nodes.look.tool", w, err)
	}
	if w, err := c.Update(t.Context(), []byte(`{"tools":[`+tool("lookup")+`]}`), &a); err != nil || len(w) != 0 {
		t.Fatalf("Update adding the tool: warnings %v, err %v; want none", w, err)
	}
	// The flow stops calling it: the stored tool is kept, warned of.
	w, err = c.Update(t.Context(), []byte(`{"flow":`+byeFlow+`}`), &a)
	if err != nil || len(w) != 1 || w[0].Field != "tools[0].name" || !strings.HasPrefix(w[0].Message, "is kept but not used") {
		t.Errorf("Update with a flow that no longer calls the tool: warnings %v, err %v; want one warning on tools[0].name", w, err)
	}
	if got := c.Warnings(a); len(got) != 1 || got[0].Field != "tools[0].name" {
		t.Errorf("Warnings(stored) = %v; want the same warning", got)
	}
}

type allowAll struct{}

func (allowAll) CheckURL(context.Context, string) error { return nil }
