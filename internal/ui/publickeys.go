package ui

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// maxPublicKeys is how many publishable keys the page lists (newest first).
const maxPublicKeys = 200

type publicKeysPage struct {
	Keys       []publicKeyRow
	Assistants []choice
	Form       publicKeyForm
	Errs       *formErrors
	// Secret is a key just created, shown this once.
	Secret, SecretID string
	Total            int
}

type publicKeyRow struct {
	auth.PublicKey
	// Names are its assistants' names, in order ("" for a deleted one).
	Names  []choice
	Revoke *confirmForm
}

// publicKeyForm is the "new publishable key" form as filled in.
type publicKeyForm struct {
	Name       string
	Assistants map[string]bool
	Origins    string // one a line
}

func (s *Server) listPublicKeys(w http.ResponseWriter, r *request) error {
	p := publicKeysPage{Form: publicKeyForm{Assistants: map[string]bool{}}}
	p.Secret, p.SecretID = s.revealed(r)
	return s.publicKeysPage(w, r, http.StatusOK, p)
}

func (s *Server) publicKeysPage(w http.ResponseWriter, r *request, status int, p publicKeysPage) error {
	ctx := r.Context()
	keys, total, err := s.st.ListPublicKeys(ctx, r.op.OrgID, store.Page{Page: 1, PageSize: maxPublicKeys})
	if err != nil {
		return err
	}
	as, _, err := s.st.ListAssistants(ctx, r.op.OrgID, store.Page{Page: 1, PageSize: maxAssistantChoices})
	if err != nil {
		return err
	}
	for _, a := range as {
		p.Assistants = append(p.Assistants, choice{a.ID, cmp.Or(a.Name, a.ID)})
	}
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.AssistantIDs...)
	}
	names, err := s.st.AssistantNames(ctx, r.op.OrgID, ids)
	if err != nil {
		return err
	}
	for _, k := range keys {
		row := publicKeyRow{PublicKey: k}
		for _, a := range k.AssistantIDs {
			row.Names = append(row.Names, choice{a, names[a]})
		}
		if k.RevokedAt.IsZero() {
			row.Revoke = &confirmForm{Label: "Revoke", Action: "/ui/public-keys/" + url.PathEscape(k.ID) + "/revoke",
				Question: "Revoke " + cmp.Or(k.Name, k.ID) + "? Widgets using it stop working now; this cannot be undone."}
		}
		p.Keys = append(p.Keys, row)
	}
	p.Total = total
	s.render(w, r, status, view{Name: "publickeys", Nav: "publickeys", Title: "Publishable keys", Data: p})
	return nil
}

// createPublicKey makes a publishable key for the assistants ticked and
// the origins listed, checked as POST /v1/public-keys checks them (the
// limits and origin rules of auth; the store refuses an assistant that
// is not the organization's), and shows it once, after the redirect.
func (s *Server) createPublicKey(w http.ResponseWriter, r *request) error {
	f := publicKeyForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Assistants: map[string]bool{}, Origins: r.PostForm.Get("origins")}
	var errs apperr.Fields
	if len(f.Name) > maxKeyName {
		errs.Add("name", "must be at most %d bytes", maxKeyName)
	}
	var assistants []string
	for _, a := range r.PostForm["assistantIds"] {
		if f.Assistants[a] {
			continue
		}
		f.Assistants[a] = true
		if !id.Valid(id.Assistant, a) {
			errs.Add("assistantIds", "assistant %s not found", a)
			continue
		}
		assistants = append(assistants, a)
	}
	checkCount(&errs, "assistantIds", len(assistants), auth.MaxPublicKeyAssistants, "tick at least one assistant the key may start calls of", "assistants")
	var origins []string
	for i, line := range strings.Split(f.Origins, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		norm, err := auth.NormalizeOrigin(line)
		if err != nil {
			errs.Add("origins", "line %d: %s", i+1, err.Error())
			continue
		}
		if slices.Contains(origins, norm) {
			errs.Add("origins", "line %d: repeats %s", i+1, norm)
			continue
		}
		origins = append(origins, norm)
	}
	checkCount(&errs, "origins", len(origins), auth.MaxPublicKeyOrigins, "list at least one origin (such as https://www.example.com) the widget runs on", "origins")
	refuse := func(err error) error {
		fe, ok := userError(err, nil)
		if !ok {
			return err
		}
		return s.publicKeysPage(w, r, http.StatusBadRequest, publicKeysPage{Form: f, Errs: fe})
	}
	if err := errs.Err(); err != nil {
		return refuse(err)
	}
	k, key := auth.NewPublicKey(r.op.OrgID, f.Name, assistants, origins, s.cfg.Now())
	if err := s.st.CreatePublicKey(r.Context(), k); err != nil {
		// Another organization's assistant: not found, on its control.
		var e *apperr.Error
		if errors.As(err, &e) && e.Kind == apperr.NotFound {
			return refuse(apperr.Invalidf("assistantIds", "%s", e.Message))
		}
		return err
	}
	t := s.reveals.put(r.ses.TokenHash, key, s.cfg.Now())
	return seeOther(w, r, "/ui/public-keys?created="+t+"&id="+url.QueryEscape(k.ID))
}

// revokePublicKey revokes one of the organization's publishable keys.
func (s *Server) revokePublicKey(w http.ResponseWriter, r *request) error {
	kid := r.PathValue("id")
	if !id.Valid(id.PublicKey, kid) {
		return apperr.NotFoundf("no such publishable key")
	}
	if _, err := s.st.RevokePublicKey(r.Context(), r.op.OrgID, kid, s.cfg.Now()); err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return apperr.NotFoundf("no such publishable key")
		}
		return fmt.Errorf("ui: revoke publishable key: %w", err)
	}
	return seeOther(w, r, "/ui/public-keys")
}

// checkCount adds field's error when a list kept n items: none (unless
// its items were refused already, none is the message empty), or more
// than most.
func checkCount(errs *apperr.Fields, field string, n, most int, empty, what string) {
	switch {
	case n == 0 && !errs.Has(field):
		errs.Add(field, "%s", empty)
	case n > most:
		errs.Add(field, "must list at most %d %s", most, what)
	}
}
