package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/throttle"
)

// metrics reads GET /metrics from the metrics listener.
func (b *testBundle) metrics() string {
	b.t.Helper()
	u := b.m.MetricsURL()
	if u == "" {
		b.t.Fatalf("the server has no metrics listener (Config.MetricsAddr is empty)")
	}
	res, err := b.http.Get(u + "/metrics")
	if err != nil {
		b.t.Fatalf("GET %s/metrics: %v", u, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		b.t.Fatalf("GET %s/metrics = %d: %s", u, res.StatusCode, raw)
	}
	return string(raw)
}

// throttled checks a 429 from the refusal limiter: the API's error body and
// a Retry-After of whole seconds.
func throttled(t *testing.T, r resp, what string) {
	t.Helper()
	expectStatus(t, r, 429, "rate_limited")
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("%s: Retry-After = %q, want whole seconds, at least 1", what, r.Header.Get("Retry-After"))
	}
}

// unknownKey is shaped like a key but exists nowhere.
func unknownKey() string { return auth.KeyPrefix + id.Random(10) + "_" + id.Random(20) }

// TestUnauthenticatedFloodThrottled: requests whose key check fails spend
// their address's budget; past the burst they get 429 with Retry-After
// (missing keys too), while a key that works goes on working from the same
// address, and a revoked one is refused even though it worked before.
func TestUnauthenticatedFloodThrottled(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		cfg := testConfig(dbURL)
		cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 5 // no refill during the test
		b := start(t, cfg)
		b.must(200, "GET", "/v1/calls", nil)
		second := b.newKey(b.org, auth.CallsRead)
		expectStatus(t, b.req("GET", "/v1/calls", second, nil), 200, "")

		for i := range 5 {
			r := b.req("GET", "/v1/calls", unknownKey(), nil)
			if r.Status != 401 {
				t.Fatalf("unknown key #%d = %d, want 401 within the burst of 5; body %s", i+1, r.Status, r.Raw)
			}
		}
		throttled(t, b.req("GET", "/v1/calls", unknownKey(), nil), "unknown key past the burst")
		throttled(t, b.req("GET", "/v1/calls", "", nil), "missing key past the burst")
		throttled(t, b.req("POST", "/v1/assistants", "not-a-key", map[string]any{"name": "x"}), "malformed key past the burst")

		// Keys that work are not slowed down.
		for range 10 {
			b.must(200, "GET", "/v1/calls", nil)
		}
		expectStatus(t, b.req("GET", "/v1/calls", second, nil), 200, "")

		// A key that worked and was then revoked is refused for that, and
		// then limited like any other failure.
		revokeByName(t, b, "test")
		r := b.req("GET", "/v1/calls", second, nil)
		expectStatus(t, r, 401, "unauthenticated")
		if !strings.Contains(r.Raw, "revoked") {
			t.Errorf("revoked key = %s, want a message saying it was revoked", r.Raw)
		}
		throttled(t, b.req("GET", "/v1/calls", second, nil), "revoked key past the burst")
	})
}

func revokeByName(t *testing.T, b *testBundle, name string) {
	t.Helper()
	keys, err := b.m.DB().ListKeys(t.Context(), b.org)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == name {
			if err := b.m.DB().RevokeKey(t.Context(), k.ID, time.Now()); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no key named %q", name)
}

// TestForwardedForTrustedOnlyFromProxies: X-Forwarded-For names the client
// only when the peer is a configured proxy; otherwise it changes nothing.
func TestForwardedForTrustedOnlyFromProxies(t *testing.T) {
	t.Parallel()
	db := func() string { return "sqlite:" + t.TempDir() + "/xff.db" }

	cfg := testConfig(db())
	cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 3
	direct := start(t, cfg)
	for i := range 3 {
		expectStatus(t, direct.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "198.51.100."+strconv.Itoa(i)), 401, "unauthenticated")
	}
	throttled(t, direct.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "198.51.100.99"),
		"a new X-Forwarded-For from a peer that is not a proxy")

	cfg = testConfig(db())
	cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 3
	var err error
	if cfg.TrustedProxies, err = throttle.ParseProxies("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	proxied := start(t, cfg)
	for range 3 {
		expectStatus(t, proxied.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "198.51.100.7"), 401, "unauthenticated")
	}
	throttled(t, proxied.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "198.51.100.7"), "the flooding client behind the proxy")
	throttled(t, proxied.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "203.0.113.5, 198.51.100.7"),
		"the flooding client with a spoofed entry in front")
	expectStatus(t, proxied.req("GET", "/v1/calls", unknownKey(), nil, "X-Forwarded-For", "198.51.100.8"), 401, "unauthenticated")
}

// TestForgedKeyBytes: a key whose lookup part holds bytes no key has is
// refused as invalid on both stores (PostgreSQL fails on invalid UTF-8 in
// a query). That it is refused without a lookup is httpapi's
// TestMalformedIDsCostNoQuery.
func TestForgedKeyBytes(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		for _, k := range []string{
			auth.KeyPrefix + strings.Repeat("\xff", 16) + "_" + id.Random(20),
			auth.KeyPrefix + "AAAAAAAAAAAAAAAA_" + id.Random(20),
			auth.KeyPrefix + "aaaaaaaa\xc3\xa9aaaaaa_" + id.Random(20),
		} {
			r := b.req("GET", "/v1/calls", k, nil)
			expectStatus(t, r, 401, "unauthenticated")
		}
	})
}

// gatewayGet sends a plain GET to the gateway with a raw query.
func (b *testBundle) gatewayGet(rawQuery string, headers ...string) resp {
	b.t.Helper()
	return b.req("GET", "/new-web-call/connection?"+rawQuery, "", nil, headers...)
}

// TestGatewayRefusalsLookAlike: a call id that cannot be one, an unknown
// one, another organization's call and a phone call all get the same
// answer, byte for byte but the request id; every answer has a request id.
func TestGatewayRefusalsLookAlike(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		fa := b.fixture(b.key, "+14155550100")
		webA := b.must(201, "POST", "/v1/calls/initiate", map[string]any{"assistantId": fa.assistant, "type": "web"}).Body["callId"].(string)
		phoneA := b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": fa.purchase, "phoneNumber": "+14155550005"}).Body["callId"].(string)
		orgB := createOrg(t, b.m.DB(), "other")
		keyB := b.newKey(orgB, auth.AllScopes...)
		r := b.req("POST", "/v1/assistants", keyB, map[string]any{"name": "B", "firstMessage": "hi"})
		if r.Status != 201 {
			t.Fatalf("create assistant B = %d: %s", r.Status, r.Raw)
		}
		asstB := r.data()["id"].(string)

		q := func(callID, asstID string) string {
			return "call_id=" + callID + "&assistant_id=" + url.QueryEscape(asstID)
		}
		cases := []struct{ name, query string }{
			{"unknown call id", q(id.New(id.Call), asstB)},
			{"NUL in the call id", q("c%00", asstB)},
			{"invalid UTF-8 in the call id", q("call_%ff%fe", fa.assistant)},
			{"call id of another organization", q(webA, asstB)},
			{"phone call", q(phoneA, fa.assistant)},
			{"NUL in the assistant id", q(webA, "a\x00")},
		}
		var want string
		for _, c := range cases {
			r := b.gatewayGet(c.query)
			reqID, _ := r.Body["requestId"].(string)
			if r.Status != 404 || r.code() != "not_found" || !strings.HasPrefix(reqID, "req_") || r.Header.Get("X-Request-Id") != reqID {
				t.Errorf("%s: %d %s (X-Request-Id %q), want 404 not_found with a requestId matching X-Request-Id", c.name, r.Status, r.Raw, r.Header.Get("X-Request-Id"))
				continue
			}
			body := strings.Replace(r.Raw, reqID, "", 1)
			if want == "" {
				want = body
			} else if body != want {
				t.Errorf("%s: body %s, want the unknown id's %s", c.name, body, want)
			}
		}
		// The caller's own call (both ids right) is told what is wrong.
		expectStatus(t, b.gatewayGet(q(webA, fa.assistant)), 426, "upgrade_required")
	})
}

// TestGatewayRefusalsThrottled: refused handshakes spend the address's
// budget; past it they get 429 with Retry-After before any lookup, while
// handshakes that succeed spend nothing.
func TestGatewayRefusalsThrottled(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/gw.db")
	cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 3
	b := start(t, cfg)
	asst := b.bookingAssistant(b.key)
	for range 5 { // more than the burst
		_, c := b.dialWebCall(asst)
		c.conn.CloseNow()
	}
	for range 3 {
		expectStatus(t, b.gatewayGet("call_id="+id.New(id.Call)+"&assistant_id="+asst), 404, "not_found")
	}
	r := b.gatewayGet("call_id=" + id.New(id.Call) + "&assistant_id=" + asst)
	throttled(t, r, "unknown call past the burst")
	if !strings.HasPrefix(r.Body["requestId"].(string), "req_") {
		t.Errorf("429 requestId = %v, want one", r.Body["requestId"])
	}
	// The REST API and the gateway share the budget.
	throttled(t, b.req("GET", "/v1/calls", unknownKey(), nil), "a bad key from a client the gateway refused")
	if m := b.metrics(); !strings.Contains(m, `switchboard_gateway_refusals_total{reason="not_found"} 3`) ||
		!strings.Contains(m, `switchboard_gateway_refusals_total{reason="rate_limited"} 1`) {
		t.Errorf("/metrics lacks the gateway refusals by reason:\n%s", grepLines(m, "refusals"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestMetricsNotPublic: /metrics is not served on the public port unless a
// token guards it; the metrics listener serves it (behind the token too,
// when one is set).
func TestMetricsNotPublic(t *testing.T) {
	t.Parallel()
	get := func(t *testing.T, u, token string) (int, string) {
		t.Helper()
		rq, _ := http.NewRequest("GET", u, nil)
		if token != "" {
			rq.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := testClient().Do(rq)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	const token = "metrics-s3cret-4f1e"

	t.Run("metrics address", func(t *testing.T) {
		b := start(t, testConfig("sqlite:"+t.TempDir()+"/m.db"))
		b.must(200, "GET", "/v1/calls", nil)
		if st, body := get(t, b.m.URL()+"/metrics", ""); st != 404 || strings.Contains(body, "switchboard_") {
			t.Errorf("public GET /metrics = %d %.200s, want 404", st, body)
		}
		if !strings.Contains(b.metrics(), `switchboard_http_requests_total{method="GET",route="/v1/calls",status="200"} 1`) {
			t.Errorf("metrics listener lacks the request count")
		}
		if st, body := get(t, b.m.MetricsURL()+"/debug/pprof/goroutine?debug=1", ""); st != 200 || !strings.Contains(body, "goroutine profile") {
			t.Errorf("metrics listener GET /debug/pprof/goroutine = %d %.200s, want the profile", st, body)
		}
		if st, _ := get(t, b.m.URL()+"/debug/pprof/goroutine?debug=1", ""); st == 200 {
			t.Errorf("the public port serves the profiler")
		}
	})
	t.Run("neither", func(t *testing.T) {
		cfg := testConfig("sqlite:" + t.TempDir() + "/m.db")
		cfg.MetricsAddr = ""
		b := start(t, cfg)
		if st, _ := get(t, b.m.URL()+"/metrics", ""); st != 404 || b.m.MetricsURL() != "" {
			t.Errorf("public GET /metrics = %d, MetricsURL %q; want 404 and none", st, b.m.MetricsURL())
		}
	})
	t.Run("token on the public port", func(t *testing.T) {
		cfg := testConfig("sqlite:" + t.TempDir() + "/m.db")
		cfg.MetricsAddr, cfg.MetricsToken = "", token
		b := start(t, cfg)
		for _, tok := range []string{"", "wrong", token + "x"} {
			if st, body := get(t, b.m.URL()+"/metrics", tok); st != 401 || strings.Contains(body, "switchboard_") {
				t.Errorf("GET /metrics with token %q = %d %.200s, want 401", tok, st, body)
			}
		}
		if st, body := get(t, b.m.URL()+"/metrics", token); st != 200 || !strings.Contains(body, "switchboard_calls") {
			t.Errorf("GET /metrics with the token = %d %.200s, want the metrics", st, body)
		}
	})
	t.Run("token on the metrics address", func(t *testing.T) {
		cfg := testConfig("sqlite:" + t.TempDir() + "/m.db")
		cfg.MetricsToken = token
		b := start(t, cfg)
		if st, _ := get(t, b.m.MetricsURL()+"/metrics", ""); st != 401 {
			t.Errorf("metrics listener without the token = %d, want 401", st)
		}
		if st, _ := get(t, b.m.MetricsURL()+"/metrics", token); st != 200 {
			t.Errorf("metrics listener with the token = %d, want 200", st)
		}
		if st, _ := get(t, b.m.MetricsURL()+"/debug/pprof/goroutine?debug=1", ""); st != 401 {
			t.Errorf("profiler without the token = %d, want 401", st)
		}
		if st, _ := get(t, b.m.MetricsURL()+"/debug/pprof/goroutine?debug=1", token); st != 200 {
			t.Errorf("profiler with the token = %d, want 200", st)
		}
		if st, _ := get(t, b.m.URL()+"/metrics", token); st != 404 {
			t.Errorf("public port with the token = %d, want 404 (metrics have their own listener)", st)
		}
	})
}

// TestMetricsTokenRefusals: a wrong metrics token is answered like any
// refused API request: the API's error body with a requestId (also in
// X-Request-Id), spending the client's refusal budget; past it, 429 with
// Retry-After.
func TestMetricsTokenRefusals(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/m.db")
	cfg.MetricsAddr, cfg.MetricsToken = "", "metrics-s3cret-4f1e"
	cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 2
	b := start(t, cfg)
	get := func() (*http.Response, map[string]any) {
		t.Helper()
		rq, _ := http.NewRequest("GET", b.m.URL()+"/metrics", nil)
		rq.Header.Set("Authorization", "Bearer wrong")
		res, err := testClient().Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body map[string]any
		raw, _ := io.ReadAll(res.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatalf("GET /metrics with a wrong token: body %q is not JSON: %v", raw, err)
		}
		return res, body
	}
	check := func(what string, res *http.Response, body map[string]any, status int, code string) {
		t.Helper()
		e, _ := body["error"].(map[string]any)
		reqID, _ := body["requestId"].(string)
		if res.StatusCode != status || e["code"] != code || body["status"] != false || !strings.HasPrefix(reqID, "req_") || res.Header.Get("X-Request-Id") != reqID {
			t.Errorf("%s = %d %v (X-Request-Id %q), want %d with code %s and a requestId equal to X-Request-Id", what, res.StatusCode, body, res.Header.Get("X-Request-Id"), status, code)
		}
	}
	for i := range 2 {
		res, body := get()
		check(fmt.Sprintf("wrong token #%d", i+1), res, body, 401, "unauthenticated")
		if res.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
	res, body := get()
	check("wrong token past the burst", res, body, 429, "rate_limited")
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After = %q, want whole seconds, at least 1", res.Header.Get("Retry-After"))
	}
}

// TestAuthFailureLogsAggregated: a flood of requests with bad keys does not
// write a log line each: the first is logged, the rest are counted by
// reason in one line per window (and at shutdown).
func TestAuthFailureLogsAggregated(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/logs.db")
	var logs syncBuffer
	m, err := Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(&logs, nil)), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close(context.Background())
		}
	})
	for i := range 1000 {
		r := httptest.NewRequest("GET", "/v1/calls", nil)
		if i%2 == 0 {
			r.Header.Set("X-API-Key", unknownKey())
		}
		w := httptest.NewRecorder()
		m.http.Handler.ServeHTTP(w, r)
		if w.Code != 401 {
			t.Fatalf("request %d = %d, want 401", i, w.Code)
		}
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	closed = true
	full, counted, lines := 0, 0, 0
	for l := range strings.SplitSeq(logs.String(), "\n") {
		var line struct {
			Msg    string
			Status int
			Count  int
		}
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		switch {
		case line.Msg == "request" && line.Status == 401:
			full++
			lines++
		case strings.Contains(line.Msg, "not logged one by one"):
			counted += line.Count
			lines++
		}
	}
	if full+counted != 1000 || lines > 10 {
		t.Errorf("1000 refused requests: %d logged in full and %d counted in %d lines; want all 1000 accounted for in a few lines (not one each)", full, counted, lines)
	}
}

// TestTwilioForgeriesThrottled: requests to Twilio's entry points that
// fail the signature check spend the client's refusal budget like bad API
// keys: past the burst they get 429 before any lookup.
func TestTwilioForgeriesThrottled(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/tw.db")
	cfg.RefusalLimit, cfg.RefusalBurst = 0.001, 3
	b := start(t, cfg)
	post := func() int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, b.m.URL()+"/twilio/"+id.New(id.Connection)+"/voice",
			strings.NewReader("CallSid=CA0&To=%2B14155550100"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", "Zm9yZ2Vk")
		res, err := b.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for i := range 3 {
		if got := post(); got != http.StatusForbidden {
			t.Fatalf("forged Twilio webhook #%d = %d, want 403 within the burst", i+1, got)
		}
	}
	if got := post(); got != http.StatusTooManyRequests {
		t.Errorf("forged Twilio webhook past the burst = %d, want 429", got)
	}
}
