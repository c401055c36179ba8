package app

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"switchboard/internal/httpapi"
	"switchboard/internal/httpapi/openapitest"
	"switchboard/internal/nodetest"
	"switchboard/internal/secret"
	"switchboard/internal/telephony/sandbox"
)

// testBundle is a running server and what tests need to talk to it.
type testBundle struct {
	t    *testing.T
	m    *Main
	cfg  Config
	key  string // bootstrap key: every scope
	org  string
	http *http.Client
}

// databases returns the database URLs to run end-to-end tests on: a fresh
// SQLite file always, and a fresh PostgreSQL database when
// SWITCHBOARD_TEST_POSTGRES is set.
func databases(t *testing.T) map[string]func(t *testing.T) string {
	out := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sb.db") },
	}
	if base := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); base != "" {
		out["postgres"] = func(t *testing.T) string { return freshPostgres(t, base) }
	}
	return out
}

// freshPostgres creates an empty database for one test and drops it after.
func freshPostgres(t *testing.T, base string) string {
	t.Helper()
	u, drop, err := nodetest.CreatePostgres(t.Context(), base, "sbe2e_")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return u
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// eachDB runs fn as a subtest per database.
func eachDB(t *testing.T, fn func(t *testing.T, dbURL string)) {
	for name, mk := range databases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, mk(t))
		})
	}
}

// testSecretKey seals connection passwords in tests.
var testSecretKey = secret.NewKey()

// testConfig is a fast configuration on a :0 port.
func testConfig(dbURL string) Config {
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DB = dbURL
	cfg.RateLimit = 0
	// publickeys_test.go turns the publishable keys' limits on.
	cfg.PublicKeyRateLimit, cfg.PublicKeyAddressRateLimit = 0, 0
	cfg.RefusalLimit = 0            // tests send bad keys on purpose; throttle_test.go turns it on
	cfg.MetricsAddr = "127.0.0.1:0" // read with b.metrics()
	cfg.Sandbox = sandbox.Config{RingTime: 100 * time.Millisecond, NoAnswerTimeout: 300 * time.Millisecond, TalkTime: 30 * time.Second}
	cfg.PersonaThink = 20 * time.Millisecond
	cfg.SandboxVoice = false // text personas keep these tests fast; TestSandboxVoiceCall speaks
	cfg.DialPoll = 100 * time.Millisecond
	cfg.HousekeepingEvery = time.Second
	// Close's budget: a passing test's Close takes what its work takes;
	// this bounds a stuck one. 15 s, not less: a call that has just ended
	// may still be tearing down its voice pipeline, whose last local
	// decode runs to its end (seconds on a loaded 2-core machine:
	// TestSIPInboundDTMF's Close overran 5 s under make test beside
	// other test runs).
	cfg.ShutdownTimeout = 15 * time.Second
	cfg.WebhookAllowPrivate = true
	cfg.WebhookEvery = 50 * time.Millisecond
	cfg.SecretKey = testSecretKey // PostgreSQL has no default key
	return cfg
}

// start runs a server on dbURL and stops it when the test ends.
func start(t *testing.T, cfg Config) *testBundle {
	t.Helper()
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	m, err := Start(context.Background(), cfg, log, &out)
	if err != nil {
		t.Fatalf("Start(%s): %v", cfg.DB, err)
	}
	b := &testBundle{t: t, m: m, cfg: cfg, key: m.BootstrapKey, org: m.OrgID, http: &http.Client{Timeout: 10 * time.Second}}
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *testBundle) stop() {
	// A connection the client dialed but never sent a request on (its
	// pool raced concurrent requests) is "new" to the server, and
	// http.Server.Shutdown waits up to 5 s for such connections: close
	// them, as a client going away would.
	b.http.CloseIdleConnections()
	if b.m != nil {
		if err := b.m.Close(context.Background()); err != nil {
			b.t.Errorf("Close: %v", err)
		}
		b.m = nil
	}
}

// restart stops the server and starts a new one on the same database.
func (b *testBundle) restart() {
	b.t.Helper()
	b.stop()
	nb := start(b.t, b.cfg)
	b.m = nb.m
	nb.m = nil // the new bundle's cleanup must not close it twice
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// data returns body.data as an object.
func (r resp) data() map[string]any { m, _ := r.Body["data"].(map[string]any); return m }

// list returns body.data as an array of objects.
func (r resp) list() []map[string]any {
	arr, _ := r.Body["data"].([]any)
	out := make([]map[string]any, 0, len(arr))
	for _, v := range arr {
		m, _ := v.(map[string]any)
		out = append(out, m)
	}
	return out
}

// fieldNames lists error.fields[].field.
func (r resp) fieldNames() []string {
	e, _ := r.Body["error"].(map[string]any)
	fs, _ := e["fields"].([]any)
	var out []string
	for _, f := range fs {
		m, _ := f.(map[string]any)
		s, _ := m["field"].(string)
		out = append(out, s)
	}
	return out
}

func (r resp) code() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// documented is the REST API's OpenAPI document as a validator, built
// once for the package's tests.
var documented = sync.OnceValues(func() (*openapitest.Validator, error) { return openapitest.New(httpapi.OpenAPI()) })

// req sends a request with key; body may be nil, a string (sent as is) or a value (JSON).
// Every exchange is checked against the OpenAPI document (openapitest):
// the answer must be one its operation documents, and a request body the
// server accepted (2xx) must be valid under the documented request
// schema; a mismatch fails the test, naming method, path, status and what
// does not hold.
func (b *testBundle) req(method, path, key string, body any, headers ...string) resp {
	b.t.Helper()
	var sent []byte
	ct := ""
	switch v := body.(type) {
	case nil:
	case string:
		sent, ct = []byte(v), "application/json"
	case []byte:
		sent, ct = v, "application/json"
	default:
		j, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		sent, ct = j, "application/json"
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(sent)
	}
	rq, err := http.NewRequest(method, b.m.URL()+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if ct != "" {
		rq.Header.Set("Content-Type", ct)
	}
	if key != "" {
		rq.Header.Set("X-API-Key", key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			rq.Header.Del(headers[i])
		} else {
			rq.Header.Set(headers[i], headers[i+1])
		}
	}
	res, err := b.http.Do(rq)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{Status: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &out.Body)
	b.checkDocumented(rq, sent, res, raw)
	return out
}

// checkDocumented checks one exchange of req against the OpenAPI document.
func (b *testBundle) checkDocumented(rq *http.Request, sent []byte, res *http.Response, raw []byte) {
	b.t.Helper()
	v, err := documented()
	if err != nil {
		b.t.Errorf("openapi.json: %v", err)
		return
	}
	if err := v.CheckExchange(rq.Method, rq.URL.RequestURI(), rq.Header, sent, res.StatusCode, res.Header, raw); err != nil {
		b.t.Errorf("%v", err)
	}
}

// must sends a request with the bootstrap key and fails unless the status is want.
func (b *testBundle) must(want int, method, path string, body any) resp {
	b.t.Helper()
	r := b.req(method, path, b.key, body)
	if r.Status != want {
		b.t.Fatalf("%s %s = %d, want %d; body: %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// fixture is an organization with an assistant, a number with it allocated and contacts.
type fixture struct {
	assistant, purchase, number string
	contacts                    []string
}

func (b *testBundle) fixture(key string, number string, contacts ...string) fixture {
	b.t.Helper()
	var f fixture
	r := b.req("POST", "/v1/assistants", key, map[string]any{"name": "Booker", "firstMessage": "Hello! How can I help?"})
	if r.Status != 201 {
		b.t.Fatalf("create assistant = %d: %s", r.Status, r.Raw)
	}
	f.assistant = r.data()["id"].(string)
	r = b.req("POST", "/v1/phone/purchases", key, map[string]any{"number": number, "provider": "sandbox"})
	if r.Status != 201 {
		b.t.Fatalf("buy %s = %d: %s", number, r.Status, r.Raw)
	}
	f.purchase, f.number = r.data()["id"].(string), number
	r = b.req("POST", "/v1/phone/allocate-assistant", key, map[string]any{"id": f.purchase, "inboundAssistantId": f.assistant, "outboundAssistantId": f.assistant, "message": "Hi from Switchboard"})
	if r.Status != 200 {
		b.t.Fatalf("allocate = %d: %s", r.Status, r.Raw)
	}
	if len(contacts) > 0 {
		var cs []map[string]any
		for i, n := range contacts {
			cs = append(cs, map[string]any{"name": "Contact " + itoa(i), "phoneNumber": n, "timezone": "America/New_York"})
		}
		r = b.req("POST", "/v1/phone/contacts/"+f.purchase, key, map[string]any{"contacts": cs})
		if r.Status != 201 {
			b.t.Fatalf("add contacts = %d: %s", r.Status, r.Raw)
		}
		for _, v := range r.data()["created"].([]any) {
			f.contacts = append(f.contacts, v.(string))
		}
	}
	return f
}

// waitCall polls a call until cond holds or the deadline passes.
func (b *testBundle) waitCall(key, callID string, within time.Duration, cond func(map[string]any) bool) map[string]any {
	b.t.Helper()
	deadline := time.Now().Add(within)
	var last map[string]any
	for time.Now().Before(deadline) {
		r := b.req("GET", "/v1/calls/"+callID, key, nil)
		if r.Status == 200 {
			last = r.data()
			if cond(last) {
				return last
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("call %s did not reach the expected state within %s; last: %v", callID, within, last)
	return nil
}

// newKey creates a key for org through the store, as `switchboard key create` does.
func (b *testBundle) newKey(org string, scopes ...string) string {
	b.t.Helper()
	return createKey(b.t, b.m.DB(), org, scopes...)
}

// dueIn formats a schedule date d from now, in the contract's layout.
func dueIn(d time.Duration) string {
	return time.Now().Add(d).UTC().Format("2006-01-02T15:04:05.000Z")
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }
