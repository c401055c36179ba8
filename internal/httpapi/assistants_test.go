package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/store/sqlite"
)

// apiBundle is a Server on a fresh SQLite store and a key of one organization.
type apiBundle struct {
	t   *testing.T
	s   *Server
	db  *sqlite.DB
	org string
	key string
}

func newAPI(t *testing.T, p assistant.Providers) *apiBundle {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "api.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	org := auth.Org{ID: id.New(id.Org), Name: "Acme", CreatedAt: time.Now()}
	if err := db.CreateOrg(t.Context(), org); err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	k, secret := auth.NewKey(org.ID, "test", []string{auth.AssistantsRead, auth.AssistantsWrite, auth.CallsRead}, time.Now())
	if err := db.CreateKey(t.Context(), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	s := New(Config{PublicURL: "http://api.test", Providers: p}, db, nil, nil, slog.New(slog.DiscardHandler), nil)
	t.Cleanup(s.Close)
	return &apiBundle{t: t, s: s, db: db, org: org.ID, key: secret}
}

// raw sends a JSON request (none when body is empty) and returns the answer.
func (b *apiBundle) raw(method, path, body string) (int, []byte) {
	b.t.Helper()
	rq := httptest.NewRequest(method, path, strings.NewReader(body))
	rq.Header.Set("X-API-Key", b.key)
	if body != "" {
		rq.Header.Set("Content-Type", "application/json")
	}
	w := serve(b.t, b.s, rq)
	return w.Code, w.Body.Bytes()
}

// do sends a JSON request and decodes the answer.
func (b *apiBundle) do(method, path, body string) (int, map[string]any) {
	b.t.Helper()
	st, raw := b.raw(method, path, body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		b.t.Fatalf("%s %s: answer is not JSON: %v\n%s", method, path, err, raw)
	}
	return st, out
}

// must sends a request and returns data, failing unless the status is want.
func (b *apiBundle) must(want int, method, path, body string) map[string]any {
	b.t.Helper()
	st, out := b.do(method, path, body)
	if st != want {
		b.t.Fatalf("%s %s %s = %d; want %d; body %v", method, path, body, st, want, out)
	}
	d, _ := out["data"].(map[string]any)
	return d
}

// fieldErrors returns error.fields as field → message.
func fieldErrors(out map[string]any) map[string]string {
	e, _ := out["error"].(map[string]any)
	fs, _ := e["fields"].([]any)
	m := map[string]string{}
	for _, f := range fs {
		fe, _ := f.(map[string]any)
		m[fe["field"].(string)], _ = fe["message"].(string)
	}
	return m
}

// jsonOf decodes s, for comparing parts of answers.
func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

// speechOf is the part of an assistant the voice settings are.
func speechOf(a map[string]any) map[string]any {
	return map[string]any{"voice": a["voice"], "transcriber": a["transcriber"], "endpointing": a["endpointing"], "bargeIn": a["bargeIn"]}
}

var speechProviders = assistant.Providers{
	Model:       []string{"flow"},
	Voice:       []string{"local", "deepgram", "elevenlabs"},
	Transcriber: []string{"local", "deepgram"},
}

// TestAssistantSpeechSettings: the voice settings are decoded, stored,
// shown, and patched like the other nested objects (a nested object sent
// replaces the whole object; null resets it).
func TestAssistantSpeechSettings(t *testing.T) {
	b := newAPI(t, speechProviders)

	a := b.must(201, "POST", "/v1/assistants", `{"name":"Receptionist"}`)
	want := jsonOf(t, `{"voice":{"provider":"local","voiceId":"","fallback":null},
		"transcriber":{"provider":"local","model":"","language":"","fallback":null},
		"endpointing":{"silenceMs":0,"minSpeechMs":0,"maxWaitMs":0,"fastSilenceMs":0},
		"bargeIn":{"disabled":false,"minSpeechMs":0}}`)
	if got := speechOf(a); !reflect.DeepEqual(got, want) {
		t.Errorf("POST /v1/assistants without speech settings: got %v; want the defaults %v", got, want)
	}

	a = b.must(201, "POST", "/v1/assistants", `{"name":"Voice",
		"voice":{"provider":"elevenlabs","voiceId":"Rachel","fallback":{"provider":"deepgram","voiceId":"aura-asteria-en"}},
		"transcriber":{"provider":"deepgram","model":"nova-3","language":"en","fallback":{"provider":"local","language":"en-US"}},
		"endpointing":{"silenceMs":600,"minSpeechMs":100,"maxWaitMs":3000,"fastSilenceMs":200},
		"bargeIn":{"disabled":true,"minSpeechMs":400}}`)
	full := jsonOf(t, `{"voice":{"provider":"elevenlabs","voiceId":"Rachel","fallback":{"provider":"deepgram","voiceId":"aura-asteria-en"}},
		"transcriber":{"provider":"deepgram","model":"nova-3","language":"en","fallback":{"provider":"local","model":"","language":"en-US"}},
		"endpointing":{"silenceMs":600,"minSpeechMs":100,"maxWaitMs":3000,"fastSilenceMs":200},
		"bargeIn":{"disabled":true,"minSpeechMs":400}}`)
	if got := speechOf(a); !reflect.DeepEqual(got, full) {
		t.Errorf("POST /v1/assistants with speech settings: got %v; want %v", got, full)
	}
	path := "/v1/assistants/" + a["id"].(string)
	if got := speechOf(b.must(200, "GET", path, "")); !reflect.DeepEqual(got, full) {
		t.Errorf("GET %s: got %v; want %v", path, got, full)
	}

	for _, step := range []struct{ patch, want string }{
		{ // Other fields keep the speech settings.
			`{"firstMessage":"Hi"}`,
			`{"voice":{"provider":"elevenlabs","voiceId":"Rachel","fallback":{"provider":"deepgram","voiceId":"aura-asteria-en"}},
			  "transcriber":{"provider":"deepgram","model":"nova-3","language":"en","fallback":{"provider":"local","model":"","language":"en-US"}},
			  "endpointing":{"silenceMs":600,"minSpeechMs":100,"maxWaitMs":3000,"fastSilenceMs":200},
			  "bargeIn":{"disabled":true,"minSpeechMs":400}}`,
		},
		{ // A nested object sent replaces the whole object: its absent members take their defaults.
			`{"bargeIn":{"minSpeechMs":250},"endpointing":{"silenceMs":800},"voice":{"provider":"deepgram"}}`,
			`{"voice":{"provider":"deepgram","voiceId":"","fallback":null},
			  "transcriber":{"provider":"deepgram","model":"nova-3","language":"en","fallback":{"provider":"local","model":"","language":"en-US"}},
			  "endpointing":{"silenceMs":800,"minSpeechMs":0,"maxWaitMs":0,"fastSilenceMs":0},
			  "bargeIn":{"disabled":false,"minSpeechMs":250}}`,
		},
		{ // null resets to the defaults; a null fallback is no fallback.
			`{"bargeIn":null,"endpointing":null,"transcriber":{"provider":"deepgram","fallback":null}}`,
			`{"voice":{"provider":"deepgram","voiceId":"","fallback":null},
			  "transcriber":{"provider":"deepgram","model":"","language":"","fallback":null},
			  "endpointing":{"silenceMs":0,"minSpeechMs":0,"maxWaitMs":0,"fastSilenceMs":0},
			  "bargeIn":{"disabled":false,"minSpeechMs":0}}`,
		},
	} {
		got := speechOf(b.must(200, "PATCH", path, step.patch))
		if want := jsonOf(t, step.want); !reflect.DeepEqual(got, want) {
			t.Errorf("PATCH %s %s: got %v; want %v", path, step.patch, got, want)
		}
		if again := speechOf(b.must(200, "GET", path, "")); !reflect.DeepEqual(again, got) {
			t.Errorf("GET %s after PATCH %s: got %v; want what PATCH answered, %v", path, step.patch, again, got)
		}
	}
}

// TestAssistantSpeechErrors: every bad speech field is named at once, in
// the body's shape first, then in its values.
func TestAssistantSpeechErrors(t *testing.T) {
	b := newAPI(t, speechProviders)
	for _, tc := range []struct {
		name, body string
		want       map[string]string // field → part of its message
	}{
		{"shape", `{"name":"x",
			"voice":{"fallback":{"voiceId":"v"}},
			"transcriber":{"fallback":3},
			"endpointing":{"silenceMs":"500","maxWaitMs":1.5,"waitMs":100},
			"bargeIn":{"disabled":"yes","minSpeechMs":true}}`,
			map[string]string{
				"voice.fallback.provider": "is required",
				"transcriber.fallback":    "must be a JSON object",
				"endpointing.silenceMs":   "must be an integer",
				"endpointing.maxWaitMs":   "must be an integer",
				"endpointing.waitMs":      "is not a known field",
				"bargeIn.disabled":        "must be true or false",
				"bargeIn.minSpeechMs":     "must be an integer",
			}},
		{"values", `{"name":"x",
			"voice":{"provider":"openai","fallback":{"provider":"hal"}},
			"transcriber":{"provider":"deepgram","fallback":{"provider":"deepgram"}},
			"endpointing":{"silenceMs":3000,"minSpeechMs":-1},
			"bargeIn":{"minSpeechMs":5000}}`,
			map[string]string{
				"voice.provider":                `provider "openai" is not configured on this server (it has: local, deepgram, elevenlabs)`,
				"voice.fallback.provider":       `unknown provider "hal"; known providers: local, openai, elevenlabs, deepgram`,
				"transcriber.fallback.provider": `must differ from transcriber.provider ("deepgram")`,
				"endpointing.silenceMs":         "must not exceed maxWaitMs (2500), got 3000",
				"endpointing.minSpeechMs":       "must be from 1 to 2000 (0 for the default), got -1",
				"bargeIn.minSpeechMs":           "must be from 1 to 2000 (0 for the default), got 5000",
			}},
	} {
		for _, method := range []string{"POST", "PATCH"} {
			path := "/v1/assistants"
			if method == "PATCH" {
				path += "/" + b.must(201, "POST", "/v1/assistants", `{"name":"to patch"}`)["id"].(string)
			}
			st, out := b.do(method, path, tc.body)
			got := fieldErrors(out)
			if st != http.StatusBadRequest {
				t.Errorf("%s %s (%s) = %d; want 400; body %v", method, path, tc.name, st, out)
				continue
			}
			var gotFields, wantFields []string
			for f := range got {
				gotFields = append(gotFields, f)
			}
			for f, msg := range tc.want {
				wantFields = append(wantFields, f)
				if !strings.Contains(got[f], msg) {
					t.Errorf("%s %s (%s): %s message = %q; want it to contain %q", method, path, tc.name, f, got[f], msg)
				}
			}
			sort.Strings(gotFields)
			sort.Strings(wantFields)
			if !slices.Equal(gotFields, wantFields) {
				t.Errorf("%s %s (%s): fields in error %v; want %v", method, path, tc.name, gotFields, wantFields)
			}
		}
	}
}
