package ui

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
)

// formErrors is what a refused form shows: each error on the control it is
// about, the rest above the form. Errors are named as the domain names
// them ("model.provider", "flow.nodes.ask.branches[1].match", the REST
// API's names); a page's controls are named the same, so most go
// straight to their control.
type formErrors struct {
	// ByControl holds each control's messages.
	ByControl map[string][]string
	// ByField holds every message by the field the domain named.
	ByField map[string][]string
	// Other are the errors no control shows, with their field.
	Other []apperr.FieldError
	// Message is the error's own message ("2 fields are invalid", a
	// conflict's explanation).
	Message string
}

// Any reports whether there is an error to show.
func (f *formErrors) Any() bool { return f != nil && (f.Message != "" || len(f.ByField) > 0) }

// On is the messages of a control, joined ("" when none).
func (f *formErrors) On(control string) string {
	if f == nil {
		return ""
	}
	return strings.Join(f.ByControl[control], "; ")
}

// userError reports whether err is the user's to fix on the form (a bad
// field, a conflict, something named that is not there) rather than a
// failure of the server, and returns it as formErrors; control maps a
// field to the control that shows it ("" for none; nil: the field's own
// name is its control).
func userError(err error, control func(field string) (ctl, msgPrefix string)) (*formErrors, bool) {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return nil, false
	}
	switch e.Kind {
	case apperr.Invalid, apperr.Conflict, apperr.NotFound, apperr.TooLarge:
	default:
		return nil, false
	}
	f := &formErrors{ByControl: map[string][]string{}, ByField: map[string][]string{}, Message: e.Message}
	if len(e.Fields) > 0 && e.Kind == apperr.Invalid {
		f.Message = "Nothing was saved: correct the fields marked below."
	}
	for _, fe := range e.Fields {
		f.ByField[fe.Field] = append(f.ByField[fe.Field], fe.Message)
		ctl, prefix := fe.Field, ""
		if control != nil {
			ctl, prefix = control(fe.Field)
		}
		if ctl == "" {
			f.Other = append(f.Other, fe)
			continue
		}
		f.ByControl[ctl] = append(f.ByControl[ctl], prefix+fe.Message)
	}
	return f, true
}

// own reads the record the path's {id} names, of the operator's
// organization, with get (a store method); an id of the wrong kind, and
// another organization's record, are "no such what", exactly like one
// that does not exist.
func own[T any](r *request, prefix, what string, get func(ctx context.Context, orgID, id string) (T, error)) (T, error) {
	var zero T
	v := r.PathValue("id")
	if !id.Valid(prefix, v) {
		return zero, apperr.NotFoundf("no such %s", what)
	}
	t, err := get(r.Context(), r.op.OrgID, v)
	if apperr.Is(err, apperr.NotFound) {
		return zero, apperr.NotFoundf("no such %s", what)
	}
	return t, err
}

// revealed takes the secret a creation left for this page (?created=),
// once, and the id of what was created (?id=).
func (s *Server) revealed(r *request) (secret, what string) {
	t := r.URL.Query().Get("created")
	if t == "" {
		return "", ""
	}
	secret, ok := s.reveals.take(r.ses.TokenHash, t, s.cfg.Now())
	if !ok {
		return "", ""
	}
	return secret, r.URL.Query().Get("id")
}

// seeOther ends a successful POST: the browser gets the page anew (PRG),
// so a reload does not send the form twice.
func seeOther(w http.ResponseWriter, r *request, to string) error {
	http.Redirect(w, r.Request, to, http.StatusSeeOther)
	return nil
}

// confirmForm is a destructive action behind a confirmation: a button
// that opens a small form with the real one (no script needed).
type confirmForm struct {
	Label, Action, Question, CSRF string
	// Fields are hidden fields the action needs besides the token.
	Fields map[string]string
}

// Secrets shown once (a new API key, a webhook's signing secret) must
// survive the redirect that follows their creation but nothing more: the
// POST stores it here under a random token, the page it redirects to
// takes it out. Only the session that made it can take it, within
// revealTTL, and at most maxReveals wait at once (the oldest are dropped).
const (
	revealTTL  = 5 * time.Minute
	maxReveals = 256
)

type reveal struct {
	session string
	secret  string
	until   time.Time
}

// reveals holds secrets on their way to the one page that shows them.
type reveals struct {
	mu sync.Mutex
	m  map[string]reveal
}

// put keeps secret for session and returns the token that takes it.
func (v *reveals) put(session, secret string, now time.Time) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = map[string]reveal{}
	}
	for k, r := range v.m {
		if now.After(r.until) {
			delete(v.m, k)
		}
	}
	if len(v.m) >= maxReveals {
		keys := make([]string, 0, len(v.m))
		for k := range v.m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return v.m[keys[i]].until.Before(v.m[keys[j]].until) })
		for _, k := range keys[:len(keys)-maxReveals+1] {
			delete(v.m, k)
		}
	}
	token := id.Random(16)
	v.m[token] = reveal{session: session, secret: secret, until: now.Add(revealTTL)}
	return token
}

// take returns the secret kept under token for session, once.
func (v *reveals) take(session, token string, now time.Time) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.m[token]
	if !ok || r.session != session {
		return "", false
	}
	delete(v.m, token)
	return r.secret, !now.After(r.until)
}
