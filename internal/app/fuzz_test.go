package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzRequests sends arbitrary bodies to every POST/PATCH route through the
// real handler stack on a real SQLite store. No input may cause a 5xx or a
// non-JSON answer, a body with NUL or invalid UTF-8 is never accepted, and a
// rejected request must change nothing.
// `go test -fuzz FuzzRequests ./internal/app/` runs it; `make fuzz` for a short run.
func FuzzRequests(f *testing.F) {
	dir := f.TempDir()
	cfg := testConfig("sqlite:" + dir + "/fuzz.db")
	m, err := Start(f.Context(), cfg, discardLogger(), &bytes.Buffer{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.Close(f.Context()) })
	h := m.http.Handler
	key := m.BootstrapKey
	do := func(method, path, ct string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, bytes.NewReader(body))
		r.Header.Set("X-API-Key", key)
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// A fixture the bodies can refer to.
	asst := decodeID(f, do("POST", "/v1/assistants", "application/json", []byte(`{"name":"A","firstMessage":"hi"}`)))
	pn := decodeID(f, do("POST", "/v1/phone/purchases", "application/json", []byte(`{"number":"+14155550100"}`)))
	do("POST", "/v1/phone/allocate-assistant", "application/json", []byte(`{"id":"`+pn+`","outboundAssistantId":"`+asst+`"}`))

	routes := []string{
		"POST /v1/assistants", "PATCH /v1/assistants/" + asst, "POST /v1/calls/initiate", "POST /v1/calls/phone/initiate",
		"POST /v1/phone/purchases", "POST /v1/phone/contacts/" + pn, "POST /v1/phone/allocate-assistant",
		"POST /v1/phone/schedule-call", "POST /v1/phone/schedules/sch_x/cancel",
	}
	due := time.Now().Add(time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	seeds := []string{
		`{"name":"x","maxDurationSeconds":60,"model":{"provider":"flow"},"voice":{"provider":"local"}}`,
		`{"assistantId":"` + asst + `","type":"web"}`,
		`{"phone_purchase_id":"` + pn + `","phoneNumber":"+14155551234","provider":"sandbox"}`,
		`{"number":"+14155550101","provider":"sandbox"}`,
		`{"contacts":[{"name":"A","phoneNumber":"+14155551234","timezone":"UTC","metadata":{"a":1}}]}`,
		"name,phoneNumber\nA,+14155551234\n",
		`{"id":"` + pn + `","inboundAssistantId":"` + asst + `","message":"m"}`,
		`{"name":"s","contacts_id":["ct_x"],"phone_id":"` + pn + `","dates":["` + due + `"],"timezone":"UTC"}`,
		`{`, `[]`, `null`, `{"a":` + strings.Repeat("[", 5000), `{"name":"\ud800"}`, "\x00\xff", `{"name":1e999}`,
		// Hostile text: NUL, invalid UTF-8, lone surrogates, repeated keys, not quite E.164.
		`{"name":"a","name":"b"}`, `{"name":"a\u0000b"}`, "{\"name\":\"a\x00b\"}", "{\"name\":\"\xff\xfe\"}",
		`{"contacts":[{"phoneNumber":"+14155551234","metadata":{"k\u0000":"\udc00"}}]}`,
		"name,phoneNumber,notes\nA\x00,+14155551234,\xed\xa0\x80\n",
		`{"phone_purchase_id":"pn_\u0000","phoneNumber":"++14155551234"}`, `{"id":"` + pn + `x","message":"\ud83d\ude00"}`,
	}
	for i := range routes {
		for _, s := range seeds {
			f.Add(uint8(i), false, []byte(s))
		}
	}
	f.Add(uint8(5), true, []byte("name,phoneNumber\n\"unterminated,+1\n"))

	f.Fuzz(func(t *testing.T, route uint8, csv bool, body []byte) {
		method, path, _ := strings.Cut(routes[int(route)%len(routes)], " ")
		ct := "application/json"
		if csv {
			ct = "text/csv"
		}
		before := counts(t, do)
		w := do(method, path, ct, body)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q = %d: %s", method, path, body, w.Code, w.Body.String())
		}
		var env map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env["status"] == nil {
			t.Fatalf("%s %s %q answered non-envelope %q", method, path, body, w.Body.String())
		}
		if (!utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0) && w.Code < 400 {
			// NUL and invalid UTF-8 are refused wherever they are (text.go):
			// no store keeps them, and PostgreSQL would answer 500.
			t.Fatalf("%s %s %q = %d, want a 4xx for a body with NUL or invalid UTF-8: %s", method, path, body, w.Code, w.Body.String())
		}
		if w.Code >= 400 {
			if after := counts(t, do); after != before {
				t.Fatalf("%s %s %q = %d but changed state: %s → %s", method, path, body, w.Code, before, after)
			}
		}
	})
}

func decodeID(f *testing.F, w *httptest.ResponseRecorder) string {
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Data.ID == "" {
		f.Fatalf("fixture request = %d %s", w.Code, w.Body.String())
	}
	return env.Data.ID
}

// counts summarizes how many resources the organization has.
func counts(t *testing.T, do func(method, path, ct string, body []byte) *httptest.ResponseRecorder) string {
	var out []string
	for _, p := range []string{"/v1/assistants", "/v1/phone/purchases", "/v1/calls", "/v1/phone/schedules"} {
		w := do("GET", p, "", nil)
		if w.Code != http.StatusOK {
			t.Fatalf("GET %s = %d", p, w.Code)
		}
		var env struct {
			Data       []json.RawMessage `json:"data"`
			Pagination *struct{ Total int }
		}
		_ = json.Unmarshal(w.Body.Bytes(), &env)
		n := len(env.Data)
		if env.Pagination != nil {
			n = env.Pagination.Total
		}
		out = append(out, fmt.Sprint(n))
	}
	return strings.Join(out, "/")
}
