package assistantjson

import (
	"encoding/json"
	"errors"
	"reflect"
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
	a, err := c.Create(t.Context(), []byte(`{"name":"Desk","firstMessage":"Hi","endCallPhrases":["bye"],"endpointing":{"silenceMs":700},
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
	if err := c.Update(t.Context(), body, &b); err != nil {
		t.Fatalf("Update(Document(a)): %v", err)
	}
	a.Flow, b.Flow = compact(t, a.Flow), compact(t, b.Flow)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Update(Document(a)) changed the assistant:\n got %+v\nwant %+v", b, a)
	}

	err = c.Update(t.Context(), []byte(`{"flow":{"start":"a","nodes":{"a":{"type":"ask","text":"?","branches":[{"match":{"kind":"keywords","any":["x"]},"next":"b"}]}}}}`), &b)
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
