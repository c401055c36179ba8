package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/operator"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages holds each page's template (the layout with the page's own
// "title" and "content") and the static files with their content hashes.
type pages struct {
	byName map[string]*template.Template
	// assets maps a static file's name to its hash (the ?v= of its URL,
	// so a new build is never served a cached old file).
	assets map[string]string
}

func parsePages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}, assets: map[string]string{}}
	files, err := fs.Glob(staticFS, "static/*")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := staticFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		p.assets[path.Base(f)] = hex.EncodeToString(sum[:6])
	}
	funcs := template.FuncMap{
		"asset": func(name string) (string, error) {
			v, ok := p.assets[name]
			if !ok {
				return "", fmt.Errorf("ui: no static file %q", name)
			}
			return "/ui/static/" + name + "?v=" + v, nil
		},
		"nav":      func() []navItem { return nav },
		"when":     formatTime,
		"short":    shortTime,
		"clock":    func(t time.Time) string { return t.UTC().Format("15:04:05") },
		"duration": formatDuration,
		"ms":       func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) },
		// confirm gives a confirmForm the page's CSRF token.
		"confirm": func(p pageData, c *confirmForm) *confirmForm {
			if c == nil {
				return nil
			}
			cc := *c
			cc.CSRF = p.CSRF
			return &cc
		},
		"join":  strings.Join,
		"sub":   func(a, b float64) float64 { return a - b },
		"list3": func(a, b, c string) []string { return []string{a, b, c} },
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", n, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// view is what a handler renders: the page's template (templates/Name.html),
// the navigation item it is under, its title, and its data.
type view struct {
	Name  string
	Nav   string
	Title string
	// Events is the live-update stream the page's script listens to
	// ("" for none): /ui/events?….
	Events string
	Data   any
}

// pageData is what templates see: the view, plus the operator (nil when
// signed out: no navigation) and the CSRF token every form carries
// ({{template "csrf" .}}).
type pageData struct {
	view
	Op   *operator.Operator
	CSRF string
}

// render writes the page with status. Templates are executed into a
// buffer first, so a template error is a clean 500, not half a page.
func (s *Server) render(w http.ResponseWriter, r *request, status int, v view) {
	t, ok := s.pages.byName[v.Name]
	if !ok {
		s.log.Error("dashboard: no such template", "name", v.Name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	d := pageData{view: v, CSRF: r.csrf}
	if r.op.ID != "" {
		d.Op = &r.op
	}
	var b bytes.Buffer
	if err := t.Execute(&b, d); err != nil {
		s.log.Error("dashboard: rendering failed", "name", v.Name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages show an organization's data: kept by no cache.
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// static serves an embedded file. Its URL carries its hash (asset), so it
// may be cached for good.
func (s *Server) static(w http.ResponseWriter, r *request) error {
	name := r.PathValue("file")
	b, err := staticFS.ReadFile("static/" + name)
	if err != nil || strings.Contains(name, "/") {
		return apperr.NotFoundf("no such file")
	}
	switch path.Ext(name) {
	case ".css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		w.Header().Set("Content-Type", "image/svg+xml")
	default:
		w.Header().Set("Content-Type", http.DetectContentType(b))
	}
	if r.URL.Query().Get("v") == s.pages.assets[name] {
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		w.Header().Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r.Request, "", time.Time{}, bytes.NewReader(b))
	return nil
}

// formatTime shows a time in UTC to the second, or "—" when unset.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// shortTime is a time in a listing: the date and time, UTC (the column
// says so).
func shortTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// formatDuration shows a call's length as 1h02m03s, 2m05s or 4.2s.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm%02ds", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
