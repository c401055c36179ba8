package ui

import (
	"net/http"
	"net/url"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
)

// maxKeyName bounds an API key's name.
const maxKeyName = 200

type keysPage struct {
	Keys   []keyRow
	Scopes []string
	Form   keyForm
	Errs   *formErrors
	// Secret is a key just created, shown this once.
	Secret, SecretID string
}

type keyRow struct {
	auth.Key
	Revoke *confirmForm
}

// keyForm is the "new key" form as filled in.
type keyForm struct {
	Name   string
	Scopes map[string]bool
}

func (s *Server) listKeys(w http.ResponseWriter, r *request) error {
	p := keysPage{Form: keyForm{Scopes: map[string]bool{}}}
	p.Secret, p.SecretID = s.revealed(r)
	return s.keysPage(w, r, http.StatusOK, p)
}

func (s *Server) keysPage(w http.ResponseWriter, r *request, status int, p keysPage) error {
	keys, err := s.st.ListKeys(r.Context(), r.op.OrgID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		row := keyRow{Key: k}
		if !k.Revoked() {
			row.Revoke = &confirmForm{Label: "Revoke", Action: "/ui/keys/" + url.PathEscape(k.ID) + "/revoke",
				Question: "Revoke " + k.Name + "? Requests with it are refused from now on; this cannot be undone."}
		}
		p.Keys = append(p.Keys, row)
	}
	p.Scopes = auth.AllScopes
	s.render(w, r, status, view{Name: "keys", Nav: "keys", Title: "API keys", Data: p})
	return nil
}

// createKey makes a key with the scopes ticked (checked as the CLI's
// --scopes are) and shows its secret once, after the redirect.
func (s *Server) createKey(w http.ResponseWriter, r *request) error {
	f := keyForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Scopes: map[string]bool{}}
	for _, sc := range r.PostForm["scopes"] {
		f.Scopes[sc] = true
	}
	var errs apperr.Fields
	if f.Name == "" {
		errs.Add("name", "is required: say what the key is for")
	} else if len(f.Name) > maxKeyName {
		errs.Add("name", "must be at most %d bytes", maxKeyName)
	}
	scopes, err := auth.ParseScopes(strings.Join(r.PostForm["scopes"], ","))
	if err != nil {
		errs.Add("scopes", "%s", err.Error())
	}
	if err := errs.Err(); err != nil {
		fe, _ := userError(err, nil)
		return s.keysPage(w, r, http.StatusBadRequest, keysPage{Form: f, Errs: fe})
	}
	k, secret := auth.NewKey(r.op.OrgID, f.Name, scopes, s.cfg.Now())
	if err := s.st.CreateKey(r.Context(), k); err != nil {
		return err
	}
	t := s.reveals.put(r.ses.TokenHash, secret, s.cfg.Now())
	return seeOther(w, r, "/ui/keys?created="+t+"&id="+url.QueryEscape(k.ID))
}

// revokeKey revokes a key of the operator's organization. Keys are
// looked up by id alone (it is how a request learns its organization), so
// the organization is checked here: another's key is not found.
func (s *Server) revokeKey(w http.ResponseWriter, r *request) error {
	k, err := s.st.GetKey(r.Context(), r.PathValue("id"))
	if apperr.Is(err, apperr.NotFound) || (err == nil && k.OrgID != r.op.OrgID) {
		return apperr.NotFoundf("no such key")
	}
	if err != nil {
		return err
	}
	if err := s.st.RevokeKey(r.Context(), k.ID, s.cfg.Now()); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/keys")
}
