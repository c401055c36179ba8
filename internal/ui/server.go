// Package ui is the operator dashboard at /ui: server-rendered pages
// (html/template, embedded with the static files, no build step) for the
// people of an organization who sign in with an email and a password
// (internal/operator). It reads the store directly, scoped to the
// operator's organization; no API key reaches the browser.
//
// Every page is a row of the routes table (routes.go): the wrapper applies
// the security headers, the session (a signed-out GET is sent to the
// sign-in page) and, on every method but GET and HEAD, the same-origin
// check and the CSRF token, so a handler never does either itself.
package ui

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
	"switchboard/internal/call"
	"switchboard/internal/numbers"
	"switchboard/internal/operator"
	"switchboard/internal/store"
	"switchboard/internal/throttle"
	"switchboard/internal/webhook"
)

// Prefix is where the dashboard is mounted.
const Prefix = "/ui/"

// Defaults of Config.
const (
	DefaultIdleTimeout          = 12 * time.Hour
	DefaultMaxAge               = 7 * 24 * time.Hour
	DefaultMaxStreamsPerSession = 4
	DefaultMaxStreams           = 256
	DefaultPollEvery            = 2 * time.Second
	DefaultHeartbeatEvery       = 15 * time.Second
)

// Recordings opens a call's recording by the path stored on the call
// (recording.Archive); a missing one is NotFound.
type Recordings interface {
	Open(rel string) (*os.File, fs.FileInfo, error)
}

// Store is what the dashboard reads and writes: the aggregates of the
// store it uses.
type Store interface {
	store.Analyses
	store.Assistants
	store.Calls
	store.Connections
	store.Contacts
	store.Keys
	store.Operators
	store.Outbox
	store.Overviews
	store.PublicKeys
	store.Purchases
	store.Schedules
	store.Turns
	store.Webhooks
	store.AssistantRequests
}

// Config is what the dashboard needs.
type Config struct {
	Store Store
	// Assistants reads assistants' documents as the REST API does (the
	// configured providers, the tool URL guard). Default: the providers
	// every server has (assistant.DefaultProviders), no tool URL accepted.
	Assistants assistantjson.Config
	// Numbers buys and releases numbers and adds connections as the REST
	// API does (the same numbers.Service); nil shows the numbers and
	// connections but buys and connects nothing.
	Numbers *numbers.Service
	// Webhooks checks endpoints' URLs as the REST API does (the zero
	// Guard is the safe one).
	Webhooks webhook.Guard
	// Recordings serves calls' recordings; nil shows none.
	Recordings Recordings
	// StartWebCall creates a web call of an organization's assistant
	// (callctl's), for "Talk to this assistant": the page joins it with the
	// widget, holding no key. nil hides the button.
	StartWebCall func(ctx context.Context, orgID, assistantID string) (call.Call, error)
	// PlacePhoneCall places an outbound phone call from one of an
	// organization's numbers (purchaseID) to an E.164 number, with the
	// number's outbound assistant (callctl's, as POST
	// /v1/calls/phone/initiate), for "Place a test call". nil: the page
	// offers no phone call.
	PlacePhoneCall func(ctx context.Context, orgID, purchaseID, to string) (call.Call, error)
	// Refusals is the refusal budget the REST API and the gateway share
	// (throttle.Limiter); failed sign-ins spend it, and a client that has
	// spent it is answered 429 before its password is checked. nil: none.
	Refusals *throttle.Limiter
	// Proxies say which X-Forwarded-For to believe for the client address.
	Proxies throttle.Proxies
	// PublicURL is the server's public base URL: https makes the session
	// cookie Secure, and its origin is accepted by the same-origin check
	// (behind a proxy that rewrites Host).
	PublicURL string
	Log       *slog.Logger
	// IdleTimeout ends a session not used for that long; MaxAge ends it
	// regardless (defaults 12 h and 7 days).
	IdleTimeout time.Duration
	MaxAge      time.Duration
	// MaxStreamsPerSession and MaxStreams bound the live-update streams
	// (/ui/events) open at once, per session and in all.
	MaxStreamsPerSession int
	MaxStreams           int
	// PollEvery is how often a live-update stream looks at the live calls;
	// HeartbeatEvery how often it sends a comment to keep proxies from
	// closing it, and checks that its session still exists.
	PollEvery      time.Duration
	HeartbeatEvery time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Server is the dashboard's http.Handler.
type Server struct {
	cfg    Config
	st     Store
	log    *slog.Logger
	mux    *http.ServeMux
	pages  *pages
	secure bool   // cookies are Secure: the public URL is https
	origin string // the public URL's origin, scheme://host

	// done is closed by Close: live-update streams end.
	done      chan struct{}
	closeOnce sync.Once
	streams   streamCounter
	// reveals carries secrets shown once across their redirect.
	reveals reveals
}

// New returns the dashboard. It parses the embedded templates, so an error
// is a broken build.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("ui: Config.Store is required")
	}
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, DefaultIdleTimeout)
	cfg.MaxAge = cmp.Or(cfg.MaxAge, DefaultMaxAge)
	cfg.MaxStreamsPerSession = cmp.Or(cfg.MaxStreamsPerSession, DefaultMaxStreamsPerSession)
	cfg.MaxStreams = cmp.Or(cfg.MaxStreams, DefaultMaxStreams)
	cfg.PollEvery = cmp.Or(cfg.PollEvery, DefaultPollEvery)
	cfg.HeartbeatEvery = cmp.Or(cfg.HeartbeatEvery, DefaultHeartbeatEvery)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Assistants.Providers.Model) == 0 {
		cfg.Assistants.Providers = assistant.DefaultProviders()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, st: cfg.Store, log: cfg.Log, pages: p, done: make(chan struct{}),
		streams: streamCounter{bySession: map[string]int{}}}
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		s.secure = u.Scheme == "https"
		s.origin = u.Scheme + "://" + u.Host
	}
	s.mux = http.NewServeMux()
	for _, rt := range s.routes() {
		s.mux.Handle(rt.pattern, s.wrap(rt))
	}
	s.mux.Handle(Prefix, s.wrap(route{pattern: Prefix, public: true, h: func(http.ResponseWriter, *request) error {
		return apperr.NotFoundf("no such page")
	}}))
	return s, nil
}

// ServeHTTP serves everything under /ui/ (and /ui itself, redirected).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Close ends the live-update streams; http.Server.Shutdown does not cancel
// the requests it waits for, so the app calls this when it starts
// shutting down (http.Server.RegisterOnShutdown).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}

// csp is the Content-Security-Policy of every response: nothing but this
// origin's own files, no inline script or style, no framing, no <base>,
// forms posted only here.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

// request is an HTTP request with its signed-in operator (set on every
// route but the public ones).
type request struct {
	*http.Request
	op  operator.Operator
	ses operator.Session
	// csrf is the session's CSRF token, for forms (pageData.CSRF).
	csrf string
}

// handler serves one route; an error is rendered by status (errorStatus).
type handler func(w http.ResponseWriter, r *request) error

// route is one row of the routes table.
type route struct {
	// pattern is an http.ServeMux pattern with its method: "GET /ui/calls".
	pattern string
	// public routes are served without a session (sign-in, static files).
	public bool
	// maxForm bounds the form of a POST route (default maxFormBytes).
	maxForm int64
	// upload routes also take multipart/form-data (a file).
	upload bool
	h      handler
}

// wrap applies to a route what every route gets: the session unless it
// is public, then for a state-changing method the same-origin check and
// the CSRF token; and the error page.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		r := &request{Request: hr}
		unsafe := hr.Method != http.MethodGet && hr.Method != http.MethodHead
		if !rt.public {
			ok, err := s.signedIn(hr.Context(), w, r)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			if !ok {
				s.signInFirst(w, hr, unsafe)
				return
			}
			if unsafe {
				if err := s.checkForm(r, rt); err != nil {
					s.fail(w, r, err)
					return
				}
			}
		} else if unsafe && !sameOrigin(hr, s.origin) {
			s.fail(w, r, apperr.New(apperr.PermissionDenied, "this form must be sent from this site"))
			return
		}
		if err := rt.h(w, r); err != nil {
			s.fail(w, r, err)
		}
	})
}

// errorStatus is err's HTTP status (apperr's one table).
func errorStatus(err error) int { return apperr.HTTPStatus(err) }

// fail renders err as an error page: its message when it is classified,
// a generic one (and a log line) otherwise.
func (s *Server) fail(w http.ResponseWriter, r *request, err error) {
	status := errorStatus(err)
	msg := "Something went wrong on our side. Try again in a moment."
	var e *apperr.Error
	if errors.As(err, &e) && status != http.StatusInternalServerError {
		msg = e.Message
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", throttle.RetryAfter(e.RetryAfter))
		}
	} else {
		s.log.Error("dashboard request failed", "path", r.URL.Path, "org_id", r.op.OrgID, "err", err)
	}
	if strings.HasPrefix(r.URL.Path, Prefix+"static/") || r.Header.Get("Accept") == "text/event-stream" {
		http.Error(w, msg, status)
		return
	}
	s.render(w, r, status, view{Name: "error", Title: http.StatusText(status), Data: msg})
}

// RootRedirect answers GET / of a browser (Accept names text/html) with
// a redirect to the dashboard, and hands every other request to next (the
// REST API, whose answer to / is its JSON 404).
func RootRedirect(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if acceptsHTML(r.Header.Values("Accept")) {
			http.Redirect(w, r, Prefix, http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// acceptsHTML reports whether an Accept header names text/html with a
// quality above 0.
func acceptsHTML(values []string) bool {
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			media, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(media), "text/html") {
				continue
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(val, 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}
