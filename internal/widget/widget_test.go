package widget

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func server(t *testing.T) (*Handler, *httptest.Server) {
	t.Helper()
	h, err := New("http://switchboard.example:8080")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return h, srv
}

func get(t *testing.T, srv *httptest.Server, method, path string, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestScripts: each script is served with its JavaScript type, a content
// ETag, CORS for cross-origin module and worklet loads, a short cache on
// the alias a page embeds and a long immutable one on the versioned path.
func TestScripts(t *testing.T) {
	_, srv := server(t)
	for _, tc := range []struct {
		path, cache, holds string
	}{
		{"/widget.js", "public, max-age=300", "root.Switchboard = api"},
		{"/widget.mjs", "public, max-age=300", "export const start"},
		{"/widget/v1/widget.js", "public, max-age=31536000, immutable", "root.Switchboard = api"},
		{"/widget/v1/widget.mjs", "public, max-age=31536000, immutable", "export const start"},
		{"/widget/v1/audio-worklet.mjs", "public, max-age=31536000, immutable", `registerProcessor("switchboard-capture"`},
		{"/widget/v1/audio-worklet.mjs?v=anything", "public, max-age=31536000, immutable", "class Resampler"},
		{"/widget/v1/demo.js", "public, max-age=31536000, immutable", "Switchboard.mount"},
	} {
		resp, body := get(t, srv, "GET", tc.path)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200", tc.path, resp.StatusCode)
			continue
		}
		h := resp.Header
		if got := h.Get("Content-Type"); got != "text/javascript; charset=utf-8" {
			t.Errorf("GET %s Content-Type = %q", tc.path, got)
		}
		if got := h.Get("Cache-Control"); got != tc.cache {
			t.Errorf("GET %s Cache-Control = %q, want %q", tc.path, got, tc.cache)
		}
		if !regexp.MustCompile(`^"[0-9a-f]{16}"$`).MatchString(h.Get("ETag")) {
			t.Errorf("GET %s ETag = %q, want a quoted content hash", tc.path, h.Get("ETag"))
		}
		if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Cross-Origin-Resource-Policy") != "cross-origin" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s headers = %v, want CORS *, CORP cross-origin, nosniff", tc.path, h)
		}
		if !strings.Contains(body, tc.holds) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.holds)
		}
	}
	// The alias and the versioned path are the same file.
	a, _ := get(t, srv, "GET", "/widget.js")
	v, _ := get(t, srv, "GET", "/widget/v1/widget.js")
	if a.Header.Get("ETag") != v.Header.Get("ETag") {
		t.Errorf("/widget.js ETag %s, /widget/v1/widget.js %s: want the same", a.Header.Get("ETag"), v.Header.Get("ETag"))
	}
}

func TestRevalidation(t *testing.T) {
	_, srv := server(t)
	first, _ := get(t, srv, "GET", "/widget.js")
	etag := first.Header.Get("ETag")
	resp, body := get(t, srv, "GET", "/widget.js", "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Errorf("GET /widget.js If-None-Match %s = %d with %d bytes, want 304 and no body", etag, resp.StatusCode, len(body))
	}
	resp, _ = get(t, srv, "GET", "/widget.js", "If-None-Match", `"0000000000000000"`)
	if resp.StatusCode != 200 {
		t.Errorf("GET /widget.js with a stale ETag = %d, want 200", resp.StatusCode)
	}
	resp, body = get(t, srv, "HEAD", "/widget/v1/audio-worklet.mjs")
	if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Errorf("HEAD = %d, %d bytes, %q", resp.StatusCode, len(body), resp.Header.Get("Content-Type"))
	}
}

func TestNotServed(t *testing.T) {
	_, srv := server(t)
	for _, p := range []string{"/widget/v1/demo.html", "/widget/v1/test/audio.test.mjs", "/widget/v1/nope.js", "/widget/v2/widget.js", "/widget/v1/../web.go", "/widget/v1/"} {
		if resp, _ := get(t, srv, "GET", p); resp.StatusCode != 404 {
			t.Errorf("GET %s = %d, want 404", p, resp.StatusCode)
		}
	}
	if resp, _ := get(t, srv, "POST", "/widget.js"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /widget.js = %d, want 405", resp.StatusCode)
	}
}

// TestDemo: the demo page has no inline script, and its policy allows
// scripts from this server only and connections to the gateway's origin.
func TestDemo(t *testing.T) {
	_, srv := server(t)
	resp, body := get(t, srv, "GET", "/widget/demo?assistantId=asst_x&publicKey=pk_y")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /widget/demo = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self';", "default-src 'none'", "connect-src 'self' http://switchboard.example:8080 ws://switchboard.example:8080;"} {
		if !strings.Contains(csp, want) {
			t.Errorf("demo CSP %q lacks %q", csp, want)
		}
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("demo headers = %v", resp.Header)
	}
	// Every <script> has a src on this server, and no element has an inline handler.
	scripts := regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1)
	if len(scripts) == 0 {
		t.Fatal("demo page has no script")
	}
	for _, s := range scripts {
		if !strings.Contains(s, `src="/widget/v1/`) {
			t.Errorf("demo script %s is not a file of the widget", s)
		}
	}
	if regexp.MustCompile(`(?i)<script[^>]*>[^<]+</script>|\son[a-z]+=`).MatchString(body) {
		t.Error("demo page has inline script")
	}
	// What it links is served.
	for _, m := range regexp.MustCompile(`(?:src|href)="(/widget/[^"]+)"`).FindAllStringSubmatch(body, -1) {
		if r, _ := get(t, srv, "GET", m[1]); r.StatusCode != 200 {
			t.Errorf("demo links %s: %d", m[1], r.StatusCode)
		}
	}
}

// TestWorkletVersionPinned: widget.js loads audio-worklet.mjs with the
// worklet's content hash, so a cached worklet never pairs with a newer
// widget. Changing audio-worklet.mjs means updating WORKLET_VERSION.
func TestWorkletVersionPinned(t *testing.T) {
	h, _ := server(t)
	js := string(h.files["widget.js"].body)
	m := regexp.MustCompile(`var WORKLET_VERSION = "([0-9a-f]*)";`).FindStringSubmatch(js)
	if m == nil {
		t.Fatal("widget.js has no WORKLET_VERSION")
	}
	if want := h.WorkletVersion(); m[1] != want {
		t.Errorf(`web/widget/widget.js WORKLET_VERSION = %q, audio-worklet.mjs is %q: set var WORKLET_VERSION = "%s";`, m[1], want, want)
	}
	if !strings.Contains(js, `"audio-worklet.mjs?v=" + WORKLET_VERSION`) {
		t.Error("widget.js does not load the worklet with its version")
	}
}
