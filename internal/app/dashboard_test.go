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
	t.Parallel()
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

// TestContactsCSVPartial: the REST API's CSV import takes the
// dashboard's choice: all or nothing by default (a bad row refuses the
// file, nothing is added), and with ?partial=true the good rows are added
// and the bad ones listed in refused; a spoilt file is refused either way.
func TestContactsCSVPartial(t *testing.T) {
	t.Parallel()
	b := start(t, testConfig("sqlite:"+filepath.Join(t.TempDir(), "csv.db")))
	p := b.must(201, "POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100"}).data()["id"].(string)
	path := "/v1/phone/contacts/" + p
	file := "name,phone\nAda,+14155550111\nBad,12345\nGrace,+1 415 555 0112\n"
	csv := func(query, body string) resp {
		b.t.Helper()
		return b.req("POST", path+query, b.key, []byte(body), "Content-Type", "text/csv")
	}
	count := func() int {
		t.Helper()
		r := b.must(200, "GET", path, nil)
		return int(r.Body["pagination"].(map[string]any)["total"].(float64))
	}

	r := csv("", file)
	expectFields(t, r, 400, "rows[3].phoneNumber")
	if n := count(); n != 0 {
		t.Fatalf("after an all-or-nothing import with a bad row: %d contacts; want 0", n)
	}
	r = csv("?partial=false", file)
	expectFields(t, r, 400, "rows[3].phoneNumber")

	r = csv("?partial=true", file)
	if r.Status != 201 {
		t.Fatalf("POST %s?partial=true = %d; want 201: %s", path, r.Status, r.Raw)
	}
	created, _ := r.data()["created"].([]any)
	refused, _ := r.data()["refused"].([]any)
	if len(created) != 2 || len(refused) != 1 || refused[0].(map[string]any)["field"] != "rows[3].phoneNumber" {
		t.Errorf("partial import = created %v, refused %v; want 2 created and rows[3].phoneNumber refused", created, refused)
	}
	if n := count(); n != 2 {
		t.Errorf("after the partial import: %d contacts; want 2", n)
	}
	// A clean partial import lists an empty refused.
	r = csv("?partial=true", "phone\n+14155550113\n")
	if refused, ok := r.data()["refused"].([]any); r.Status != 201 || !ok || len(refused) != 0 {
		t.Errorf("a clean partial import = %d %s; want 201 with refused: []", r.Status, r.Raw)
	}
	// What spoils the file, or rows that are all bad, add nothing.
	expectFields(t, csv("?partial=true", "name\nAda\n"), 400, "header")
	expectFields(t, csv("?partial=true", "phone\nnope\n"), 400, "rows[2].phoneNumber")
	expectFields(t, csv("?partial=maybe", file), 400, "partial")
	expectFields(t, b.req("POST", path+"?partial=true", b.key, map[string]any{"contacts": []any{map[string]any{"phoneNumber": "+14155550119"}}}), 400, "partial")
	if n := count(); n != 3 {
		t.Errorf("after the refused uploads: %d contacts; want 3", n)
	}
}
