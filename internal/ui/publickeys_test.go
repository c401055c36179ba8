package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/auth"
)

// TestPublicKeys: a publishable key is made with its assistants and
// origins (refused with each error on its control), shown once, listed
// with its assistants' names, and revoked; another organization's
// assistants and keys are out of reach, and the forms need their token.
func TestPublicKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	sales := b.assistant(b.orgA, "Sales line")
	theirs := b.assistant(b.orgB, "Theirs")
	br := b.signedIn(b.opA)
	token := br.csrf()

	p := br.do(http.MethodPost, "/ui/public-keys", url.Values{"csrf": {token}, "name": {"Site"}, "origins": {"ftp://example.com\nhttps://www.example.com\nhttps://WWW.example.com"}})
	wantStatus(t, "create without assistants and with bad origins", p, http.StatusBadRequest)
	for _, want := range []string{"tick at least one assistant", "line 1: ", "line 3: repeats https://www.example.com", `value="Site"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("refused publishable key: the page lacks %q", want)
		}
	}
	p = br.do(http.MethodPost, "/ui/public-keys", url.Values{"csrf": {token}, "assistantIds": {theirs.ID}, "origins": {"https://www.example.com"}})
	wantStatus(t, "create with another organization's assistant", p, http.StatusBadRequest)
	if strings.Contains(p.body, "Theirs") {
		t.Error("the refused form names another organization's assistant")
	}
	wantStatus(t, "create without a token", br.do(http.MethodPost, "/ui/public-keys", url.Values{"assistantIds": {sales.ID}, "origins": {"https://www.example.com"}}), http.StatusForbidden)

	p = br.do(http.MethodPost, "/ui/public-keys", url.Values{"csrf": {token}, "name": {"Website widget"}, "assistantIds": {sales.ID}, "origins": {"https://WWW.example.com:443\n\nhttp://localhost:8080"}})
	wantStatus(t, "create", p, http.StatusSeeOther)
	loc := p.header.Get("Location")
	shown := br.get(loc)
	m := secretShown.FindStringSubmatch(shown.body)
	if m == nil {
		t.Fatalf("GET %s does not show the new key once", loc)
	}
	key := m[1]
	if again := br.get(loc); strings.Contains(again.body, key) {
		t.Error("the key is shown a second time on reload")
	}
	ks, _, err := b.st.ListPublicKeys(t.Context(), b.orgA, pageOne)
	if err != nil || len(ks) != 1 {
		t.Fatalf("stored publishable keys = %d, %v; want 1", len(ks), err)
	}
	k := ks[0]
	if !slices.Equal(k.Origins, []string{"https://www.example.com", "http://localhost:8080"}) || !slices.Equal(k.AssistantIDs, []string{sales.ID}) ||
		string(k.Hash) != string(auth.Hash(key)) {
		t.Errorf("stored key = %+v; want the normalized origins, Sales and the hash of the key shown", k)
	}
	list := br.get("/ui/public-keys")
	if !strings.Contains(list.body, `<a href="/ui/assistants/`+sales.ID+`">Sales line</a>`) || !strings.Contains(list.body, "https://www.example.com, http://localhost:8080") {
		t.Error("the listing does not name the key's assistant and origins")
	}

	other := b.signedIn(b.opB)
	if strings.Contains(other.get("/ui/public-keys").body, k.ID) {
		t.Error("B's page lists A's publishable key")
	}
	wantStatus(t, "B revokes A's key", other.do(http.MethodPost, "/ui/public-keys/"+k.ID+"/revoke", url.Values{"csrf": {other.csrf()}}), http.StatusNotFound)
	wantStatus(t, "revoke without a token", br.do(http.MethodPost, "/ui/public-keys/"+k.ID+"/revoke", url.Values{}), http.StatusForbidden)
	wantStatus(t, "revoke", br.do(http.MethodPost, "/ui/public-keys/"+k.ID+"/revoke", url.Values{"csrf": {token}}), http.StatusSeeOther)
	if got, err := b.st.GetPublicKey(t.Context(), k.ID); err != nil || got.RevokedAt.IsZero() {
		t.Errorf("after revoke: %+v, %v; want revoked", got, err)
	}
	wantStatus(t, "revoke a bad id", br.do(http.MethodPost, "/ui/public-keys/nope/revoke", url.Values{"csrf": {token}}), http.StatusNotFound)
}
