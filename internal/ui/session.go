package ui

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/operator"
)

// CookieName is the session cookie. Its value is 32 random bytes,
// base64url; the store keeps only their SHA-256.
const CookieName = "sb_session"

// touchEvery is how stale a session's idle deadline may get before a
// request moves it: a page view writes to the database at most this often.
const touchEvery = time.Minute

// maxFormBytes bounds every form the dashboard accepts.
const maxFormBytes int64 = 16 << 10

// signedIn finds the request's live session and fills r.op, r.ses and
// r.csrf; ok is false when there is none. An ended session is deleted.
func (s *Server) signedIn(ctx context.Context, w http.ResponseWriter, r *request) (ok bool, err error) {
	c, err := r.Cookie(CookieName)
	if err != nil || len(c.Value) != 43 { // base64url of 32 bytes, unpadded
		return false, nil
	}
	hash := operator.HashToken(c.Value)
	ses, op, err := s.st.GetOperatorSession(ctx, hash)
	if apperr.Is(err, apperr.NotFound) {
		s.clearCookie(w)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	now := s.cfg.Now()
	if !ses.Live(now) {
		if err := s.st.DeleteOperatorSession(ctx, hash); err != nil && !apperr.Is(err, apperr.NotFound) {
			s.log.Warn("deleting an ended dashboard session failed", "org_id", ses.OrgID, "err", err)
		}
		s.clearCookie(w)
		return false, nil
	}
	if idle := now.Add(s.cfg.IdleTimeout); idle.Sub(ses.IdleUntil) > touchEvery {
		if err := s.st.TouchOperatorSession(ctx, hash, idle); err != nil {
			return false, err
		}
		ses.IdleUntil = idle
		ses.IdleUntil = ses.Ends()
	}
	r.op, r.ses, r.csrf = op, ses, csrfToken(c.Value)
	return true, nil
}

// csrfToken is the session's CSRF token: an HMAC of the session token, so
// it is stored nowhere, and knowing it (or the stored hash) gives no one
// the session.
func csrfToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte("switchboard dashboard csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// signInFirst answers a request without a session: a page is sent to the
// sign-in page (which comes back to it), anything else is a 401.
func (s *Server) signInFirst(w http.ResponseWriter, r *http.Request, unsafe bool) {
	if unsafe || r.Header.Get("Accept") == "text/event-stream" || strings.HasSuffix(r.URL.Path, "/recording") {
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// checkForm guards a state-changing request of a signed-in operator: it
// must come from this site (sameOrigin) and carry the session's CSRF
// token in the form field "csrf", compared in constant time.
func (s *Server) checkForm(r *request, rt route) error {
	if !sameOrigin(r.Request, s.origin) {
		return apperr.New(apperr.PermissionDenied, "this form must be sent from this site")
	}
	limit := cmp.Or(rt.maxForm, maxFormBytes)
	r.Body = http.MaxBytesReader(nil, r.Body, limit)
	var err error
	if rt.upload && strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		// All in memory: the body is bounded by limit, so no temporary files.
		err = r.ParseMultipartForm(limit)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return apperr.New(apperr.TooLarge, "the form is larger than %d KiB", limit>>10)
		}
		return apperr.New(apperr.Invalid, "the form could not be read")
	}
	got := r.PostForm.Get("csrf")
	if subtle.ConstantTimeCompare([]byte(got), []byte(r.csrf)) != 1 {
		return apperr.New(apperr.PermissionDenied, "the form has expired or did not come from this dashboard; reload the page and try again")
	}
	return nil
}

// sameOrigin reports whether a browser sent r from this site: by
// Sec-Fetch-Site when the browser sends it, else by Origin, else by
// Referer, whose host must be the request's Host (or the public URL's
// origin, behind a proxy that rewrites Host). A request with none of them
// is refused: every browser that can run the dashboard sends one.
func sameOrigin(r *http.Request, public string) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default: // cross-site, same-site (a sibling subdomain), none (typed in)
		return false
	}
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return false
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return false
	}
	if public != "" && u.Scheme+"://"+u.Host == public {
		return true
	}
	return u.Host == r.Host
}

func (s *Server) setCookie(w http.ResponseWriter, token string, expires time.Time) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: "/ui", Expires: expires,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

func (s *Server) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/ui", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
}

// loginForm is the sign-in page's data.
type loginForm struct {
	Email, Next, Error string
}

func (s *Server) loginPage(w http.ResponseWriter, r *request) error {
	s.render(w, r, http.StatusOK, view{Name: "login", Title: "Sign in", Data: loginForm{Next: safeNext(r.URL.Query().Get("next"))}})
	return nil
}

// errSignIn is the one answer to a wrong email or password: it does not
// say which.
const errSignIn = "The email or password is incorrect."

// login checks an email and password. A wrong one spends the client's
// refusal budget; a client that has spent it is answered 429 before the
// lookup. An unknown email costs the same bcrypt as a known one.
func (s *Server) login(w http.ResponseWriter, r *request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return apperr.New(apperr.Invalid, "the form could not be read")
	}
	form := loginForm{Email: r.PostForm.Get("email"), Next: safeNext(r.PostForm.Get("next"))}
	password := r.PostForm.Get("password")

	client := s.cfg.Proxies.Client(r.Request)
	adm := s.cfg.Refusals.Admit(client)
	if adm.Blocked {
		return &apperr.Error{Kind: apperr.RateLimited, RetryAfter: adm.Wait,
			Message: "Too many failed sign-ins from this address; wait a moment and try again."}
	}
	var hash []byte
	var op operator.Operator
	email, err := operator.NormalizeEmail(form.Email)
	if err == nil {
		op, err = s.st.GetOperatorByEmail(r.Context(), email)
		switch {
		case err == nil:
			hash = op.PasswordHash
		case !apperr.Is(err, apperr.NotFound):
			s.cfg.Refusals.Done(adm, false)
			return err
		}
	}
	good := operator.Verify(hash, password) // bcrypt either way
	s.cfg.Refusals.Done(adm, !good)
	if !good {
		s.log.Info("dashboard sign-in refused", "client", client.String())
		form.Error = errSignIn
		s.render(w, r, http.StatusUnauthorized, view{Name: "login", Title: "Sign in", Data: form})
		return nil
	}

	now := s.cfg.Now()
	if _, err := s.st.PurgeOperatorSessions(r.Context(), now); err != nil {
		s.log.Warn("purging ended dashboard sessions failed", "err", err)
	}
	token, err := newToken()
	if err != nil {
		return err
	}
	ses := operator.Session{TokenHash: operator.HashToken(token), OperatorID: op.ID, OrgID: op.OrgID, CreatedAt: now,
		IdleUntil: now.Add(s.cfg.IdleTimeout), ExpiresAt: now.Add(s.cfg.MaxAge)}
	ses.IdleUntil = ses.Ends()
	if err := s.st.CreateOperatorSession(r.Context(), ses); err != nil {
		return err
	}
	s.setCookie(w, token, ses.ExpiresAt)
	s.log.Info("dashboard sign-in", "org_id", op.OrgID, "operator_id", op.ID)
	http.Redirect(w, r.Request, cmpNext(form.Next), http.StatusSeeOther)
	return nil
}

// logout ends the session (the wrapper checked its CSRF token).
func (s *Server) logout(w http.ResponseWriter, r *request) error {
	if err := s.st.DeleteOperatorSession(r.Context(), r.ses.TokenHash); err != nil && !apperr.Is(err, apperr.NotFound) {
		return err
	}
	s.clearCookie(w)
	http.Redirect(w, r.Request, "/ui/login", http.StatusSeeOther)
	return nil
}

func newToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// safeNext keeps a sign-in's return path only when it is a page of the
// dashboard, so the sign-in page cannot send anyone elsewhere.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/ui/") || strings.HasPrefix(next, "/ui//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return ""
	}
	return next
}

func cmpNext(next string) string {
	if next == "" {
		return "/ui/overview"
	}
	return next
}
