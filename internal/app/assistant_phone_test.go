package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// phoneSettings is the part of an assistant view the phone settings are.
func phoneSettings(r resp) map[string]any {
	d := r.data()
	return map[string]any{"transfer": d["transfer"], "recording": d["recording"], "voicemail": d["voicemail"]}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return m
}

// TestAssistantPhoneSettings: transfer destinations, recording and
// voicemail are validated (400s naming each field, the destination's
// index included), stored across a restart, reset by null, and an
// assistant stored before they existed loads and updates with the
// defaults — on every database.
func TestAssistantPhoneSettings(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))

		// The body's shape first, then the values; each problem on its field.
		r := b.req("POST", "/v1/assistants", b.key, `{"name":"Front desk",
			"transfer":{"destinations":[{"description":"no number"}]},
			"recording":{"enabled":"yes"},
			"voicemail":{"action":"leaveMessage","beep":true}}`)
		expectFields(t, r, 400, "transfer.destinations[0].destination", "recording.enabled", "voicemail.beep")
		r = b.req("POST", "/v1/assistants", b.key, `{"name":"Front desk",
			"transfer":{"destinations":[
				{"destination":"(617) 555-0123"},
				{"destination":"+16175550123"},
				{"destination":"+16175550123"},
				{"destination":"sip:desk:secret@pbx.example.com"}]},
			"voicemail":{"action":"leaveMessage"}}`)
		expectFields(t, r, 400, "transfer.destinations[0].destination", "transfer.destinations[2].destination",
			"transfer.destinations[3].destination", "voicemail.message")
		if n := len(r.fieldNames()); n != 4 {
			t.Errorf("errors on %v; want exactly the 4 bad fields", r.fieldNames())
		}
		r = b.req("POST", "/v1/assistants", b.key, `{"name":"Router","model":{"provider":"flow"},"flow":{"start":"menu","nodes":{
			"menu":{"type":"ask","text":"Press 1.","branches":[{"match":{"kind":"dtmf","value":"1x"},"next":"go"}]},
			"go":{"type":"transfer","destination":"+1617555012"}}}}`)
		expectFields(t, r, 400, "flow.nodes.menu.branches[0].match.value")
		r = b.req("POST", "/v1/assistants", b.key, `{"name":"Router","model":{"provider":"flow"},"flow":{"start":"menu","nodes":{
			"menu":{"type":"ask","text":"Press 1.","branches":[{"match":{"kind":"dtmf","value":"1"},"next":"go"}]},
			"go":{"type":"transfer","destination":"+1617555012"}}}}`)
		expectFields(t, r, 400, "flow.nodes.go.destination")

		full := `{"transfer":{"destinations":[
				{"destination":"+16175550123","description":"Sales desk","message":"Transferring you to sales now."},
				{"destination":"sip:support@pbx.example.com","description":"","message":""}]},
			"recording":{"enabled":true},
			"voicemail":{"detect":true,"action":"leaveMessage","message":"Hi, this is Bright Smile Dental. Please call us back."}}`
		body := decodeJSON(t, full)
		body["name"] = "Front desk"
		body["model"] = map[string]any{"provider": "flow"}
		body["flow"] = decodeJSON(t, `{"start":"menu","nodes":{
			"menu":{"type":"ask","text":"Press 1 for sales.","branches":[{"match":{"kind":"dtmf","value":"1"},"next":"go"}]},
			"go":{"type":"transfer","destination":"+16175550123","success":true}}}`)
		created := b.must(201, "POST", "/v1/assistants", body)
		path := "/v1/assistants/" + created.data()["id"].(string)
		if got, want := phoneSettings(created), decodeJSON(t, full); !reflect.DeepEqual(got, want) {
			t.Errorf("POST /v1/assistants: %v; want %v", got, want)
		}
		b.restart()
		if got, want := phoneSettings(b.must(200, "GET", path, nil)), decodeJSON(t, full); !reflect.DeepEqual(got, want) {
			t.Errorf("GET %s after a restart: %v; want %v", path, got, want)
		}
		defaults := decodeJSON(t, `{"transfer":{"destinations":[]},"recording":{"enabled":false},"voicemail":{"detect":false,"action":"hangup","message":""}}`)
		if got := phoneSettings(b.must(200, "PATCH", path, `{"transfer":null,"recording":null,"voicemail":null}`)); !reflect.DeepEqual(got, defaults) {
			t.Errorf("PATCH with nulls: %v; want the defaults %v", got, defaults)
		}

		// An assistant stored before the settings existed.
		old := b.must(201, "POST", "/v1/assistants", `{"name":"Old"}`).data()["id"].(string)
		stripPhoneSettings(t, b, dbURL, old)
		oldPath := "/v1/assistants/" + old
		if got := phoneSettings(b.must(200, "GET", oldPath, nil)); !reflect.DeepEqual(got, defaults) {
			t.Errorf("GET an assistant stored without phone settings: %v; want the defaults %v", got, defaults)
		}
		if got := phoneSettings(b.must(200, "PATCH", oldPath, `{"firstMessage":"Hello."}`)); !reflect.DeepEqual(got, defaults) {
			t.Errorf("PATCH an assistant stored without phone settings: %v; want the defaults %v", got, defaults)
		}
		list := b.must(200, "GET", "/v1/assistants", nil).list()
		if len(list) != 2 {
			t.Fatalf("GET /v1/assistants: %d assistants; want 2", len(list))
		}
	})
}

// stripPhoneSettings rewrites an assistant's stored configuration without
// transfer, recording and voicemail, as assistants saved before them are.
func stripPhoneSettings(t *testing.T, b *testBundle, dbURL, id string) {
	t.Helper()
	ctx := context.Background()
	var db *sql.DB
	if b.m.db.lite != nil {
		db = b.m.db.lite.Writer
	} else {
		var err error
		if db, err = sql.Open("pgx", dbURL); err != nil {
			t.Fatal(err)
		}
		defer db.Close()
	}
	q := func(s string) string {
		if b.m.db.Kind == "postgres" {
			return strings.NewReplacer("?1", "$1", "?2", "$2").Replace(s)
		}
		return s
	}
	var config string
	if err := db.QueryRowContext(ctx, q(`SELECT config FROM assistants WHERE id = ?1`), id).Scan(&config); err != nil {
		t.Fatalf("reading the stored assistant: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(config), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"transfer", "recording", "voicemail"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("stored config has no %q: %s", k, config)
		}
		delete(m, k)
	}
	stripped, _ := json.Marshal(m)
	if _, err := db.ExecContext(ctx, q(`UPDATE assistants SET config = ?1 WHERE id = ?2`), string(stripped), id); err != nil {
		t.Fatalf("rewriting the stored assistant: %v", err)
	}
}
