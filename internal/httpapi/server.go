// Package httpapi is the REST API: routes, authentication, validation and
// the response envelope. Handlers return (response, error); one adapter turns
// errors into the error envelope through the table in respond.go.
package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/netip"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/callctl"
	"switchboard/internal/campaign"
	"switchboard/internal/id"
	"switchboard/internal/lifecycle"
	"switchboard/internal/numbers"
	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/throttle"
	"switchboard/internal/webhook"
)

// MaxBody is the largest request body accepted.
const MaxBody = 1 << 20

// Config is what the API needs to know about its deployment.
type Config struct {
	// PublicURL is the contract's {base_url}; the websocket base is derived from it.
	PublicURL string
	// RateLimit is requests per second per key (burst twice that); 0 disables.
	RateLimit float64
	// PublicKeyRate is requests a minute per publishable key (burst as
	// many); 0 disables.
	PublicKeyRate float64
	// PublicAddressRate is requests a minute with publishable keys per
	// client address (an IPv4 address, an IPv6 /64; burst as many); 0
	// disables.
	PublicAddressRate float64
	Providers         assistant.Providers
	// Webhooks checks endpoint URLs (private addresses refused unless allowed).
	Webhooks webhook.Guard
	// Refusals is the budget of failed API key checks per client address
	// (shared with the gateway's refused handshakes); nil limits nothing.
	Refusals *throttle.Limiter
	// Proxies are the reverse proxies whose X-Forwarded-For names the client.
	Proxies throttle.Proxies
	// Secrets seals the passwords of phone connections; nil refuses
	// connections with a password (503).
	Secrets *secret.Sealer
	// Live reaches the live calls (end, say, transfer) on whichever node
	// holds their line (cluster.Node; the call runtime alone on one
	// node); nil answers those routes 503.
	Live LiveCalls
	// Recordings opens calls' recordings (recording.Archive); nil answers
	// GET /v1/calls/{id}/recording 404.
	Recordings Recordings
	// Twilio acts in organizations' Twilio accounts (connections, numbers);
	// nil answers Twilio connections and numbers 503.
	Twilio TwilioAccounts
	// Sandbox has a sandbox persona call one of the organization's
	// sandbox numbers (sandbox.Network.CallIn); nil answers 503.
	Sandbox SandboxCaller
}

// SandboxCaller simulates an inbound call on the sandbox network.
type SandboxCaller interface {
	CallIn(ctx context.Context, orgID, from, to string) (callID string, err error)
}

// Recordings opens a call's recording by the path stored on the call; a
// missing one is NotFound.
type Recordings interface {
	Open(rel string) (*os.File, fs.FileInfo, error)
}

// Store is what the REST API reads and writes: the aggregates of the
// store it uses.
type Store interface {
	store.Orgs
	store.Keys
	store.PublicKeys
	store.Assistants
	store.Purchases
	store.Connections
	store.Contacts
	store.Calls
	store.DoNotCall
	store.Schedules
	store.Turns
	store.Analyses
	store.Webhooks
	store.AssistantRequests
	store.Outbox
	store.Idempotency
	store.RateLimits
}

// Server serves the REST API.
type Server struct {
	cfg     Config
	store   Store
	calls   *callctl.Service
	numbers *numbers.Service
	sched   *campaign.Service
	log     *slog.Logger
	now     func() time.Time
	routes  []route
	mux     *http.ServeMux
	// keyLimiters limits each key, secret or publishable (ratelimit.go:
	// shared by the nodes on PostgreSQL), pubAddrs each client address
	// using publishable keys (cors.go).
	keyLimiters rateLimits
	pubAddrs    *throttle.Limiter
	used        *usage
	openapi     []byte // the OpenAPI document as served (openapi.go)
	// accepted holds every key that passed authentication here (key id →
	// *auth.Key or *auth.PublicKey, with its stored hash): a client over
	// its refusal budget can still use such a key. Only keys that exist
	// get in.
	accepted sync.Map
	// refusedLog samples the log lines of refused authentications.
	refusedLog *throttle.Sampler
	// listener serves listener endpoints' streams, which streams tracks
	// (webhooks.go).
	listener *webhook.Listener
	streams  *streams

	reqs    *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

// New builds the API. reg receives the request metrics.
func New(cfg Config, st Store, calls *callctl.Service, sched *campaign.Service, log *slog.Logger, reg prometheus.Registerer) *Server {
	s := &Server{
		cfg: cfg, store: st, calls: calls, sched: sched, log: log, now: id.Now,
		used: newUsage(st, log), openapi: servedOpenAPI(cfg.PublicURL),
		listener: &webhook.Listener{Store: st, Log: log.With("component", "webhooks")}, streams: newStreams(),
		refusedLog: throttle.NewSampler(log, "requests refused for their API key, not logged one by one", 0),
		reqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "switchboard_http_request_duration_seconds", Help: "HTTP request latency by route.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route"}),
	}
	if reg != nil {
		reg.MustRegister(s.reqs, s.latency)
	}
	// The address limit of publishable keys is a throttle.Limiter spent by
	// every request (not only refused ones): its memory is bounded however
	// many addresses call.
	s.keyLimiters.secret = newKeyLimits(cfg.RateLimit, 2*cfg.RateLimit)
	s.keyLimiters.public = newKeyLimits(cfg.PublicKeyRate/60, cfg.PublicKeyRate)
	s.pubAddrs = throttle.NewLimiter(throttle.LimiterConfig{Rate: cfg.PublicAddressRate / 60, Burst: int(cfg.PublicAddressRate)})
	s.numbers = &numbers.Service{Store: st, Providers: calls, Twilio: cfg.Twilio, Secrets: cfg.Secrets, Log: log,
		Now: func() time.Time { return s.now() }}
	s.routes = s.table()
	s.mux = http.NewServeMux()
	byPath := map[string][]route{}
	var order []string
	for _, rt := range s.routes {
		if _, ok := byPath[rt.path]; !ok {
			order = append(order, rt.path)
		}
		byPath[rt.path] = append(byPath[rt.path], rt)
	}
	for _, p := range order {
		s.mux.Handle(p, s.dispatch(p, byPath[p]))
	}
	s.mux.Handle("/", s.plain("unknown", func(w http.ResponseWriter, r *http.Request, reqID string) string {
		st, body, h := errorResponse(apperr.NotFoundf("no such endpoint: %s %s", r.Method, r.URL.Path), reqID, s.log)
		writeRaw(w, st, body, h)
		return ""
	}))
	return s
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Close ends the webhook listeners' streams (their clients reconnect
// elsewhere) and waits for them, then flushes key usage times and the
// count of refused requests.
func (s *Server) Close() {
	s.streams.close()
	s.used.flush(context.Background())
	s.refusedLog.Flush()
}

// Start does nothing: the API serves through the HTTP server. It makes
// the Server a lifecycle.Service, stopped last (Stop: Close).
func (s *Server) Start(context.Context) error { return nil }

// Stop is Close: once nothing serves requests any more, the listener
// streams end and the key usage is flushed.
func (s *Server) Stop(context.Context) error {
	s.Close()
	return nil
}

var _ lifecycle.Service = (*Server)(nil)

// FlushUsage writes pending lastUsedAt updates (called periodically).
func (s *Server) FlushUsage(ctx context.Context) { s.used.flush(ctx) }

// Routes lists method and path of every route, for the OpenAPI check.
func (s *Server) Routes() [][2]string {
	out := make([][2]string, len(s.routes))
	for i, r := range s.routes {
		out[i] = [2]string{r.method, r.path}
	}
	return out
}

// bodyKind says what body a route takes.
type bodyKind int

const (
	noBody bodyKind = iota
	jsonBody
	jsonOrCSVBody
	optionalJSONBody
)

// route is one operation of the API.
type route struct {
	method string
	path   string // ServeMux pattern without the method
	scope  string // "" for public routes
	body   bodyKind
	// create marks POSTs that create something: Idempotency-Key applies.
	create bool
	// publishable marks the routes a publishable key (pk_…) may use; they
	// answer CORS preflights and carry CORS headers for its origins (cors.go).
	publishable bool
	// secretBody marks bodies that may hold a secret: their Idempotency-Key
	// record keeps a keyed digest of the request, not a plain hash.
	secretBody bool
	h          func(ctx context.Context, r *request) (response, error)
}

// request is what a handler sees.
type request struct {
	*http.Request
	orgID string
	key   *auth.Key
	// pub is the publishable key of the request, when it used one (then
	// key is nil).
	pub *auth.PublicKey
	// cors is the Origin the answer is for, once a publishable key has
	// been accepted from it: every answer from then on carries its CORS
	// headers, errors included.
	cors string
	body []byte
	csv  bool
	id   string
	// refusal says why authentication refused the request (missing_key,
	// invalid_key, revoked_key, throttled); such requests are logged by
	// sample (Server.refusedLog).
	refusal string
	// client is the client's address, parsed once: when the refusal
	// budget is on, or when the request was refused (for the log).
	client netip.Addr
	// stream is a handler's response that writes itself (response.stream).
	stream func(w http.ResponseWriter, r *http.Request)
}

// plain wraps a handler with request ids, logging, metrics and panic
// recovery; h returns the organization id for the log, if it learned one.
func (s *Server) plain(name string, h func(w http.ResponseWriter, r *http.Request, reqID string) string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqID := id.New(id.Request)
		sw := &statusWriter{ResponseWriter: w, status: 200}
		start := time.Now()
		orgID := ""
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic", "request_id", reqID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				st, body, hd := errorResponse(errors.New("panic"), reqID, s.log)
				writeRaw(sw, st, body, hd)
			}
			s.observe(name, r, sw.status, start, reqID, orgID, sw.refusal, sw.client)
		}()
		sw.Header().Set("X-Request-Id", reqID)
		orgID = h(sw, r, reqID)
	})
}

// observe counts and logs a request. A request refused by authentication
// is logged only as the first of its kind in a window, with its client;
// the others are counted in one line (an unauthenticated flood must not
// fill the disk).
func (s *Server) observe(route string, r *http.Request, status int, start time.Time, reqID, orgID, refusal string, client netip.Addr) {
	d := time.Since(start)
	s.reqs.WithLabelValues(route, r.Method, fmt.Sprint(status)).Inc()
	s.latency.WithLabelValues(route).Observe(d.Seconds())
	if refusal != "" && !s.refusedLog.Sample(refusal) {
		return
	}
	lvl := slog.LevelInfo
	if status >= 500 {
		lvl = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("request_id", reqID), slog.String("org_id", orgID), slog.String("method", r.Method),
		slog.String("route", route), slog.String("path", r.URL.Path), slog.Int("status", status),
		slog.Duration("duration", d)}
	if refusal != "" {
		attrs = append(attrs, slog.String("refusal", refusal), slog.String("client", client.String()))
	}
	s.log.LogAttrs(r.Context(), lvl, "request", attrs...)
}

type statusWriter struct {
	http.ResponseWriter
	status  int
	refusal string     // why authentication refused the request, if it did
	client  netip.Addr // set with refusal
}

// Unwrap lets http.ResponseController reach the connection (a
// websocket's hijack).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// dispatch picks the route for the method (405 otherwise) and runs the pipeline:
// auth → scope → rate limit → body → idempotency → handler → envelope.
func (s *Server) dispatch(path string, rs []route) http.Handler {
	var allow []string
	for _, rt := range rs {
		allow = append(allow, rt.method)
	}
	allowed := strings.Join(allow, ", ")
	publishable := hasPublishable(rs)
	return s.plain(path, func(w http.ResponseWriter, r *http.Request, reqID string) string {
		var rt *route
		for i := range rs {
			if rs[i].method == r.Method {
				rt = &rs[i]
			}
		}
		req := &request{Request: r, id: reqID}
		var status int
		var body []byte
		var h http.Header
		if rt == nil && r.Method == http.MethodOptions && publishable {
			status, body, h = s.preflight(r.Context(), req)
		} else {
			status, body, h = s.run(rt, req, allowed)
		}
		if rt == nil && status != http.StatusNoContent {
			h.Set("Allow", allowed)
		}
		if req.cors != "" {
			allowOrigin(h, req.cors)
		}
		if sw, ok := w.(*statusWriter); ok {
			sw.refusal, sw.client = req.refusal, req.client
		}
		if req.stream != nil {
			req.stream(w, r)
			return req.orgID
		}
		if status == http.StatusNoContent {
			for k, v := range h {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			return req.orgID
		}
		writeRaw(w, status, body, h)
		return req.orgID
	})
}

func (s *Server) run(rt *route, req *request, allowed string) (int, []byte, http.Header) {
	fail := func(err error) (int, []byte, http.Header) { return errorResponse(err, req.id, s.log) }
	if rt == nil {
		return fail(apperr.New(apperr.MethodNotAllowed, "method %s is not allowed here; allowed: %s", req.Method, allowed))
	}
	ctx := req.Context()
	if rt.scope != "" {
		if err := s.authenticate(ctx, req, rt); err != nil {
			return fail(err)
		}
	}
	if err := s.readBody(req, rt.body); err != nil {
		return fail(err)
	}
	if rt.create && req.Header.Get("Idempotency-Key") != "" {
		return s.idempotent(ctx, rt, req)
	}
	return s.call(ctx, rt, req)
}

// call runs the handler and renders its result.
func (s *Server) call(ctx context.Context, rt *route, req *request) (int, []byte, http.Header) {
	resp, err := rt.h(ctx, req)
	if err != nil {
		return errorResponse(err, req.id, s.log)
	}
	if resp.raw != nil {
		return resp.status, resp.raw, http.Header{}
	}
	if resp.stream != nil {
		req.stream = resp.stream
		return resp.status, nil, http.Header{}
	}
	resp.body.RequestID = req.id
	size := 1024
	if calls, ok := resp.body.Data.([]callView); ok {
		size += 480 * len(calls)
	}
	b, err := resp.body.appendJSON(make([]byte, 0, size))
	if err != nil {
		return errorResponse(err, req.id, s.log)
	}
	return resp.status, b, http.Header{}
}

// authenticate checks the API key, then its scope and rate limit. A
// request whose key check fails spends its client's refusal budget; a
// client that has spent it is answered 429 before its key is looked up
// (a flood costs no query), unless it presents a key that has passed here
// before, so good keys behind the same address keep working. Admission
// takes the refusal before the lookup (throttle.Limiter.Admit), so a
// client's concurrent requests get no more lookups than it has refusals
// left; the request gives it back if its key passes.
//
// A publishable key (pk_…) is checked the same way, then admitPublic
// decides what it may do (cors.go); it holds no scopes.
func (s *Server) authenticate(ctx context.Context, req *request, rt *route) error {
	scope := rt.scope
	presented := req.Header.Get("X-API-Key")
	var adm throttle.Admission
	if s.cfg.Refusals != nil {
		req.client = s.cfg.Proxies.Client(req.Request)
		adm = s.cfg.Refusals.Admit(req.client)
		if adm.Blocked && !s.wasAccepted(presented) {
			req.refusal = "throttled"
			return &apperr.Error{Kind: apperr.RateLimited, RetryAfter: adm.Wait,
				Message: "too many requests from this address failed authentication; retry later"}
		}
	}
	if auth.IsPublicKey(presented) {
		k, err := s.identifyPublic(ctx, req, presented)
		s.refused(req, adm)
		if err != nil {
			return err
		}
		return s.admitPublic(req, rt, k)
	}
	k, err := s.identify(ctx, req, presented)
	s.refused(req, adm)
	if err != nil {
		return err
	}
	req.orgID, req.key = k.OrgID, &k
	s.used.touch(k.ID, s.now())
	if !k.Has(scope) {
		return apperr.New(apperr.PermissionDenied, "API key lacks the %s scope", scope)
	}
	if l := s.keyLimiters.secret; l != nil {
		if ok, wait := l.allow(k.ID, s.now()); !ok {
			return &apperr.Error{Kind: apperr.RateLimited, Message: fmt.Sprintf("rate limit of %g requests per second exceeded; retry later", s.cfg.RateLimit), RetryAfter: wait}
		}
	}
	return nil
}

// identify finds the key presented; when it is refused, req.refusal says
// why. A string not shaped like a key (auth.LookupID: a lookup part no key
// can have, such as NUL or invalid UTF-8) is refused before any query.
func (s *Server) identify(ctx context.Context, req *request, presented string) (auth.Key, error) {
	if presented == "" {
		req.refusal = "missing_key"
		return auth.Key{}, apperr.New(apperr.Unauthenticated, "missing API key: send it in the X-API-Key header")
	}
	invalid := apperr.New(apperr.Unauthenticated, "invalid API key")
	kid := auth.LookupID(presented)
	if kid == "" {
		req.refusal = "invalid_key"
		return auth.Key{}, invalid
	}
	k, err := s.store.GetKey(ctx, kid)
	if apperr.Is(err, apperr.NotFound) || err == nil && !k.Matches(presented) {
		req.refusal = "invalid_key"
		return auth.Key{}, invalid
	}
	if err != nil {
		return auth.Key{}, err
	}
	if k.Revoked() {
		s.accepted.Delete(k.ID)
		req.refusal = "revoked_key"
		return auth.Key{}, apperr.New(apperr.Unauthenticated, "API key was revoked")
	}
	if _, ok := s.accepted.Load(k.ID); !ok {
		kept := k // a copy, allocated only here: k stays on the stack
		s.accepted.Store(k.ID, &kept)
	}
	return k, nil
}

// refused settles the request's admission into the refusal budget once
// its key is known to pass or not.
func (s *Server) refused(req *request, adm throttle.Admission) {
	if s.cfg.Refusals != nil {
		s.cfg.Refusals.Done(adm, req.refusal != "")
	} else if req.refusal != "" {
		req.client = s.cfg.Proxies.Client(req.Request) // for the log line
	}
}

// identifyPublic finds the publishable key presented, as identify does a
// secret key.
func (s *Server) identifyPublic(ctx context.Context, req *request, presented string) (auth.PublicKey, error) {
	invalid := apperr.New(apperr.Unauthenticated, "invalid API key")
	kid := auth.PublicLookupID(presented)
	if kid == "" {
		req.refusal = "invalid_key"
		return auth.PublicKey{}, invalid
	}
	k, err := s.store.GetPublicKey(ctx, kid)
	if apperr.Is(err, apperr.NotFound) || err == nil && !k.Matches(presented) {
		req.refusal = "invalid_key"
		return auth.PublicKey{}, invalid
	}
	if err != nil {
		return auth.PublicKey{}, err
	}
	if k.Revoked() {
		s.accepted.Delete(k.ID)
		req.refusal = "revoked_key"
		return auth.PublicKey{}, apperr.New(apperr.Unauthenticated, "API key was revoked")
	}
	if _, ok := s.accepted.Load(k.ID); !ok {
		kept := k
		s.accepted.Store(k.ID, &kept)
	}
	return k, nil
}

// wasAccepted reports whether presented is a key that passed here before
// (and was not seen revoked since).
func (s *Server) wasAccepted(presented string) bool {
	kid := auth.LookupID(presented)
	if auth.IsPublicKey(presented) {
		kid = auth.PublicLookupID(presented)
	}
	if kid == "" {
		return false
	}
	v, ok := s.accepted.Load(kid)
	if !ok {
		return false
	}
	switch k := v.(type) {
	case *auth.Key:
		return k.Matches(presented)
	case *auth.PublicKey:
		return k.Matches(presented)
	}
	return false
}

func (s *Server) readBody(req *request, kind bodyKind) error {
	if kind == noBody {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, req.Body, MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apperr.New(apperr.TooLarge, "request body is larger than %d bytes", MaxBody)
		}
		return apperr.Wrap(apperr.Invalid, err, "could not read request body")
	}
	req.body = b
	if len(b) == 0 && kind == optionalJSONBody {
		return nil
	}
	ct := req.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case mt == "application/json":
	case mt == "text/csv" && kind == jsonOrCSVBody:
		req.csv = true
	default:
		want := "application/json"
		if kind == jsonOrCSVBody {
			want += " or text/csv"
		}
		if ct == "" {
			return apperr.New(apperr.UnsupportedMediaType, "missing Content-Type: send %s", want)
		}
		return apperr.New(apperr.UnsupportedMediaType, "unsupported Content-Type %q: send %s", ct, want)
	}
	return nil
}

// idempotent replays the stored response of an earlier request with the
// same Idempotency-Key, or runs the request and stores its response.
func (s *Server) idempotent(ctx context.Context, rt *route, req *request) (int, []byte, http.Header) {
	key := req.Header.Get("Idempotency-Key")
	if len(key) > 255 || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return errorResponse(apperr.Invalidf("Idempotency-Key", "must be at most 255 printable ASCII characters"), req.id, s.log)
	}
	request := append([]byte(rt.method+" "+req.URL.Path+"?"+req.URL.RawQuery+"\n"), req.body...)
	if req.pub != nil {
		// A publishable key's requests are its own: the same key and body
		// from another key of the organization is a different request
		// (409), never a replay of a call this key may not have started.
		request = append([]byte("publishable "+req.pub.ID+"\n"), request...)
	}
	var hash string
	if rt.secretBody && s.cfg.Secrets != nil {
		// The body holds a secret (a password): a plain hash kept in the
		// database would let its copy test guesses.
		hash = "k1:" + hex.EncodeToString(s.cfg.Secrets.Digest(request))
	} else {
		sum := sha256.Sum256(request)
		hash = hex.EncodeToString(sum[:])
	}
	now := s.now()
	for range 2 {
		prev, err := s.store.ReserveIdempotency(ctx, req.orgID, key, hash, now)
		if err != nil {
			return errorResponse(err, req.id, s.log)
		}
		if prev == nil {
			break
		}
		stale := prev.CreatedAt.Before(now.Add(-24 * time.Hour))
		inflightDead := prev.Status == 0 && prev.CreatedAt.Before(now.Add(-time.Minute))
		if stale || inflightDead {
			if err := s.store.ReleaseIdempotency(ctx, req.orgID, key); err != nil {
				return errorResponse(err, req.id, s.log)
			}
			continue
		}
		if prev.RequestHash != hash {
			return errorResponse(&apperr.Error{Kind: apperr.Conflict, Code: "idempotency_key_reused",
				Message: "Idempotency-Key was already used with a different request"}, req.id, s.log)
		}
		if prev.Status == 0 {
			return errorResponse(&apperr.Error{Kind: apperr.Conflict, Code: "idempotency_request_in_progress",
				Message: "a request with this Idempotency-Key is still being handled; retry shortly"}, req.id, s.log)
		}
		h := http.Header{}
		h.Set("Idempotent-Replayed", "true")
		return prev.Status, prev.Body, h
	}
	status, body, h := s.call(ctx, rt, req)
	bg := context.WithoutCancel(ctx)
	if status >= 500 {
		_ = s.store.ReleaseIdempotency(bg, req.orgID, key)
	} else if err := s.store.CompleteIdempotency(bg, req.orgID, key, status, body); err != nil {
		s.log.Error("storing idempotent response failed", "request_id", req.id, "err", err)
	}
	return status, body, h
}

// usage batches lastUsedAt updates: at most one write per key per minute.
type usage struct {
	st      store.Keys
	log     *slog.Logger
	mu      sync.Mutex
	pending map[string]time.Time
	written map[string]time.Time
}

func newUsage(st store.Keys, log *slog.Logger) *usage {
	return &usage{st: st, log: log, pending: map[string]time.Time{}, written: map[string]time.Time{}}
}

func (u *usage) touch(keyID string, at time.Time) {
	u.mu.Lock()
	if at.Sub(u.written[keyID]) >= time.Minute {
		u.pending[keyID] = at
	}
	u.mu.Unlock()
}

func (u *usage) flush(ctx context.Context) {
	u.mu.Lock()
	batch := u.pending
	u.pending = map[string]time.Time{}
	for k, t := range batch {
		u.written[k] = t
	}
	u.mu.Unlock()
	if err := u.st.TouchKeys(ctx, batch); err != nil {
		u.log.Warn("recording key use failed", "err", err)
	}
}
