package app

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/auth"
	"switchboard/internal/gateway/protocol"
)

const (
	shopOrigin  = "https://shop.example.com"
	otherOrigin = "https://evil.example.com"
)

// assistant creates an assistant with key and returns its id.
func (b *testBundle) assistant(key, name string) string {
	b.t.Helper()
	r := b.req("POST", "/v1/assistants", key, map[string]any{"name": name, "firstMessage": "Hello from " + name})
	if r.Status != 201 {
		b.t.Fatalf("create assistant = %d: %s", r.Status, r.Raw)
	}
	return r.data()["id"].(string)
}

// publicKey creates a publishable key for the assistants and origins and
// returns its id and the key.
func (b *testBundle) publicKey(assistants []string, origins ...string) (string, string) {
	b.t.Helper()
	r := b.must(201, "POST", "/v1/public-keys", map[string]any{"name": "shop", "assistantIds": assistants, "origins": origins})
	return r.data()["id"].(string), r.data()["key"].(string)
}

// webCall starts a web call with key from origin ("" sends no Origin).
func (b *testBundle) webCall(key, origin, assistantID string) resp {
	b.t.Helper()
	return b.req("POST", "/v1/calls/initiate", key, map[string]any{"assistantId": assistantID, "type": "web"}, "Origin", origin)
}

// expectCORS checks the CORS headers of an answer: for origin, or none
// when origin is "".
func expectCORS(t *testing.T, what string, r resp, origin string) {
	t.Helper()
	got := r.Header.Get("Access-Control-Allow-Origin")
	if got != origin {
		t.Errorf("%s: Access-Control-Allow-Origin = %q, want %q", what, got, origin)
	}
	if origin != "" && !strings.Contains(strings.Join(r.Header.Values("Vary"), ","), "Origin") {
		t.Errorf("%s: Vary = %q, want Origin", what, r.Header.Values("Vary"))
	}
	if origin == "" {
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("%s: header %s = %q, want no CORS headers", what, k, r.Header.Get(k))
			}
		}
	}
}

// TestKeysPublishable: publishable keys are created, listed, read and
// revoked with their rules; a key starts web calls only for its
// assistants, from its origins, with CORS headers on every answer; it can
// do nothing else; preflights are answered for active keys' origins only;
// secret keys never get CORS headers; the gateway admits a key's call
// only from its origins.
func TestKeysPublishable(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		a1, a2 := b.assistant(b.key, "Ava"), b.assistant(b.key, "Bo")
		otherOrg := createOrg(t, b.m.DB(), "other")
		otherKey := b.newKey(otherOrg, auth.AllScopes...)
		theirs := b.assistant(otherKey, "Theirs")

		// Create: shown once, normalized.
		r := b.must(201, "POST", "/v1/public-keys", map[string]any{"name": "shop", "assistantIds": []string{a1},
			"origins": []string{"HTTPS://Shop.Example.com:443", "http://localhost:3000"}})
		pk := r.data()
		key, pkid := pk["key"].(string), pk["id"].(string)
		if !strings.HasPrefix(key, "pk_") || !strings.HasPrefix(pkid, "pkey_") || !strings.HasPrefix(key, pk["keyPrefix"].(string)) {
			t.Errorf("created key = id %q, key %q, keyPrefix %v; want pkey_…, pk_… starting with keyPrefix", pkid, key, pk["keyPrefix"])
		}
		if got := pk["origins"].([]any); len(got) != 2 || got[0] != shopOrigin || got[1] != "http://localhost:3000" {
			t.Errorf("origins = %v, want [%s http://localhost:3000]", got, shopOrigin)
		}
		if pk["revokedAt"] != nil || pk["createdAt"] == nil {
			t.Errorf("created key: createdAt %v, revokedAt %v; want a time and null", pk["createdAt"], pk["revokedAt"])
		}

		// Validation.
		for _, tt := range []struct {
			body   map[string]any
			fields []string
		}{
			{map[string]any{"name": "x"}, []string{"assistantIds", "origins"}},
			{map[string]any{"assistantIds": []string{}, "origins": []string{}}, []string{"assistantIds", "origins"}},
			{map[string]any{"assistantIds": []string{a1}, "origins": []string{"https://shop.example.com/", "https://*.example.com", "ftp://x.example", "shop.example.com"}},
				[]string{"origins[0]", "origins[1]", "origins[2]", "origins[3]"}},
			{map[string]any{"assistantIds": []string{a1}, "origins": []string{shopOrigin, "https://SHOP.example.com:443"}}, []string{"origins[1]"}},
			{map[string]any{"assistantIds": []string{"asst_nope", a1, a1}, "origins": []string{shopOrigin}}, []string{"assistantIds[0]", "assistantIds[2]"}},
			{map[string]any{"assistantIds": []string{a1, theirs}, "origins": []string{shopOrigin}}, []string{"assistantIds[1]"}},
			{map[string]any{"assistantIds": []string{a1}, "origins": manyOrigins(51)}, []string{"origins"}},
			{map[string]any{"assistantIds": []string{a1}, "origins": []string{shopOrigin}, "scopes": []string{"calls:read"}}, []string{"scopes"}},
		} {
			r := b.req("POST", "/v1/public-keys", b.key, tt.body)
			expectFields(t, r, 400, tt.fields...)
		}
		if r := b.req("POST", "/v1/public-keys", b.newKey(b.org, auth.KeysRead), map[string]any{"assistantIds": []string{a1}, "origins": []string{shopOrigin}}); r.Status != 403 {
			t.Errorf("POST /v1/public-keys with only keys:read = %d, want 403", r.Status)
		}

		// List and get never show the key.
		r = b.must(200, "GET", "/v1/public-keys?pageSize=1", nil)
		if l := r.list(); len(l) != 1 || l[0]["id"] != pkid || l[0]["key"] != nil || r.Body["pagination"].(map[string]any)["total"] != float64(1) {
			t.Errorf("GET /v1/public-keys = %s; want the one key without its key, total 1", r.Raw)
		}
		if r := b.must(200, "GET", "/v1/public-keys/"+pkid, nil); r.data()["key"] != nil || r.data()["keyPrefix"] != pk["keyPrefix"] {
			t.Errorf("GET /v1/public-keys/%s = %s; want the key's view without the key", pkid, r.Raw)
		}
		expectStatus(t, b.req("GET", "/v1/public-keys/"+pkid, otherKey, nil), 404, "not_found")
		expectStatus(t, b.req("DELETE", "/v1/public-keys/"+pkid, otherKey, nil), 404, "not_found")
		expectStatus(t, b.req("GET", "/v1/public-keys/pkey_nope", b.key, nil), 404, "not_found")
		if r := b.req("GET", "/v1/public-keys", b.newKey(b.org, auth.CallsRead), nil); r.Status != 403 {
			t.Errorf("GET /v1/public-keys without keys:read = %d, want 403", r.Status)
		}

		// A web call from an allowed origin.
		r = b.webCall(key, shopOrigin, a1)
		expectStatus(t, r, 201, "")
		expectCORS(t, "web call from an allowed origin", r, shopOrigin)
		callID, _ := r.Body["callId"].(string)
		gwURL, _ := r.Body["gateway"].(map[string]any)["url"].(string)

		// Another origin, no origin, another assistant, another route.
		r = b.webCall(key, otherOrigin, a1)
		expectStatus(t, r, 403, "permission_denied")
		expectCORS(t, "web call from another origin", r, "")
		r = b.webCall(key, "", a1)
		expectStatus(t, r, 403, "permission_denied")
		expectCORS(t, "web call without Origin", r, "")
		r = b.webCall(key, shopOrigin, a2)
		expectFields(t, r, 403, "assistantId")
		expectCORS(t, "web call for another assistant", r, shopOrigin)
		r = b.webCall(key, shopOrigin, theirs)
		expectFields(t, r, 403, "assistantId")
		r = b.req("POST", "/v1/calls/initiate", key, `{"assistantId":`, "Origin", shopOrigin)
		expectStatus(t, r, 400, "invalid_request")
		expectCORS(t, "invalid body from an allowed origin", r, shopOrigin)
		for _, rq := range [][3]string{{"GET", "/v1/calls", ""}, {"GET", "/v1/calls/" + callID, ""}, {"GET", "/v1/public-keys", ""},
			{"POST", "/v1/calls/phone/initiate", `{"phone_purchase_id":"pn_x","phoneNumber":"+14155550123"}`}, {"GET", "/v1/assistants", ""}} {
			var body any
			if rq[2] != "" {
				body = rq[2]
			}
			r := b.req(rq[0], rq[1], key, body, "Origin", shopOrigin)
			expectStatus(t, r, 403, "permission_denied")
			expectCORS(t, "publishable key on "+rq[0]+" "+rq[1], r, "")
		}

		// Preflights.
		pre := func(path, origin string) resp {
			return b.req("OPTIONS", path, "", nil, "Origin", origin, "Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "content-type,x-api-key")
		}
		r = pre("/v1/calls/initiate", shopOrigin)
		if r.Status != 204 || r.Header.Get("Access-Control-Allow-Methods") != "POST" || r.Header.Get("Access-Control-Max-Age") == "" ||
			!strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "X-API-Key") || !strings.Contains(r.Header.Get("Access-Control-Allow-Headers"), "Idempotency-Key") {
			t.Errorf("preflight from an allowed origin = %d %v, want 204 with the CORS headers", r.Status, r.Header)
		}
		expectCORS(t, "preflight from an allowed origin", r, shopOrigin)
		r = pre("/v1/calls/initiate", otherOrigin)
		expectStatus(t, r, 403, "permission_denied")
		expectCORS(t, "preflight from an unknown origin", r, "")
		expectStatus(t, pre("/v1/calls", shopOrigin), 405, "method_not_allowed")
		expectCORS(t, "preflight of another route", pre("/v1/calls", shopOrigin), "")

		// Secret keys never get CORS headers.
		r = b.webCall(b.key, shopOrigin, a1)
		expectStatus(t, r, 201, "")
		expectCORS(t, "secret key with an Origin", r, "")
		r = b.req("GET", "/v1/calls", b.key, nil, "Origin", shopOrigin)
		expectCORS(t, "secret key with an Origin on GET /v1/calls", r, "")

		// The gateway checks the Origin of a publishable key's call.
		dial := func(origin string) (*websocket.Conn, *http.Response, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return websocket.Dial(ctx, gwURL, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
		}
		if _, res, err := dial(otherOrigin); err == nil || res == nil || res.StatusCode != 403 {
			t.Errorf("gateway with a wrong Origin: err %v, response %v; want 403", err, res)
		}
		if st := b.must(200, "GET", "/v1/calls/"+callID, nil).data()["status"]; st != float64(0) {
			t.Errorf("after a refused Origin the call's status = %v, want 0 (queued)", st)
		}
		conn, _, err := dial(shopOrigin)
		if err != nil {
			t.Fatalf("gateway from the key's origin: %v", err)
		}
		defer conn.CloseNow()
		ws := &wsClient{t: t, conn: conn}
		if _, ok := ws.next().(protocol.SessionStarted); !ok {
			t.Errorf("gateway from the key's origin: first event is not session.started")
		}

		// Revoked: 401, and its origins are no longer answered.
		r = b.must(200, "DELETE", "/v1/public-keys/"+pkid, nil)
		if r.data()["revokedAt"] == nil {
			t.Errorf("DELETE /v1/public-keys/%s = %s; want revokedAt set", pkid, r.Raw)
		}
		r = b.webCall(key, shopOrigin, a1)
		expectStatus(t, r, 401, "unauthenticated")
		expectCORS(t, "revoked key", r, "")
		expectStatus(t, pre("/v1/calls/initiate", shopOrigin), 403, "permission_denied")
		r = b.webCall("pk_"+strings.Repeat("a", 26)+"_"+strings.Repeat("b", 32), shopOrigin, a1)
		expectStatus(t, r, 401, "unauthenticated")
	})
}

func manyOrigins(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "https://s" + itoa(i) + ".example.com"
	}
	return out
}

// TestKeysPublishableRateLimits: a publishable key is limited per key and
// per client address, each answered 429 with Retry-After and the CORS
// headers, without waiting for the limits to refill.
func TestKeysPublishableRateLimits(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.PublicKeyRateLimit, cfg.PublicKeyAddressRateLimit = 2, 3
		b := start(t, cfg)
		a := b.assistant(b.key, "Ava")
		_, k1 := b.publicKey([]string{a}, shopOrigin)
		_, k2 := b.publicKey([]string{a}, shopOrigin)
		for i := range 2 {
			expectStatus(t, b.webCall(k1, shopOrigin, a), 201, "")
			_ = i
		}
		r := b.webCall(k1, shopOrigin, a)
		expectStatus(t, r, 429, "rate_limited")
		expectCORS(t, "key over its limit", r, shopOrigin)
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 of a publishable key without Retry-After")
		}
		// The address has spent 2 of 3 (the refused request cost it
		// nothing): one more with another key, then the address is over.
		expectStatus(t, b.webCall(k2, shopOrigin, a), 201, "")
		r = b.webCall(k2, shopOrigin, a)
		expectStatus(t, r, 429, "rate_limited")
		if r.Header.Get("Retry-After") == "" || !strings.Contains(r.Body["message"].(string), "address") {
			t.Errorf("address over its limit = %s %v; want a 429 naming the address, with Retry-After", r.Raw, r.Header)
		}
		// Secret keys are not limited by the publishable keys' limits.
		expectStatus(t, b.webCall(b.key, "", a), 201, "")
	})
}
