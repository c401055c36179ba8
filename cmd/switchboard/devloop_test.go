package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/app"
	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/nodetest"
	"switchboard/internal/secret"
	"switchboard/internal/webhook"
)

// The developer's loop, end to end against a real server (app.Start on
// :0): `webhooks listen` and `call web` as a reader of the README runs
// them, on a server whose SSRF guard is the production default.

// devServer is a running server and its bootstrap key.
type devServer struct {
	m   *app.Main
	url string
	key string
	api *apiClient
}

// devDatabases are the databases the end-to-end tests run on: SQLite, and
// PostgreSQL when SWITCHBOARD_TEST_POSTGRES is set.
func devDatabases(t *testing.T) map[string]func(t *testing.T) string {
	out := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "sb.db") },
	}
	if base := os.Getenv("SWITCHBOARD_TEST_POSTGRES"); base != "" {
		out["postgres"] = func(t *testing.T) string {
			u, drop, err := nodetest.CreatePostgres(t.Context(), base, "sbcli_")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(drop)
			return u
		}
	}
	return out
}

// startDev starts a server on dbURL with the default webhook guard (no
// private addresses) and fast polling.
func startDev(t *testing.T, dbURL string) *devServer {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.Addr, cfg.DB = "127.0.0.1:0", dbURL
	cfg.RateLimit, cfg.PublicKeyRateLimit, cfg.PublicKeyAddressRateLimit, cfg.RefusalLimit = 0, 0, 0, 0
	cfg.SandboxVoice = false
	cfg.WebhookEvery, cfg.AnalysisEvery = 50*time.Millisecond, 100*time.Millisecond
	cfg.ShutdownTimeout = 15 * time.Second
	cfg.SecretKey = secret.NewKey()
	if cfg.WebhookAllowPrivate {
		t.Fatal("the default configuration allows private webhook addresses")
	}
	m, err := app.Start(context.Background(), cfg, slog.New(slog.NewJSONHandler(io.Discard, nil)), io.Discard)
	if err != nil {
		t.Fatalf("Start(%s): %v", dbURL, err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return &devServer{m: m, url: m.URL(), key: m.BootstrapKey,
		api: &apiClient{base: m.URL(), key: m.BootstrapKey, http: &http.Client{Timeout: 10 * time.Second}}}
}

// orgKey creates another organization and a key of it with every scope.
func (d *devServer) orgKey(t *testing.T) string {
	t.Helper()
	now := time.Now()
	org := auth.Org{ID: id.New(id.Org), Name: "Other", CreatedAt: now}
	k, key := auth.NewKey(org.ID, "other", auth.AllScopes, now)
	if err := d.m.DB().CreateOrg(t.Context(), org); err != nil {
		t.Fatal(err)
	}
	if err := d.m.DB().CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	return key
}

// bookingFlow is README step 10's flow assistant, without the analysis plan.
var bookingFlow = map[string]any{
	"name": "Booking line", "model": map[string]any{"provider": "flow"},
	"flow": map[string]any{"start": "greet", "nodes": map[string]any{
		"greet":    map[string]any{"type": "say", "text": "Hi! This is Bright Smile Dental.", "next": "ask_date"},
		"ask_date": map[string]any{"type": "ask", "text": "What day would suit you?", "branches": []any{map[string]any{"match": map[string]any{"kind": "date"}, "capture": "date", "next": "confirm"}}},
		"confirm": map[string]any{"type": "ask", "text": "So {{date}}, is that right?", "branches": []any{
			map[string]any{"match": map[string]any{"kind": "yesno", "value": true}, "next": "bye"},
			map[string]any{"match": map[string]any{"kind": "yesno", "value": false}, "next": "ask_date"}}},
		"bye": map[string]any{"type": "end", "text": "You are booked for {{date}}. Goodbye!", "success": true}}},
}

// assistant creates the booking flow assistant with key.
func (d *devServer) assistant(t *testing.T, key string) string {
	t.Helper()
	var r struct{ Data struct{ ID string } }
	if err := (&apiClient{base: d.url, key: key, http: d.api.http}).do(t.Context(), "POST", "/v1/assistants", bookingFlow, &r); err != nil {
		t.Fatal(err)
	}
	return r.Data.ID
}

// cli runs a command in the background with the given key; its output is
// read while it runs, and the test ends it (as Ctrl-C does) when it ends.
type cli struct {
	out, errOut *lockedBuffer
	cancel      context.CancelFunc
	done        chan error
}

// startCLI runs `switchboard args… --api-key key` (call web with stdin).
func startCLI(t *testing.T, key string, stdin io.Reader, args ...string) *cli {
	t.Helper()
	args = append(args, "--api-key", key)
	c := &cli{out: &lockedBuffer{}, errOut: &lockedBuffer{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		if args[0] == "call" {
			c.done <- callWeb(ctx, args[2:], stdin, c.out, c.errOut)
			return
		}
		c.done <- run(ctx, args, c.out, c.errOut)
	}()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop ends the command as Ctrl-C does and returns what it returned.
func (c *cli) stop(t *testing.T) error {
	c.cancel()
	select {
	case err, ok := <-c.done:
		if ok {
			close(c.done)
		}
		return err
	case <-time.After(20 * time.Second):
		t.Errorf("the command did not end within 20 s of its interrupt:\n%s%s", c.out, c.errOut)
		return nil
	}
}

// waitFor waits (within) until the command's stdout matches re, and
// returns the first match's groups.
func (c *cli) waitFor(t *testing.T, re *regexp.Regexp, within time.Duration) []string {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(c.out.String()); m != nil {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("no output matching %s within %s; stdout:\n%s\nstderr:\n%s", re, within, c.out, c.errOut)
		}
	}
}

// deliveryLine matches a delivery `webhooks listen` printed: event,
// message id, attempt, and the verdict.
func deliveryLine(event, msgID, attempt, verdict string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\S+  (` + event + `) +(` + msgID + `)  attempt (` + attempt + `)  (` + verdict + `)`)
}

// receiver is the developer's local webhook endpoint: it verifies each
// delivery with the listener's secret, records it and answers 204.
type receiver struct {
	mu     sync.Mutex
	secret string
	got    []receivedHook
	srv    *httptest.Server
}

type receivedHook struct {
	msgID, event string
	body         string
	verifyErr    error
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var env struct{ Type string }
		_ = json.Unmarshal(body, &env)
		r.mu.Lock()
		defer r.mu.Unlock()
		err := webhook.Verify([]string{r.secret}, req.Header, body, time.Now(), 0)
		r.got = append(r.got, receivedHook{msgID: req.Header.Get("webhook-id"), event: env.Type, body: string(body), verifyErr: err})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) setSecret(s string) { r.mu.Lock(); r.secret = s; r.mu.Unlock() }

func (r *receiver) hooks() []receivedHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedHook(nil), r.got...)
}

// streamProxy stands between `webhooks listen` and the server: REST goes
// through as is; on the listener's stream it can forge the next delivery
// (its body changed, as an attacker on the path would) or cut the stream
// right after the server sent one.
type streamProxy struct {
	target *url.URL
	rest   *httputil.ReverseProxy
	mu     sync.Mutex
	forge  bool // forge the next delivery
	cut    bool // cut the stream at the next delivery
	forged []string
	cuts   []string
}

func newStreamProxy(t *testing.T, target string) *httptest.Server {
	u, _ := url.Parse(target)
	p := &streamProxy{target: u, rest: httputil.NewSingleHostReverseProxy(u)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	proxies.Store(srv.URL, p)
	return srv
}

// proxies finds a test server's proxy.
var proxies sync.Map

func proxyOf(srv *httptest.Server) *streamProxy {
	p, _ := proxies.Load(srv.URL)
	return p.(*streamProxy)
}

func (p *streamProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/listen") {
		p.rest.ServeHTTP(w, r)
		return
	}
	up, res, err := websocket.Dial(r.Context(), "ws://"+p.target.Host+r.URL.Path,
		&websocket.DialOptions{HTTPHeader: http.Header{"X-API-Key": {r.Header.Get("X-API-Key")}}})
	if err != nil {
		status := http.StatusBadGateway
		if res != nil {
			status = res.StatusCode
		}
		http.Error(w, err.Error(), status)
		return
	}
	defer up.CloseNow()
	down, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer down.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // acks, as they are
		defer cancel()
		for {
			typ, b, err := down.Read(ctx)
			if err != nil || up.Write(ctx, typ, b) != nil {
				return
			}
		}
	}()
	for {
		typ, b, err := up.Read(ctx)
		if err != nil {
			return
		}
		var f webhook.ListenFrame
		_ = json.Unmarshal(b, &f)
		if f.Type == webhook.FrameDelivery {
			p.mu.Lock()
			forge, cut := p.forge, p.cut
			p.forge, p.cut = false, false
			if forge {
				p.forged = append(p.forged, f.MessageID)
			}
			if cut {
				p.cuts = append(p.cuts, f.MessageID)
			}
			p.mu.Unlock()
			if cut {
				return // both sides closed: the server had sent it, nobody acks it
			}
			if forge {
				f.Body = strings.Replace(f.Body, `"data":{`, `"data":{"forged":true,`, 1)
				b, _ = json.Marshal(f)
			}
		}
		if down.Write(ctx, typ, b) != nil {
			return
		}
	}
}

// arm sets the proxy to forge or cut the next delivery, and returns a
// function that waits for it to have happened and returns the message id.
func (p *streamProxy) arm(t *testing.T, forge bool) func() string {
	p.mu.Lock()
	n := len(p.forged) + len(p.cuts)
	p.forge, p.cut = forge, !forge
	p.mu.Unlock()
	return func() string {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			p.mu.Lock()
			if len(p.forged)+len(p.cuts) > n {
				var mid string
				if forge {
					mid = p.forged[len(p.forged)-1]
				} else {
					mid = p.cuts[len(p.cuts)-1]
				}
				p.mu.Unlock()
				return mid
			}
			p.mu.Unlock()
		}
		t.Fatal("the proxy saw no delivery to forge or cut within 30 s")
		return ""
	}
}

// call makes one real web call of the booking assistant through `call
// web` with the given lines, and returns its id.
func (d *devServer) call(t *testing.T, key, assistant string, lines ...string) string {
	t.Helper()
	c := startCLI(t, key, strings.NewReader(strings.Join(lines, "\n")+"\n"), "call", "web", assistant, "--url", d.url)
	select {
	case err := <-c.done:
		close(c.done)
		if err != nil {
			t.Fatalf("call web: %v\nstdout:\n%s\nstderr:\n%s", err, c.out, c.errOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("call web did not end within 60 s:\n%s", c.out)
	}
	m := regexp.MustCompile(`call (call_\w+) started`).FindStringSubmatch(c.errOut.String())
	if m == nil {
		t.Fatalf("call web did not name its call:\n%s", c.errOut)
	}
	return m[1]
}

// TestWebhooksListen: `webhooks listen` on a server that refuses loopback
// webhook URLs gets a real call's events, each verified and forwarded to
// a local receiver with the same signed headers; a delivery forged on the
// way is printed NOT VERIFIED, not forwarded, and arrives again, genuine,
// on the retry; a stream cut with a delivery unacknowledged loses nothing
// (the CLI reconnects and the retry brings it); another organization's
// events never reach it; Ctrl-C deletes the listener.
func TestWebhooksListen(t *testing.T) {
	t.Parallel()
	for name, mk := range devDatabases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := startDev(t, mk(t))
			rec := newReceiver(t)
			// The loopback URL itself is refused, naming the way round.
			err := d.api.do(t.Context(), "POST", "/v1/webhooks", map[string]any{"url": rec.srv.URL + "/hooks", "events": []string{"call.ended"}}, nil)
			var ae *apiError
			if !errors.As(err, &ae) || ae.Status != 400 || len(ae.Fields) != 1 ||
				!strings.Contains(ae.Fields[0].Message, "switchboard webhooks listen --forward-to "+rec.srv.URL+"/hooks") ||
				!strings.Contains(ae.Fields[0].Message, "SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE") {
				t.Fatalf("POST /v1/webhooks with a loopback URL: %v; want a 400 on url naming webhooks listen and SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE", err)
			}
			asst := d.assistant(t, d.key)
			proxy := newStreamProxy(t, d.url)
			lis := startCLI(t, d.key, nil, "webhooks", "listen", "--url", proxy.URL, "--forward-to", rec.srv.URL+"/hooks")
			m := lis.waitFor(t, regexp.MustCompile(`as (wh_\w+) .*\nSigning secret: (whsec_\S+) `), 10*time.Second)
			whID, secret := m[1], m[2]
			rec.setSecret(secret)
			lis.waitFor(t, regexp.MustCompile(`Ready: the stream is attached`), 10*time.Second)

			// Another organization listens too, and makes a call.
			otherKey := d.orgKey(t)
			other := startCLI(t, otherKey, nil, "webhooks", "listen", "--url", d.url)
			other.waitFor(t, regexp.MustCompile(`Ready`), 10*time.Second)
			otherCall := d.call(t, otherKey, d.assistant(t, otherKey))

			// A real call: its four events arrive verified, and forwarded.
			callID := d.call(t, d.key, asst, "next tuesday", "yes")
			for _, ev := range []string{"call.started", "call.ended", `call.transcript.ready`, `call.analysis.ready`} {
				lis.waitFor(t, deliveryLine(regexp.QuoteMeta(ev), `msg_\w+`, "1", "verified  → 204"), 30*time.Second)
			}
			for _, h := range rec.hooks() {
				if h.verifyErr != nil || !strings.Contains(h.body, callID) {
					t.Errorf("the receiver got %s %s: verify %v, body %s; want each delivery verified, about %s", h.event, h.msgID, h.verifyErr, h.body, callID)
				}
			}
			other.waitFor(t, deliveryLine(`call\.ended`, `msg_\w+`, "1", "verified"), 30*time.Second)

			// A forged delivery: reported, not forwarded, then retried genuine.
			forged := proxyOf(proxy).arm(t, true)
			d.call(t, d.key, asst)
			mid := forged()
			lis.waitFor(t, deliveryLine(`\S+`, mid, "1", `NOT VERIFIED \(webhook: no matching signature\)`), 10*time.Second)
			lis.waitFor(t, deliveryLine(`\S+`, mid, "2", "verified  → 204"), 30*time.Second)

			// A stream cut with a delivery sent and not acked.
			cut := proxyOf(proxy).arm(t, false)
			d.call(t, d.key, asst)
			mid2 := cut()
			lis.waitFor(t, deliveryLine(`\S+`, mid2, "2", "verified  → 204"), 30*time.Second)
			if !strings.Contains(lis.errOut.String(), "connecting again") {
				t.Errorf("after the cut, stderr = %q; want it to say it reconnects", lis.errOut)
			}

			var log struct {
				Data []struct {
					MessageID string
					Attempt   int
					Status    int
					Error     string
				}
			}
			if err := d.api.do(t.Context(), "GET", "/v1/webhooks/"+whID+"/deliveries?pageSize=100", nil, &log); err != nil {
				t.Fatal(err)
			}
			wantErr := map[string]string{mid: "signature not verified by the listener", mid2: "stream ended before it acknowledged"}
			for _, dl := range log.Data {
				if want, ok := wantErr[dl.MessageID]; ok && dl.Attempt == 1 {
					if !strings.Contains(dl.Error, want) {
						t.Errorf("delivery log: attempt 1 of %s = %+v; want its error to say %q", dl.MessageID, dl, want)
					}
					delete(wantErr, dl.MessageID)
				}
			}
			if len(wantErr) != 0 {
				t.Errorf("delivery log %+v lacks the failed first attempts of %v", log.Data, wantErr)
			}
			for _, h := range rec.hooks() {
				if h.verifyErr != nil || strings.Contains(h.body, `"forged"`) || strings.Contains(h.body, otherCall) {
					t.Errorf("the receiver got %s %s (verify %v): %s; want only genuine deliveries of this organization", h.event, h.msgID, h.verifyErr, h.body)
				}
			}
			for _, id := range regexp.MustCompile(`msg_\w+`).FindAllString(other.out.String(), -1) {
				if strings.Contains(lis.out.String(), id) {
					t.Errorf("the other organization's message %s reached this organization's listener", id)
				}
			}

			t.Logf("webhooks listen printed:\n%s%s", lis.out, lis.errOut)
			// Ctrl-C deletes the listener.
			if err := lis.stop(t); err != nil {
				t.Errorf("webhooks listen after Ctrl-C: %v; want success", err)
			}
			var list struct{ Data []struct{ ID, Kind string } }
			if err := d.api.do(t.Context(), "GET", "/v1/webhooks", nil, &list); err != nil {
				t.Fatal(err)
			}
			if len(list.Data) != 0 || !strings.Contains(lis.out.String(), "Deleted the listener "+whID) {
				t.Errorf("after Ctrl-C: endpoints %+v, stdout %q; want none left and the deletion said", list.Data, lis.out)
			}
		})
	}
}

// TestCallWeb: `call web` talks to README step 10's flow assistant in
// text, line by line from stdin, prints both sides, and returns when the
// flow ends the call; with nothing to say it hangs up; an unknown
// assistant is the API's 400 on assistantId.
func TestCallWeb(t *testing.T) {
	d := startDev(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"))
	asst := d.assistant(t, d.key)
	c := startCLI(t, d.key, strings.NewReader("next tuesday\nyes\n"), "call", "web", asst, "--url", d.url)
	var err error
	select {
	case err = <-c.done:
		close(c.done)
	case <-time.After(60 * time.Second):
		t.Fatalf("call web did not end within 60 s:\n%s", c.out)
	}
	if err != nil {
		t.Fatalf("call web: %v\n%s\n%s", err, c.out, c.errOut)
	}
	want := regexp.MustCompile(`(?s)assistant: Hi! This is Bright Smile Dental\. What day would suit you\?\n` +
		`you: next tuesday\nassistant: So .+, is that right\?\nyou: yes\nassistant: You are booked for .+\. Goodbye!\n` +
		`call ended: completed \(assistant-ended-call\)\n$`)
	if !want.MatchString(c.out.String()) {
		t.Errorf("call web printed:\n%s\nwant the conversation matching %s", c.out, want)
	}
	callID := regexp.MustCompile(`call (call_\w+) started`).FindStringSubmatch(c.errOut.String())
	if callID == nil {
		t.Fatalf("call web did not name its call: %s", c.errOut)
	}
	var tr struct{ Data []struct{ Role, Text string } }
	if err := d.api.do(t.Context(), "GET", "/v1/calls/"+callID[1]+"/transcripts", nil, &tr); err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, l := range tr.Data {
		if l.Role == "user" {
			said = append(said, l.Text)
		}
	}
	if strings.Join(said, "|") != "next tuesday|yes" {
		t.Errorf("the call's transcript has the user saying %q; want next tuesday, yes", said)
	}

	c = startCLI(t, d.key, strings.NewReader(""), "call", "web", asst, "--url", d.url)
	select {
	case err = <-c.done:
		close(c.done)
	case <-time.After(60 * time.Second):
		t.Fatal("call web with no input did not end within 60 s")
	}
	if err != nil || !strings.HasSuffix(c.out.String(), "call ended: completed (customer-ended-call)\n") {
		t.Errorf("call web with no input: %v, stdout %q; want the opening, then a hangup ending it completed / customer-ended-call", err, c.out)
	}

	t.Setenv("SWITCHBOARD_API_KEY", d.key)
	err = callWeb(t.Context(), []string{"asst_" + strings.Repeat("a", 26), "--url", d.url}, strings.NewReader(""), io.Discard, io.Discard)
	var ae *apiError
	if !errors.As(err, &ae) || ae.Status != 400 || len(ae.Fields) != 1 || ae.Fields[0].Field != "assistantId" {
		t.Errorf("call web with an unknown assistant: %v; want the API's 400 on assistantId", err)
	}
	t.Setenv("SWITCHBOARD_API_KEY", "")
	if err := callWeb(t.Context(), []string{asst, "--url", d.url}, strings.NewReader(""), io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "SWITCHBOARD_API_KEY") {
		t.Errorf("call web with no key: %v; want an error naming SWITCHBOARD_API_KEY", err)
	}
}

// TestPublishableKeyOrigins: the demo page (/widget/demo, on the server's
// own origin) starts a call with a publishable key whose origins include
// that origin, as docs/widget.md says; a key for another origin is
// refused with both origins named.
func TestPublishableKeyOrigins(t *testing.T) {
	t.Parallel()
	d := startDev(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"))
	asst := d.assistant(t, d.key)
	pk := func(origins ...string) string {
		var r struct{ Data struct{ Key string } }
		if err := d.api.do(t.Context(), "POST", "/v1/public-keys", map[string]any{"name": "Website", "assistantIds": []string{asst}, "origins": origins}, &r); err != nil {
			t.Fatal(err)
		}
		return r.Data.Key
	}
	// What the demo page's script sends: a same-origin POST, whose Origin
	// is the server's.
	initiate := func(key string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", d.url+"/v1/calls/initiate", strings.NewReader(`{"assistantId":"`+asst+`","type":"web"}`))
		req.Header.Set("X-API-Key", key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", d.url)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	st, body := initiate(pk("http://localhost:3000"))
	if st != 403 || !strings.Contains(body, `\"`+d.url+`\"`) || !strings.Contains(body, "http://localhost:3000") {
		t.Errorf("a key for http://localhost:3000 from the demo page's origin %s: %d %s; want 403 naming both origins", d.url, st, body)
	}
	if st, body := initiate(pk("http://localhost:3000", d.url)); st != 201 {
		t.Errorf("a key whose origins include the demo page's %s: %d %s; want 201", d.url, st, body)
	}
}

// TestWebhookListenerAPI: the listener's REST rules. A listener takes no
// URL, its events default to all, and kind must be http or listener; its
// stream is refused (plain 404, before any upgrade) for an HTTP endpoint
// and for another organization's listener, and a key without
// webhooks:write gets 403.
func TestWebhookListenerAPI(t *testing.T) {
	t.Parallel()
	d := startDev(t, "sqlite:"+filepath.Join(t.TempDir(), "sb.db"))
	field := func(err error) string {
		var ae *apiError
		if !errors.As(err, &ae) || ae.Status != 400 || len(ae.Fields) != 1 {
			return "not a 400 on one field: " + errString(err)
		}
		return ae.Fields[0].Field
	}
	if f := field(d.api.do(t.Context(), "POST", "/v1/webhooks", map[string]any{"kind": "listener", "url": "https://hooks.example.com/x"}, nil)); f != "url" {
		t.Errorf("a listener with a url: %s; want a 400 on url", f)
	}
	if f := field(d.api.do(t.Context(), "POST", "/v1/webhooks", map[string]any{"kind": "push", "events": []string{"call.ended"}}, nil)); f != "kind" {
		t.Errorf("kind push: %s; want a 400 on kind", f)
	}
	var lis struct {
		Data struct {
			ID, Kind, URL, Secret string
			Events                []string
			ExpiresAt             *time.Time
		}
	}
	if err := d.api.do(t.Context(), "POST", "/v1/webhooks", map[string]any{"kind": "listener"}, &lis); err != nil {
		t.Fatal(err)
	}
	if l := lis.Data; l.Kind != "listener" || l.URL != "" || len(l.Events) < 5 || !strings.HasPrefix(l.Secret, "whsec_") || l.ExpiresAt == nil ||
		l.ExpiresAt.Before(time.Now().Add(4*time.Minute)) {
		t.Errorf("the listener created = %+v; want kind listener, no url, every event, a secret, expiring in 5 minutes", l)
	}
	// An HTTP endpoint on a public address (the guard resolves it: use an IP).
	var hook struct{ Data struct{ ID, Kind string } }
	if err := d.api.do(t.Context(), "POST", "/v1/webhooks", map[string]any{"url": "https://203.0.113.7/hooks", "events": []string{"call.ended"}}, &hook); err != nil {
		t.Fatal(err)
	}
	if hook.Data.Kind != "http" {
		t.Errorf("an endpoint created without a kind has kind %q; want http", hook.Data.Kind)
	}
	dial := func(key, whID string) int {
		conn, res, err := websocket.Dial(t.Context(), d.api.wsURL("/v1/webhooks/"+whID+"/listen"),
			&websocket.DialOptions{HTTPHeader: http.Header{"X-API-Key": {key}}})
		if err == nil {
			conn.CloseNow()
			return 101
		}
		if res == nil {
			t.Fatalf("listen %s: %v", whID, err)
		}
		return res.StatusCode
	}
	if st := dial(d.key, lis.Data.ID); st != 101 {
		t.Errorf("listen on the listener: %d; want 101", st)
	}
	if st := dial(d.key, hook.Data.ID); st != 404 {
		t.Errorf("listen on an HTTP endpoint: %d; want 404", st)
	}
	if st := dial(d.orgKey(t), lis.Data.ID); st != 404 {
		t.Errorf("listen on another organization's listener: %d; want 404", st)
	}
	now := time.Now()
	k, readOnly := auth.NewKey(d.m.OrgID, "read", []string{auth.WebhooksRead}, now)
	if err := d.m.DB().CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if st := dial(readOnly, lis.Data.ID); st != 403 {
		t.Errorf("listen with a key holding webhooks:read only: %d; want 403", st)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
