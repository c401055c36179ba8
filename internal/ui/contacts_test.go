package ui

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchboard/internal/id"
	"switchboard/internal/phone"
)

// purchase buys number for org in the store (sandbox).
func (b *testBundle) purchase(org, number string) phone.Purchase {
	b.t.Helper()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: org, Number: number, Provider: "sandbox", CreatedAt: b.clock.now(), UpdatedAt: b.clock.now()}
	if err := b.st.CreatePurchase(b.t.Context(), p); err != nil {
		b.t.Fatal(err)
	}
	return p
}

// upload posts a file as a browser's multipart form does.
func (br *browser) upload(path, csrf, name string, content []byte, fields ...string) page {
	br.b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf != "" {
		_ = mw.WriteField("csrf", csrf)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, br.b.http.URL+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Origin", br.origin)
	res, err := br.c.Do(req)
	if err != nil {
		br.b.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(raw)}
}

// TestContacts: one contact is added with the REST API's checks (errors on
// their field); a CSV import adds the good rows and lists each refused
// one with why; contacts are deleted; another organization's number is a
// 404 and the forms need their token.
func TestContacts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	pu := b.purchase(b.orgA, "+14155550100")
	br := b.signedIn(b.opA)
	token := br.csrf()
	base := "/ui/contacts/" + pu.ID

	if p := br.get("/ui/contacts"); !strings.Contains(p.body, `href="`+base+`">&#43;14155550100</a>`) {
		t.Errorf("/ui/contacts does not link the number's contacts")
	}
	p := br.do(http.MethodPost, base, url.Values{"csrf": {token}, "name": {"Ada"}, "phoneNumber": {"555"}, "timezone": {"Mars/Olympus"}})
	wantStatus(t, "add a bad contact", p, http.StatusBadRequest)
	if !strings.Contains(p.body, `value="555" placeholder="+14155550123" required aria-invalid="true"><span class="field-error" role="alert">`) ||
		!strings.Contains(p.body, `value="Mars/Olympus" placeholder="America/New_York"><span class="field-error" role="alert">`) {
		t.Errorf("refused contact: want the errors on phoneNumber and timezone\n%s", p.body)
	}
	wantStatus(t, "add a contact", br.do(http.MethodPost, base, url.Values{"csrf": {token}, "name": {"Ada"}, "phoneNumber": {"+1 415 555 0111"}}), http.StatusSeeOther)
	p = br.do(http.MethodPost, base, url.Values{"csrf": {token}, "phoneNumber": {"+14155550111"}})
	wantStatus(t, "add the same number again", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "is already a contact of this number") {
		t.Errorf("a duplicate contact: the page does not say so")
	}

	csv := "name,phone,plan\nBob,+14155550112,gold\nBad,12345,\nAda again,+14155550111,\nCy,+14155550113,\n"
	p = br.upload(base+"/import", token, "people.csv", []byte(csv))
	wantStatus(t, "import with a bad row", p, http.StatusOK)
	for _, want := range []string{
		"<strong>2</strong> row(s) imported; <strong>1</strong> refused; 1 already there.",
		`<tr class="failed" data-row="3"><td>3</td><td>12345</td><td>phoneNumber: `,
		`<tr data-row="4"><td>4</td><td>&#43;14155550111</td><td>already a contact`,
		"Contacts 1–3 of 3",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("import report lacks %q", want)
		}
	}
	p = br.upload(base+"/import", token, "bad.csv", []byte("name\nAda\n"))
	wantStatus(t, "import without a phone column", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "Nothing was imported") || !strings.Contains(p.body, "needs a phoneNumber column") {
		t.Errorf("a file without a phoneNumber column: want it refused whole")
	}
	// All or nothing, as the REST API without ?partial=true: a bad row
	// imports nothing.
	p = br.upload(base+"/import", token, "people.csv", []byte("phone\n+14155550118\nnope\n"), "mode", "all")
	wantStatus(t, "import all-or-nothing with a bad row", p, http.StatusBadRequest)
	if !strings.Contains(p.body, "Nothing was imported: 1 row(s) are refused") || !strings.Contains(p.body, `<tr class="failed" data-row="3">`) {
		t.Errorf("an all-or-nothing import with a bad row: want nothing imported and row 3 listed")
	}
	p = br.upload(base+"/import", token, "ok.csv", []byte("phoneNumber\n+14155550114\n"))
	wantStatus(t, "a clean import", p, http.StatusSeeOther)
	wantStatus(t, "import without a token", br.upload(base+"/import", "", "ok.csv", []byte("phoneNumber\n+14155550115\n")), http.StatusForbidden)

	cs, total, err := b.st.ListContacts(t.Context(), b.orgA, pu.ID, pageOne)
	if err != nil || total != 4 {
		t.Fatalf("contacts after the imports = %d, %v; want 4", total, err)
	}
	wantStatus(t, "delete without a token", br.do(http.MethodPost, base+"/"+cs[0].ID+"/delete", url.Values{}), http.StatusForbidden)
	wantStatus(t, "delete", br.do(http.MethodPost, base+"/"+cs[0].ID+"/delete", url.Values{"csrf": {token}}), http.StatusSeeOther)
	if _, total, _ := b.st.ListContacts(t.Context(), b.orgA, pu.ID, pageOne); total != 3 {
		t.Errorf("contacts after a delete = %d; want 3", total)
	}

	other := b.signedIn(b.opB)
	ot := other.csrf()
	wantStatus(t, "B: GET A's contacts", other.get(base), http.StatusNotFound)
	wantStatus(t, "B: add to A's number", other.do(http.MethodPost, base, url.Values{"csrf": {ot}, "phoneNumber": {"+14155550116"}}), http.StatusNotFound)
	wantStatus(t, "B: import to A's number", other.upload(base+"/import", ot, "x.csv", []byte("phone\n+14155550117\n")), http.StatusNotFound)
	wantStatus(t, "B: delete A's contact", other.do(http.MethodPost, base+"/"+cs[1].ID+"/delete", url.Values{"csrf": {ot}}), http.StatusNotFound)
}
