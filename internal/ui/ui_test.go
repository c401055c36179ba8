package ui

import (
	"bufio"
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/operator"
	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/throttle"
)

const testPassword = "correct horse battery staple"

// clock is a settable clock for session expiry.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testBundle is a dashboard over a fresh SQLite store, served by httptest.
type testBundle struct {
	t     *testing.T
	st    store.Store
	srv   *Server
	http  *httptest.Server
	clock *clock
	// orgA and orgB each have an operator (opA, opB) and a call (callA, callB).
	orgA, orgB   string
	opA, opB     operator.Operator
	callA, callB call.Call
	recordings   *fakeRecordings
}

type fakeRecordings struct{ dir string }

func (f *fakeRecordings) Open(rel string) (*os.File, fs.FileInfo, error) {
	fh, err := os.Open(filepath.Join(f.dir, filepath.Base(rel)))
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	return fh, fi, err
}

func setup(t *testing.T, tweak func(*Config)) *testBundle {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "ui.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := &testBundle{t: t, st: db, clock: &clock{t: time.Now().UTC().Truncate(time.Millisecond)}, recordings: &fakeRecordings{dir: t.TempDir()}}
	hash, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, email string) (string, operator.Operator, call.Call) {
		org := auth.Org{ID: id.New(id.Org), Name: name, CreatedAt: b.clock.now()}
		if err := db.CreateOrg(ctx, org); err != nil {
			t.Fatal(err)
		}
		op := operator.Operator{ID: id.New(operator.IDPrefix), OrgID: org.ID, Email: email, PasswordHash: hash, CreatedAt: b.clock.now()}
		if err := db.CreateOperator(ctx, op); err != nil {
			t.Fatal(err)
		}
		c := call.Call{ID: id.New(id.Call), OrgID: org.ID, Type: call.Web, Status: call.Queued, AssistantID: id.New(id.Assistant),
			CreatedAt: b.clock.now(), UpdatedAt: b.clock.now()}
		if err := db.CreateCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.recordings.dir, c.ID+".wav"), []byte("RIFF fake wav of "+c.ID), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := db.SetCallRecording(ctx, org.ID, c.ID, "recordings/"+org.ID+"/"+c.ID+".wav"); err != nil {
			t.Fatal(err)
		}
		c.Recording = "recordings/" + org.ID + "/" + c.ID + ".wav"
		return org.ID, op, c
	}
	b.orgA, b.opA, b.callA = mk("A", "a@example.com")
	b.orgB, b.opB, b.callB = mk("B", "b@example.com")

	cfg := Config{Store: db, Recordings: b.recordings, Now: b.clock.now, PollEvery: 20 * time.Millisecond, HeartbeatEvery: 50 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	b.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.http = httptest.NewServer(b.srv)
	t.Cleanup(func() {
		b.srv.Close()
		b.http.Close()
	})
	return b
}

// browser is a cookie-keeping client that does not follow redirects and
// sends the Origin a browser would.
type browser struct {
	b      *testBundle
	c      *http.Client
	origin string
}

func (b *testBundle) browser() *browser {
	jar, _ := cookiejar.New(nil)
	// A sign-in runs bcrypt at cost 12 for an unknown email: seconds
	// under the race detector.
	return &browser{b: b, origin: b.http.URL, c: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (br *browser) do(method, path string, form url.Values, headers ...string) page {
	br.b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, br.b.http.URL+path, body)
	if err != nil {
		br.b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method != http.MethodGet && br.origin != "" {
		req.Header.Set("Origin", br.origin)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := br.c.Do(req)
	if err != nil {
		br.b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(raw)}
}

func (br *browser) get(path string) page { br.b.t.Helper(); return br.do(http.MethodGet, path, nil) }

func (br *browser) signIn(email, password string) page {
	br.b.t.Helper()
	return br.do(http.MethodPost, "/ui/login", url.Values{"email": {email}, "password": {password}})
}

// signedIn is a browser signed in as op.
func (b *testBundle) signedIn(op operator.Operator) *browser {
	b.t.Helper()
	br := b.browser()
	if p := br.signIn(op.Email, testPassword); p.status != http.StatusSeeOther {
		b.t.Fatalf("sign in as %s = %d; want 303\n%s", op.Email, p.status, p.body)
	}
	return br
}

var csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]{64})"`)

// csrf reads the CSRF token of a page's forms.
func (br *browser) csrf() string {
	br.b.t.Helper()
	p := br.get("/ui/calls")
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		br.b.t.Fatalf("GET /ui/calls (%d) has no csrf field", p.status)
	}
	return m[1]
}

// poster posts forms with the page's CSRF token, as the dashboard's forms do.
func (br *browser) poster() func(path string, v url.Values) page {
	br.b.t.Helper()
	token := br.csrf()
	return func(path string, v url.Values) page {
		br.b.t.Helper()
		v.Set("csrf", token)
		return br.do(http.MethodPost, path, v)
	}
}

func wantStatus(t *testing.T, what string, p page, want int) {
	t.Helper()
	if p.status != want {
		t.Errorf("%s = %d; want %d\n%.400s", what, p.status, want, p.body)
	}
}

// TestSecurityHeaders: every response under /ui, signed in or not, page,
// file, redirect or error, carries the CSP and the other headers.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	anon, br := b.browser(), b.signedIn(b.opA)
	asset := regexp.MustCompile(`/ui/static/app\.js\?v=[0-9a-f]+`).FindString(anon.get("/ui/login").body)
	if asset == "" {
		t.Fatal("the sign-in page links no /ui/static/app.js?v=…")
	}
	for _, tc := range []struct {
		who  *browser
		path string
		want int
	}{
		{anon, "/ui/login", 200}, {anon, "/ui/calls", 303}, {anon, "/ui/nowhere", 404}, {anon, asset, 200},
		{br, "/ui/", 303}, {br, "/ui/calls", 200}, {br, "/ui/overview", 200}, {br, "/ui/test-call", 200}, {br, "/ui/public-keys", 200}, {br, "/ui/calls.csv", 200}, {br, "/ui/calls/" + b.callA.ID, 200}, {br, "/ui/calls/" + b.callB.ID, 404},
		{br, "/ui/calls/" + b.callA.ID + "/recording", 200}, {br, "/ui/assistants", 200}, {br, "/ui/keys", 200},
		{br, "/ui/calls?type=fax", 400}, {br, "/ui/static/nothing.js", 404},
	} {
		p := tc.who.get(tc.path)
		wantStatus(t, "GET "+tc.path, p, tc.want)
		for h, v := range map[string]string{"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff",
			"Referrer-Policy": "same-origin", "X-Frame-Options": "DENY"} {
			if got := p.header.Get(h); got != v {
				t.Errorf("GET %s: %s = %q; want %q", tc.path, h, got, v)
			}
		}
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, " style=") || strings.Contains(p.body, "<style") {
			t.Errorf("GET %s has an inline script or style, which the CSP blocks", tc.path)
		}
	}
	if got := (br.get("/ui/calls")).header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("GET /ui/calls: Cache-Control = %q; want no-store", got)
	}
}

// TestSignIn: a wrong password and an unknown email get the same answer;
// the right one gets a session cookie with the right attributes and
// comes back to the page asked for, never to another site.
func TestSignIn(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.browser()
	bad := br.signIn(b.opA.Email, "not the password at all")
	unknown := br.signIn("nobody@example.com", testPassword)
	wantStatus(t, "sign in with a wrong password", bad, http.StatusUnauthorized)
	wantStatus(t, "sign in with an unknown email", unknown, http.StatusUnauthorized)
	for _, p := range []page{bad, unknown} {
		if !strings.Contains(p.body, "The email or password is incorrect.") || p.header.Get("Set-Cookie") != "" {
			t.Errorf("refused sign-in: want the generic message and no cookie; got Set-Cookie %q", p.header.Get("Set-Cookie"))
		}
	}

	p := br.do(http.MethodPost, "/ui/login", url.Values{"email": {"  A@Example.COM"}, "password": {testPassword}, "next": {"/ui/calls/" + b.callA.ID}})
	wantStatus(t, "sign in", p, http.StatusSeeOther)
	if loc := p.header.Get("Location"); loc != "/ui/calls/"+b.callA.ID {
		t.Errorf("sign in with next: Location = %q; want the call's page", loc)
	}
	ck := p.header.Get("Set-Cookie")
	for _, attr := range []string{CookieName + "=", "Path=/ui", "HttpOnly", "SameSite=Lax"} {
		if !strings.Contains(ck, attr) {
			t.Errorf("session cookie %q lacks %s", ck, attr)
		}
	}
	if strings.Contains(ck, "Secure") {
		t.Errorf("session cookie %q is Secure on an http server; the browser would drop it", ck)
	}
	wantStatus(t, "GET /ui/calls signed in", br.get("/ui/calls"), 200)

	for _, next := range []string{"https://evil.example/", "//evil.example/ui/", "/ui//evil.example", "/v1/calls", "javascript:alert(1)"} {
		p := b.browser().do(http.MethodPost, "/ui/login", url.Values{"email": {b.opA.Email}, "password": {testPassword}, "next": {next}})
		if loc := p.header.Get("Location"); loc != "/ui/overview" {
			t.Errorf("sign in with next=%q: Location = %q; want the overview, /ui/overview", next, loc)
		}
	}

	// A sign-in form posted from another site is refused before anything.
	evil := b.browser()
	evil.origin = "https://evil.example"
	wantStatus(t, "sign in from another origin", evil.signIn(b.opA.Email, testPassword), http.StatusForbidden)

	// https public URL: the cookie is Secure.
	bs := setup(t, func(c *Config) { c.PublicURL = "https://calls.example.com" })
	if ck := bs.signedIn(bs.opA); ck == nil {
		t.Fatal("no browser")
	}
	p = bs.browser().signIn(bs.opA.Email, testPassword)
	if ck := p.header.Get("Set-Cookie"); !strings.Contains(ck, "Secure") {
		t.Errorf("with an https public URL the session cookie %q is not Secure", ck)
	}
}

// TestSessionExpiry: a session ends after IdleTimeout without use, is
// extended by use, and ends at MaxAge however much it is used.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.IdleTimeout = time.Hour; c.MaxAge = 3 * time.Hour })
	br := b.signedIn(b.opA)
	b.clock.add(50 * time.Minute)
	wantStatus(t, "GET /ui/calls after 50 min idle", br.get("/ui/calls"), 200)
	b.clock.add(50 * time.Minute) // 50 min since the last use
	wantStatus(t, "GET /ui/calls after another 50 min (used in between)", br.get("/ui/calls"), 200)
	b.clock.add(61 * time.Minute)
	p := br.get("/ui/calls")
	wantStatus(t, "GET /ui/calls after 61 min idle", p, http.StatusSeeOther)
	if loc := p.header.Get("Location"); !strings.HasPrefix(loc, "/ui/login?next=") {
		t.Errorf("expired session: Location = %q; want the sign-in page", loc)
	}

	br = b.signedIn(b.opA)
	for range 5 { // used every 40 minutes for 3 h 20 min
		b.clock.add(40 * time.Minute)
		br.get("/ui/calls")
	}
	wantStatus(t, "GET /ui/calls past MaxAge, used all along", br.get("/ui/calls"), http.StatusSeeOther)
	n, err := b.st.PurgeOperatorSessions(t.Context(), b.clock.now())
	if err != nil || n != 0 {
		t.Errorf("PurgeOperatorSessions after both sessions ended = %d, %v; want 0 (each was deleted when found ended)", n, err)
	}
}

// TestSignOutAndCSRF: a state-changing form needs the session's CSRF token
// and to come from this site; signing out deletes the session.
func TestSignOutAndCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	br := b.signedIn(b.opA)
	token := br.csrf()
	other := b.signedIn(b.opA).csrf()
	if token == other {
		t.Errorf("two sessions have the same CSRF token")
	}

	wantStatus(t, "sign out without a token", br.do(http.MethodPost, "/ui/logout", url.Values{}), http.StatusForbidden)
	wantStatus(t, "sign out with another session's token", br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {other}}), http.StatusForbidden)
	br.origin = "https://evil.example"
	wantStatus(t, "sign out from another origin", br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {token}}), http.StatusForbidden)
	br.origin = ""
	wantStatus(t, "sign out with no Origin or Referer", br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {token}}), http.StatusForbidden)
	wantStatus(t, "sign out cross-site (Sec-Fetch-Site)",
		br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {token}}, "Sec-Fetch-Site", "cross-site", "Origin", b.http.URL), http.StatusForbidden)
	wantStatus(t, "GET /ui/calls after refused sign-outs", br.get("/ui/calls"), 200)

	p := br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {token}}, "Referer", b.http.URL+"/ui/calls")
	wantStatus(t, "sign out (Referer from this site)", p, http.StatusSeeOther)
	wantStatus(t, "GET /ui/calls after sign-out", br.get("/ui/calls"), http.StatusSeeOther)
	// The old cookie, replayed, is dead too (the session was deleted, not
	// just the cookie).
	u, _ := url.Parse(b.http.URL + "/ui/")
	replay := b.browser()
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: "x"}})
	wantStatus(t, "GET /ui/calls with a made-up cookie", replay.get("/ui/calls"), http.StatusSeeOther)
}

// TestCrossOrg: an operator sees only its organization: another
// organization's call, recording and stream are 404, and listings leave
// its calls out.
func TestCrossOrg(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	a := b.signedIn(b.opA)
	for _, path := range []string{"/ui/calls/" + b.callB.ID, "/ui/calls/" + b.callB.ID + "/recording", "/ui/events?call=" + b.callB.ID, "/ui/calls/call_nope"} {
		wantStatus(t, "operator of A: GET "+path, a.get(path), http.StatusNotFound)
	}
	list := a.get("/ui/calls").body
	if !strings.Contains(list, b.callA.ID) || strings.Contains(list, b.callB.ID) {
		t.Errorf("operator of A: the calls list should show %s and not B's %s", b.callA.ID, b.callB.ID)
	}
	rec := a.get("/ui/calls/" + b.callA.ID + "/recording")
	if rec.body != "RIFF fake wav of "+b.callA.ID || rec.header.Get("Content-Type") != "audio/wav" {
		t.Errorf("recording of A's call = %q (%s); want its file as audio/wav", rec.body, rec.header.Get("Content-Type"))
	}
	if page := a.get("/ui/calls/" + b.callA.ID).body; !strings.Contains(page, `<audio controls preload="none" src="/ui/calls/`+b.callA.ID+`/recording">`) {
		t.Errorf("the call page has no player for its recording")
	}
}

// TestLoginThrottle: failed sign-ins spend the client's refusal budget;
// once it is spent even the right password is answered 429 with
// Retry-After, before it is checked.
func TestLoginThrottle(t *testing.T) {
	t.Parallel()
	lim := throttle.NewLimiter(throttle.LimiterConfig{Rate: 0.001, Burst: 2})
	b := setup(t, func(c *Config) { c.Refusals = lim })
	br := b.browser()
	for i := range 2 {
		wantStatus(t, "failed sign-in "+itoa(i+1), br.signIn(b.opA.Email, "wrong password here"), http.StatusUnauthorized)
	}
	p := br.signIn(b.opA.Email, testPassword)
	wantStatus(t, "sign-in with the right password after the budget is spent", p, http.StatusTooManyRequests)
	if p.header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
}

func itoa(n int) string { return string(rune('0' + n)) }

// TestCallsFilters: the listing filters by outcome (and the rest), pages,
// and says what filter it could not use.
func TestCallsFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	ended := b.callA
	ended.UpdatedAt = b.clock.now()
	if err := ended.Transition(call.Change{To: call.Ended, At: b.clock.now(), Outcome: call.Busy, Reason: call.ReasonCustomerBusy}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.UpdateCall(ctx, ended, call.Queued); err != nil {
		t.Fatal(err)
	}
	var others []string
	for range 30 {
		c := call.Call{ID: id.New(id.Call), OrgID: b.orgA, Type: call.Phone, Direction: call.Outbound, Status: call.Queued,
			AssistantID: id.New(id.Assistant), From: "+14155550100", To: "+14155550111", CreatedAt: b.clock.now(), UpdatedAt: b.clock.now()}
		if err := b.st.CreateCall(ctx, c); err != nil {
			t.Fatal(err)
		}
		others = append(others, c.ID)
	}
	br := b.signedIn(b.opA)
	p := br.get("/ui/calls?outcome=busy")
	if !strings.Contains(p.body, ended.ID) || strings.Contains(p.body, others[0]) || !strings.Contains(p.body, "Calls 1–1 of 1") {
		t.Errorf("outcome=busy: want only %s", ended.ID)
	}
	p = br.get("/ui/calls?type=phone&direction=outbound")
	if !strings.Contains(p.body, "Calls 1–25 of 30") || !strings.Contains(p.body, `href="/ui/calls?direction=outbound&amp;page=2&amp;type=phone"`) {
		t.Errorf("type=phone&direction=outbound: want 1–25 of 30 and a link to page 2 keeping the filters\n%s", p.body)
	}
	p = br.get("/ui/calls?direction=outbound&page=2&type=phone")
	if !strings.Contains(p.body, "Calls 26–30 of 30") {
		t.Errorf("page 2: want calls 26–30 of 30")
	}
	today := b.clock.now().Format("2006-01-02")
	if p := br.get("/ui/calls?from=" + today + "&to=" + today); !strings.Contains(p.body, "of 31") {
		t.Errorf("from=to=today: want all 31 calls")
	}
	if p := br.get("/ui/calls?to=2000-01-01"); !strings.Contains(p.body, "No calls match.") {
		t.Errorf("to=2000-01-01: want no calls")
	}
	p = br.get("/ui/calls?status=sleeping")
	wantStatus(t, "status=sleeping", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "Status must be") {
		t.Errorf("status=sleeping: the page does not say what is wrong")
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, data string }

// openStream opens /ui/events and returns its events as they come.
func (br *browser) openStream(ctx context.Context, path string) (*http.Response, <-chan sseEvent) {
	br.b.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, br.b.http.URL+path, nil)
	req.Header.Set("Accept", "text/event-stream")
	c := &http.Client{Jar: br.c.Jar}
	res, err := c.Do(req)
	if err != nil {
		br.b.t.Fatalf("GET %s: %v", path, err)
	}
	ch := make(chan sseEvent, 64)
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		close(ch)
		return res, ch
	}
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			case line == "" && ev.name != "":
				select {
				case ch <- ev:
				case <-ctx.Done():
					return
				}
				ev = sseEvent{}
			}
		}
	}()
	return res, ch
}

func waitEvent(t *testing.T, ch <-chan sseEvent, name, contains string) sseEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended before a %q event containing %q", name, contains)
			}
			if ev.name == name && strings.Contains(ev.data, contains) {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event containing %q within 5 s", name, contains)
		}
	}
}

// TestEvents: the live stream sends live calls and their changes, a
// call's new transcript lines and its end; streams are bounded per
// session, and end when the session is signed out.
func TestEvents(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxStreamsPerSession = 2 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	br := b.signedIn(b.opA)

	_, list := br.openStream(ctx, "/ui/events")
	waitEvent(t, list, "call", `"id":"`+b.callA.ID+`","type":"web"`)
	_, one := br.openStream(ctx, "/ui/events?call="+b.callA.ID)
	waitEvent(t, one, "call", `"statusText":"queued"`)
	res, _ := br.openStream(ctx, "/ui/events")
	if res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a third stream of a session allowed two = %d; want 429", res.StatusCode)
	}
	if other, _ := b.signedIn(b.opA).openStream(ctx, "/ui/events"); other.StatusCode != http.StatusOK {
		t.Errorf("a stream of another session = %d; want 200 (the bound is per session)", other.StatusCode)
	}

	c := b.callA
	if err := c.Transition(call.Change{To: call.InProgress, At: b.clock.now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.UpdateCall(ctx, c, call.Queued); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, list, "call", `"statusText":"in-progress"`)
	waitEvent(t, one, "call", `"statusText":"in-progress"`)
	if err := b.st.AppendTurn(ctx, call.Turn{ID: id.New("turn"), OrgID: b.orgA, CallID: c.ID, Seq: 1, Role: call.RoleAssistant,
		Text: "Hello <b>there</b>", StartedAt: b.clock.now(), EndedAt: b.clock.now(), Interrupted: true}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, one, "turn", `"text":"Hello \u003cb\u003ethere\u003c/b\u003e","interrupted":true`)
	prev := c.Status
	if err := c.Transition(call.Change{To: call.Ended, At: b.clock.now().Add(2 * time.Second), Outcome: call.Completed, Reason: call.ReasonCustomerEnded}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.UpdateCall(ctx, c, prev); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, list, "call", `"statusText":"ended","outcome":"completed"`)
	waitEvent(t, one, "end", "{}")

	// A call that starts and ends between two polls is still shown.
	quick := call.Call{ID: id.New(id.Call), OrgID: b.orgA, Type: call.Web, Status: call.Queued, AssistantID: id.New(id.Assistant),
		CreatedAt: b.clock.now(), UpdatedAt: b.clock.now()}
	if err := b.st.CreateCall(ctx, quick); err != nil {
		t.Fatal(err)
	}
	if err := quick.Transition(call.Change{To: call.Ended, At: b.clock.now(), Outcome: call.Failed, Reason: call.ReasonClientNeverConnected}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.UpdateCall(ctx, quick, call.Queued); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, list, "call", `"id":"`+quick.ID+`"`)

	// Signing out ends the session's streams at their next heartbeat.
	if p := br.do(http.MethodPost, "/ui/logout", url.Values{"csrf": {br.csrf()}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign out = %d", p.status)
	}
	waitEvent(t, list, "end", "{}")
	if res, _ := br.openStream(ctx, "/ui/events"); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a stream after sign-out = %d; want 401", res.StatusCode)
	}
}

// TestLatencyChart: stacked bars for voice turns, one block for text
// turns, none for caller turns; no chart without latency.
func TestLatencyChart(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]time.Duration{40 * time.Microsecond: 50 * time.Microsecond, 900 * time.Millisecond: time.Second,
		1300 * time.Millisecond: 2 * time.Second, time.Second: time.Second, 0: time.Microsecond} {
		if got := niceCeil(d); got != want {
			t.Errorf("niceCeil(%v) = %v; want %v", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{12500 * time.Nanosecond: "0.0125 ms", 2500 * time.Microsecond: "2.5 ms", 250 * time.Millisecond: "250 ms", 1500 * time.Millisecond: "1.5 s", 0: "0 ms"} {
		if got := msLabel(d); got != want {
			t.Errorf("msLabel(%v) = %q; want %q", d, got, want)
		}
	}
	if latencyChart([]call.Turn{{Role: call.RoleUser, Latency: time.Second}, {Role: call.RoleAssistant}}) != nil {
		t.Errorf("latencyChart of turns without latency: want nil")
	}
	bd := &call.Breakdown{Endpointing: 200 * time.Millisecond, Transcriber: 100 * time.Millisecond, Model: 400 * time.Millisecond,
		Voice: 150 * time.Millisecond, Platform: 50 * time.Millisecond, Total: 900 * time.Millisecond}
	c := latencyChart([]call.Turn{
		{Seq: 1, Role: call.RoleAssistant, Latency: 300 * time.Millisecond},
		{Seq: 2, Role: call.RoleUser},
		{Seq: 3, Role: call.RoleAssistant, Breakdown: bd, Interrupted: true},
	})
	if c == nil || len(c.Bars) != 2 || len(c.Stages) != 5 {
		t.Fatalf("latencyChart: got %+v; want 2 bars and the 5-stage legend", c)
	}
	if len(c.Bars[0].Segs) != 1 || c.Bars[0].Segs[0].Class != "seg-total" || len(c.Bars[1].Segs) != 5 {
		t.Errorf("bars: text turn %+v, voice turn %+v; want 1 block and 5 stacked segments", c.Bars[0].Segs, c.Bars[1].Segs)
	}
	// 900 ms on a 1 s scale: the stack's top is at 90% of the plot height.
	top := c.Bars[1].Segs[4].Y
	if want := y(900*time.Millisecond, time.Second); top != want || c.Ticks[4].Label != "1.0 s" {
		t.Errorf("voice bar top y = %v, top tick %q; want %v and 1.0 s", top, c.Ticks[4].Label, want)
	}
	if !strings.Contains(c.Bars[1].Title, "Turn 3: 900 ms") || !strings.Contains(c.Bars[1].Title, "model 400 ms") || !strings.HasSuffix(c.Bars[1].Title, "interrupted") {
		t.Errorf("voice bar title = %q", c.Bars[1].Title)
	}
}

// TestCallWebhookMessages: a call's page lists the webhook messages about
// it (endpoint, event, delivery state), and only its own.
func TestCallWebhookMessages(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	w := store.Webhook{ID: id.New(id.Webhook), OrgID: b.orgA, URL: "https://hooks.example.com/calls", Events: []string{"call.ended"},
		Secrets: []string{"whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0dGVzdA=="}, CreatedAt: time.Now()}
	if err := b.st.CreateWebhook(ctx, w); err != nil {
		t.Fatal(err)
	}
	for _, callID := range []string{b.callA.ID, "call_other"} {
		ev := event.Event{ID: id.New("evt"), Type: "call.ended", At: time.Now(), Data: []byte(`{}`), CallID: callID}
		if err := b.st.QueueEvent(ctx, b.orgA, ev, ev.At); err != nil {
			t.Fatal(err)
		}
	}
	page := b.signedIn(b.opA).get("/ui/calls/" + b.callA.ID).body
	if n := strings.Count(page, "data-message-id="); n != 1 || !strings.Contains(page, `<a href="/ui/webhooks/`+w.ID+`">https://hooks.example.com/calls</a>`) ||
		!strings.Contains(page, "<td>call.ended</td>") {
		t.Errorf("the call page lists %d webhook messages; want its one call.ended to the endpoint", n)
	}
}
