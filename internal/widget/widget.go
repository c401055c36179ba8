// Package widget serves the web widget (web/widget): the script a page
// embeds to put a "Call assistant" button on it, the ES module with the
// same API, the AudioWorklet module they load, and a demo page. The files
// are embedded in the binary and served as committed, so `make run` needs
// no Node.js. docs/widget.md is the integrator's guide.
package widget

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"switchboard/web"
)

// Version is the widget's major version: the path segment of its
// long-cached URLs (/widget/v1/…). It changes only with an incompatible
// API; the AudioWorklet module is also versioned by its content
// (audio-worklet.mjs?v=…).
const Version = "v1"

// Cache lifetimes. The aliases (/widget.js, /widget.mjs) are what pages
// embed, so a server upgrade reaches them within minutes; the versioned
// paths are what the widget itself loads.
const (
	aliasCache     = "public, max-age=300"
	versionedCache = "public, max-age=31536000, immutable"
	demoCache      = "no-cache"
)

type asset struct {
	name  string
	body  []byte
	etag  string
	ctype string
}

// Handler serves the widget's files. It is safe for concurrent use.
type Handler struct {
	files   map[string]*asset // by file name
	demoCSP string
}

// served are the files under /widget/v1/, and their types. demo.html is
// served at /widget/demo only.
var served = map[string]string{
	"widget.js":         "text/javascript; charset=utf-8",
	"widget.mjs":        "text/javascript; charset=utf-8",
	"audio-worklet.mjs": "text/javascript; charset=utf-8",
	"demo.js":           "text/javascript; charset=utf-8",
	"demo.css":          "text/css; charset=utf-8",
	"demo.html":         "text/html; charset=utf-8",
}

// New returns the handler. publicURL is the server's public URL, whose
// websocket origin the demo page's Content-Security-Policy lets it connect
// to (gateway URLs are built on it).
func New(publicURL string) (*Handler, error) {
	h := &Handler{files: map[string]*asset{}}
	for name, ctype := range served {
		body, err := fs.ReadFile(web.Widget, "widget/"+name)
		if err != nil {
			return nil, fmt.Errorf("widget: embedded %s: %w", name, err)
		}
		h.files[name] = &asset{name: name, body: body, etag: `"` + contentHash(body) + `"`, ctype: ctype}
	}
	connect := []string{"'self'"}
	if u, err := url.Parse(publicURL); err == nil && u.Host != "" {
		switch u.Scheme {
		case "https":
			connect = append(connect, "https://"+u.Host, "wss://"+u.Host)
		case "http":
			connect = append(connect, "http://"+u.Host, "ws://"+u.Host)
		}
	}
	h.demoCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src " + strings.Join(connect, " ") +
		"; img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
	return h, nil
}

// contentHash is the first 16 hex digits of the SHA-256 of b: the ETag,
// and the version audio-worklet.mjs is loaded with.
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Register adds the widget's routes to mux: GET (and HEAD) /widget.js,
// /widget.mjs, /widget/v1/{file} and /widget/demo. They are public static
// files, outside the REST API's middleware.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /widget.js", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, "widget.js", aliasCache) })
	mux.HandleFunc("GET /widget.mjs", func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, "widget.mjs", aliasCache) })
	mux.HandleFunc("GET /widget/demo", h.demo)
	mux.HandleFunc("GET /widget/"+Version+"/{file}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("file")
		if name == "demo.html" || h.files[name] == nil {
			http.NotFound(w, r)
			return
		}
		h.serve(w, r, name, versionedCache)
	})
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name, cache string) {
	a := h.files[name]
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", cache)
	hd.Set("ETag", a.etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	// Pages on any origin load these: module scripts and AudioWorklet
	// modules are fetched in CORS mode, and pages isolated with COEP need
	// the resource policy. They are public, credential-free files.
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	// ServeContent answers If-None-Match with 304, HEAD and ranges.
	http.ServeContent(w, r, path.Base(name), time.Time{}, bytes.NewReader(a.body))
}

// demo serves the page an operator tries an assistant on:
// /widget/demo?assistantId=…&publicKey=…. Its script reads the parameters
// from the URL; the page has no inline script, so its policy allows
// scripts from this server only.
func (h *Handler) demo(w http.ResponseWriter, r *http.Request) {
	a := h.files["demo.html"]
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("Cache-Control", demoCache)
	hd.Set("Content-Security-Policy", h.demoCSP)
	hd.Set("X-Content-Type-Options", "nosniff")
	// The page's URL may hold a publishable key: never send it on.
	hd.Set("Referrer-Policy", "no-referrer")
	http.ServeContent(w, r, "demo.html", time.Time{}, bytes.NewReader(a.body))
}

// WorkletVersion is the content version widget.js must load
// audio-worklet.mjs with (its WORKLET_VERSION).
func (h *Handler) WorkletVersion() string {
	return strings.Trim(h.files["audio-worklet.mjs"].etag, `"`)
}
