package app

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootRedirect: GET / from a browser (Accept names text/html) is sent
// to the dashboard; an API client (JSON, anything else, or no Accept)
// keeps the API's JSON 404.
func TestRootRedirect(t *testing.T) {
	b := start(t, testConfig("sqlite:"+filepath.Join(t.TempDir(), "root.db")))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, accept string
		status         int
		location       string
	}{
		{"GET", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", http.StatusSeeOther, "/ui/"},
		{"GET", "TEXT/HTML", http.StatusSeeOther, "/ui/"},
		{"GET", "application/json", http.StatusNotFound, ""},
		{"GET", "text/html;q=0, application/json", http.StatusNotFound, ""},
		{"GET", "", http.StatusNotFound, ""},
		{"POST", "text/html", http.StatusNotFound, ""},
	} {
		rq, err := http.NewRequest(tc.method, b.m.URL()+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.accept != "" {
			rq.Header.Set("Accept", tc.accept)
		}
		res, err := noFollow.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status || res.Header.Get("Location") != tc.location {
			t.Errorf("%s / (Accept %q) = %d Location %q; want %d %q", tc.method, tc.accept, res.StatusCode, res.Header.Get("Location"), tc.status, tc.location)
		}
		if tc.status == http.StatusNotFound && !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s / (Accept %q): Content-Type %q; want the API's JSON", tc.method, tc.accept, res.Header.Get("Content-Type"))
		}
	}
}
