package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/id"
)

// TestEveryOperationAnswersAsDocumented drives every route with the
// requests every route refuses the same way — no key, a key without its
// scope, an id that exists nowhere, a body of the wrong type or size, a
// body with an unknown field — and checks each answer against the
// operation in openapi.json (serve): a status the operation lists, its
// media type and schema. A route added without its error answers
// documented fails here.
func TestEveryOperationAnswersAsDocumented(t *testing.T) {
	b := newControlAPI(t, nil)
	noScope, weak := auth.NewKey(b.org, "none", []string{}, time.Now())
	if err := b.db.CreateKey(t.Context(), noScope); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{"{contactId}": id.Contact, "{messageId}": "msg", "{number}": ""}
	prefix := map[string]string{"calls": id.Call, "purchases": id.Purchase, "contacts": id.Purchase, "connections": id.Connection,
		"schedules": id.Schedule, "assistants": id.Assistant, "webhooks": id.Webhook, "public-keys": id.PublicKey, "dnc": ""}
	send := func(method, path, key, ct, body string) int {
		rq := httptest.NewRequest(method, path, strings.NewReader(body))
		if key != "" {
			rq.Header.Set("X-API-Key", key)
		}
		if ct != "" {
			rq.Header.Set("Content-Type", ct)
		}
		return serve(t, b.s, rq).Code
	}
	for _, rt := range b.s.routes {
		segs := strings.Split(rt.path, "/")
		for i, seg := range segs {
			if !strings.HasPrefix(seg, "{") {
				continue
			}
			kind, ok := kinds[seg]
			if !ok {
				kind = prefix[segs[i-1]]
			}
			if kind == "" {
				segs[i] = "%2B14155550199" // a number not on the list
			} else {
				segs[i] = id.New(kind)
			}
		}
		path := strings.Join(segs, "/")
		name := rt.method + " " + rt.path
		if rt.scope != "" {
			if st := send(rt.method, path, "", "", ""); st != 401 {
				t.Errorf("%s without a key = %d, want 401", name, st)
			}
			if st := send(rt.method, path, weak, "", ""); st != 403 {
				t.Errorf("%s with a key without %s = %d, want 403", name, rt.scope, st)
			}
		}
		send(rt.method, path, b.key, "", "")
		if rt.body != noBody {
			send(rt.method, path, b.key, "text/plain", "hello")
			send(rt.method, path, b.key, "application/json", `{"zzz":`+strings.Repeat(" ", MaxBody)+`1}`)
			send(rt.method, path, b.key, "application/json", `{"zzz":1}`)
			send(rt.method, path, b.key, "application/json", `[]`)
		}
	}
}
