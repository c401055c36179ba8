// Package gateway is the web-call gateway: the websocket endpoint through
// which a browser (or any websocket client) joins a web call, speaking
// protocol v1 (docs/gateway-protocol.md; the codec is package protocol).
//
// One connection is one session, and the socket is the call: the session
// claims the queued call before upgrading, hands itself to the call runtime
// (package callrun, through Runtime) as the call's telephony.Line, and when the socket
// closes for whatever reason the call ends. The runtime runs the
// conversation and, once the client turns audio on, the voice pipeline,
// exactly as for a phone line. A session owns two goroutines, both gone
// when ServeHTTP returns: a reader that turns client frames into what the
// line receives, and one writer that sends server events in seq order from
// a bounded queue.
package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/lifecycle"
	"switchboard/internal/telephony"
	"switchboard/internal/throttle"
)

// Store is the storage the gateway reads calls, assistants and
// publishable keys from.
type Store interface {
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	// GetPublicKey reads the publishable key that started a call
	// (call.Call.PublicKeyID), for the origins it allows.
	GetPublicKey(ctx context.Context, id string) (auth.PublicKey, error)
}

// Calls moves calls through their lifecycle (callctl.Service does).
type Calls interface {
	// Connect moves a queued web call to in-progress. It is how a session
	// claims its call, possibly against a session on another node, so it
	// must fail (an apperr.Conflict) or return the call in a status other
	// than in-progress when the call was not queued: a call returned
	// in-progress without error is taken to be this session's.
	Connect(ctx context.Context, callID string) (call.Call, error)
	// End ends a live call and returns the record as stored; when the call
	// had already ended it returns that record unchanged, without error.
	End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error)
}

// Config is what a Server needs. Store, Calls and Runtime are required.
type Config struct {
	Store Store
	Calls Calls
	// Runtime runs the sessions' calls (their conversations, and voice
	// pipelines once audio is on); the node's one runtime
	// (callrun.Runtime), shared with its phone lines, so that the API's
	// live call control reaches web calls too. Its Ended must be told of
	// every call's end (callctl's Ended hook).
	Runtime Runtime
	Log     *slog.Logger
	// Now is the clock of `at` and of the abuse rule; nil means time.Now.
	Now func() time.Time
	// WriteTimeout bounds one frame's write, a flush at the end of a
	// session, and the close handshake (default 10 s).
	WriteTimeout time.Duration
	// OutboundBuffer is how many server events may wait for the writer
	// (default 256). A client that lets it fill up is cut off (1008).
	OutboundBuffer int
	// Refusals is the budget of refused handshakes per client address
	// (shared with the REST API's failed key checks); a client that spent
	// it is answered 429 before any lookup. nil limits nothing.
	Refusals *throttle.Limiter
	// Proxies are the reverse proxies whose X-Forwarded-For names the client.
	Proxies throttle.Proxies
	// RefusalLogWindow is how long refusals are counted rather than logged
	// one by one (default throttle.DefaultSampleWindow).
	RefusalLogWindow time.Duration
}

// Runtime is what the gateway asks of the call runtime (callrun.Runtime):
// to run a session's call over the session, its telephony.Line, and to
// stop it early.
type Runtime interface {
	// Start runs call c over line and returns at once; false means the
	// runtime takes no more calls (it is stopping) and took nothing.
	Start(c call.Call, line telephony.Line) bool
	// Cancel stops live call callID's conversation now (system-shutdown,
	// unless the call has ended already). It does not block.
	Cancel(callID string)
}

// Defaults of Config.
const (
	DefaultWriteTimeout   = 10 * time.Second
	DefaultOutboundBuffer = 256
)

// ReasonSystemError is the endedReason (outcome failed) of a call whose
// session failed inside the server (a recovered panic).
const ReasonSystemError = call.ReasonSystemError

// connectTimeout bounds the call-state writes of the handshake (claim,
// end), which run without the request's context so that a client that goes
// away mid-claim cannot leave a call half claimed.
const connectTimeout = 10 * time.Second

// Server serves GET /new-web-call/connection. It is an http.Handler; the
// app mounts it at httpapi.GatewayPath outside the REST middleware (which
// cannot hijack) and calls Close before shutting the HTTP server down.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	draining atomic.Bool         // set by Drain: new connections are refused, live ones go on
	closed   bool                // set by Close: every conversation ends system-shutdown, new ones are refused
	sessions map[string]*session // by call id, from the claim until ServeHTTP returns
	wg       sync.WaitGroup      // one per claimed session
	stopped  chan struct{}       // made by Close; closed once every session has returned

	refusedLog *throttle.Sampler
	stats      struct{ sessions, overflows, abuse, panics atomic.Int64 }
	refusedMu  sync.Mutex
	refused    map[string]int64 // refusals by code
}

// New returns a Server ready to serve.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.OutboundBuffer <= 0 {
		cfg.OutboundBuffer = DefaultOutboundBuffer
	}
	return &Server{cfg: cfg, log: cfg.Log, sessions: map[string]*session{}, refused: map[string]int64{},
		refusedLog: throttle.NewSampler(cfg.Log, "gateway connections refused, not logged one by one", cfg.RefusalLogWindow)}
}

// Live is the number of sessions on this server: claimed or connected calls
// whose ServeHTTP has not returned.
func (s *Server) Live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Stats counts what the server has seen since New, for metrics.
type Stats struct {
	// Sessions is how many websocket sessions started.
	Sessions int64
	// Overflows is how many clients were cut off (1008) because they did
	// not read and the outbound buffer filled up.
	Overflows int64
	// Abuse is how many clients were closed with 4400.
	Abuse int64
	// Panics is how many panics were recovered (each failed its call).
	Panics int64
	// Refusals is how many handshakes were answered plain HTTP instead of
	// an upgrade, by error code (not_found, gone, conflict, rate_limited…).
	Refusals map[string]int64
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	s.refusedMu.Lock()
	refused := make(map[string]int64, len(s.refused))
	for k, v := range s.refused {
		refused[k] = v
	}
	s.refusedMu.Unlock()
	return Stats{
		Sessions:  s.stats.sessions.Load(),
		Overflows: s.stats.overflows.Load(),
		Abuse:     s.stats.abuse.Load(),
		Panics:    s.stats.panics.Load(),
		Refusals:  refused,
	}
}

// Close ends every live session's call with system-shutdown (call.ended,
// then close 1001) and waits for the sessions to finish. New connections are
// refused with 503 from the moment Close is called. If ctx ends first, the
// remaining connections are cut and Close returns ctx's error.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for _, ss := range s.sessions {
		ss.shutDown()
	}
	if s.stopped == nil {
		s.stopped = make(chan struct{})
		go func() {
			s.wg.Wait()
			close(s.stopped)
		}()
	}
	done := s.stopped
	s.mu.Unlock()
	defer s.refusedLog.Flush()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	for _, ss := range s.sessions {
		ss.cut()
	}
	s.mu.Unlock()
	return ctx.Err()
}

// Start does nothing: the gateway serves through the HTTP server, which
// starts after it is listed. It makes the gateway a lifecycle.Service.
func (s *Server) Start(context.Context) error { return nil }

// Stop is Close, for the shutdown's list: clients that do not answer the
// close handshake by ctx's deadline are cut, which is logged, not an
// error (they are gone either way). Stopped says when the sessions have
// all returned.
func (s *Server) Stop(ctx context.Context) error {
	began := time.Now()
	if err := s.Close(ctx); err != nil {
		s.log.Warn("web-call clients did not close their sockets in time and were cut", "err", err, "after", time.Since(began).String())
	}
	return nil
}

var _ lifecycle.Service = (*Server)(nil)

// Drain refuses new connections from now on (503 with Retry-After, the
// call left queued so that the client may join it through another node)
// and lets the live sessions go on until their calls end or Close.
func (s *Server) Drain() { s.draining.Store(true) }

// DrainRetryAfter is the Retry-After of a connection a draining (or
// closing) node refuses: by then the load balancer sends the client to
// another node.
const DrainRetryAfter = "2"

// draining is the refusal of a connection to a node that is draining or
// shutting down.
func draining() *refusal {
	return &refusal{status: http.StatusServiceUnavailable, code: "unavailable", expected: true,
		message: "this node is shutting down and takes no new calls; connect again (another node will take the call)",
		header:  http.Header{"Retry-After": {DrainRetryAfter}}}
}

// Stopped is closed once every session has returned, after Close: a
// session Close had to cut may still be recording its call's end, so the
// database must stay open until then. Nil before Close.
func (s *Server) Stopped() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// ServeHTTP admits a client to its call: it checks the call and the
// handshake, claims the call (queued → in-progress) and upgrades, then runs
// the session until the call has ended and the socket is closed. Refusals
// are plain HTTP with the API's error body and a request id (404, 409, 410;
// 429 for a client that has been refused too often; see the protocol
// document's "Connecting").
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := id.New(id.Request)
	w.Header().Set("X-Request-Id", reqID)
	// The refusal budget's admission takes a refusal before the lookups,
	// so a client's concurrent handshakes get no more lookups than it has
	// refusals left; refuse spends it or gives it back.
	h := incoming{reqID: reqID}
	if s.cfg.Refusals != nil {
		h.client = s.cfg.Proxies.Client(r)
		h.adm = s.cfg.Refusals.Admit(h.client)
		if h.adm.Blocked {
			s.refuse(w, r, h, tooManyRefusals(h.adm.Wait))
			return
		}
	}
	if s.draining.Load() {
		s.refuse(w, r, h, draining())
		return
	}
	c, _, ref := s.admit(r)
	if ref != nil {
		s.refuse(w, r, h, ref)
		return
	}
	ss, connCtx, ref := s.claim(r.Context(), c)
	if ref != nil {
		s.refuse(w, r, h, ref)
		return
	}
	s.cfg.Refusals.Done(h.adm, false) // admitted: a refusal taken in advance is given back
	defer s.release(ss)
	upgraded := false
	defer func() {
		// A panic between the claim and the session's own guards: the
		// call must not stay in progress with nobody on it.
		if p := recover(); p != nil {
			s.stats.panics.Add(1)
			ss.log.Error("panic in the gateway handshake", "request_id", reqID, "panic", p)
			if !upgraded {
				ss.endDirect(call.Failed, ReasonSystemError)
				writeRefusal(w, reqID, internalError(errors.New("panic")))
			}
		}
	}()

	hw := &hijackRecorder{ResponseWriter: w}
	// The URL is the credential and is meant for pages on other origins:
	// there is no cookie to protect, so the origin check is off.
	conn, err := websocket.Accept(hw, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		// Accept has answered the client. The call is claimed but no client
		// ever joined it: end it as the join timeout would have.
		ss.log.Warn("websocket upgrade failed after the claim; ending the call", "request_id", reqID, "err", err)
		ss.endDirect(call.Failed, call.ReasonClientNeverConnected)
		return
	}
	upgraded = true
	s.stats.sessions.Add(1)
	ss.serve(connCtx, conn, hw.conn)
}

// admit checks the call and the handshake without changing anything, so a
// refused client leaves the call as it was (a link preview's plain GET must
// not burn a call).
//
// A call that is not the caller's — an id that cannot be an id, an unknown
// one, a call of another assistant (so of any other organization), a phone
// call — is refused with the one answer of an unknown call, after at most
// the one lookup an unknown id costs: the gateway never tells which ids
// exist. Ids that cannot be ids are refused before any query.
func (s *Server) admit(r *http.Request) (call.Call, assistant.Assistant, *refusal) {
	if r.Method != http.MethodGet {
		return call.Call{}, assistant.Assistant{}, &refusal{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
			message: "the gateway takes GET (a websocket handshake), not " + r.Method}
	}
	q := r.URL.Query()
	callID, asstID := q.Get("call_id"), q.Get("assistant_id")
	if callID == "" || asstID == "" {
		return call.Call{}, assistant.Assistant{}, notFound("call_id and assistant_id are required query parameters; use gateway.url from POST /v1/calls/initiate")
	}
	if !id.Valid(id.Call, callID) || !id.Valid(id.Assistant, asstID) {
		return call.Call{}, assistant.Assistant{}, unknownCall(nil)
	}
	c, err := s.cfg.Store.GetCallAnyOrg(r.Context(), callID)
	if apperr.Is(err, apperr.NotFound) {
		return call.Call{}, assistant.Assistant{}, unknownCall(err)
	}
	if err != nil {
		return call.Call{}, assistant.Assistant{}, refusalFor(err)
	}
	if c.Type != call.Web || c.AssistantID != asstID {
		return call.Call{}, assistant.Assistant{}, unknownCall(nil)
	}
	if ref := s.checkOrigin(r, c); ref != nil {
		return c, assistant.Assistant{}, ref
	}
	if ref := statusRefusal(c); ref != nil {
		return c, assistant.Assistant{}, ref
	}
	a, err := s.cfg.Store.GetAssistant(r.Context(), c.OrgID, c.AssistantID)
	if apperr.Is(err, apperr.NotFound) {
		return c, a, notFound("assistant " + asstID + " of this call no longer exists")
	}
	if err != nil {
		return c, a, refusalFor(err)
	}
	return c, a, checkHandshake(r)
}

// checkOrigin admits a call started with a publishable key only from a
// page on one of that key's origins (the handshake's Origin header), so
// that a gateway URL a page received is of no use to a page elsewhere.
// A call started with a secret key is joined from anywhere: its URL is
// its credential. The key's origins are read as they are now, revoked
// or not: a call started before a revocation may still be joined (until
// the join timeout), as with a secret key.
func (s *Server) checkOrigin(r *http.Request, c call.Call) *refusal {
	if c.PublicKeyID == "" {
		return nil
	}
	k, err := s.cfg.Store.GetPublicKey(r.Context(), c.PublicKeyID)
	if err != nil && !apperr.Is(err, apperr.NotFound) {
		return refusalFor(err)
	}
	if err != nil || !k.AllowsOrigin(r.Header.Get("Origin")) {
		return &refusal{status: http.StatusForbidden, code: apperr.PermissionDenied.Code(), err: err,
			message: "this call was started with a publishable key: connect from a page on one of the key's origins"}
	}
	return nil
}

// statusRefusal refuses a call that is no longer queued.
func statusRefusal(c call.Call) *refusal {
	switch c.Status {
	case call.Queued:
		return nil
	case call.Ended:
		return &refusal{status: http.StatusGone, code: "gone",
			message: "call " + c.ID + " has ended; create a new call to talk again"}
	default:
		return conflict("call " + c.ID + " already has a client connected; a gateway URL admits one connection")
	}
}

// checkHandshake is the websocket library's request check, done before the
// claim so that a request that cannot be upgraded leaves the call queued.
func checkHandshake(r *http.Request) *refusal {
	if !headerHasToken(r.Header, "Connection", "upgrade") || !headerHasToken(r.Header, "Upgrade", "websocket") {
		return &refusal{status: http.StatusUpgradeRequired, code: "upgrade_required",
			message: "this URL is a websocket endpoint: open it with a websocket client (new WebSocket(url))",
			header:  http.Header{"Upgrade": {"websocket"}, "Connection": {"Upgrade"}}}
	}
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return &refusal{status: http.StatusBadRequest, code: "invalid_request",
			message: "Sec-WebSocket-Version must be 13", header: http.Header{"Sec-WebSocket-Version": {"13"}}}
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) != 1 {
		return &refusal{status: http.StatusBadRequest, code: "invalid_request", message: "exactly one Sec-WebSocket-Key is required"}
	}
	if k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); err != nil || len(k) != 16 {
		return &refusal{status: http.StatusBadRequest, code: "invalid_request", message: "Sec-WebSocket-Key must be 16 bytes in base64"}
	}
	return nil
}

func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// claim registers the session on this node (a second connection here is
// refused at once) and then claims the call in the store with Calls.Connect,
// which is what refuses a connection to a call another node has claimed.
// It returns the session's connection context (see newSession).
func (s *Server) claim(ctx context.Context, c call.Call) (*session, context.Context, *refusal) {
	s.mu.Lock()
	if s.closed || s.draining.Load() {
		s.mu.Unlock()
		return nil, nil, draining()
	}
	if _, taken := s.sessions[c.ID]; taken {
		s.mu.Unlock()
		return nil, nil, conflict("call " + c.ID + " already has a client connected; a gateway URL admits one connection")
	}
	ss, connCtx := newSession(s, c)
	s.sessions[c.ID] = ss
	s.wg.Add(1)
	s.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
	defer cancel()
	got, err := s.cfg.Calls.Connect(cctx, c.ID)
	var ref *refusal
	switch {
	case apperr.Is(err, apperr.NotFound):
		ref = unknownCall(err)
	case err != nil:
		ref = refusalFor(err)
	case got.Status != call.InProgress:
		ref = statusRefusal(got)
	default:
		ss.call = got
	}
	if ref != nil {
		s.release(ss)
		return nil, nil, ref
	}
	return ss, connCtx, nil
}

// release forgets a session once its ServeHTTP is done.
func (s *Server) release(ss *session) {
	s.mu.Lock()
	if s.sessions[ss.call.ID] == ss {
		delete(s.sessions, ss.call.ID)
	}
	s.mu.Unlock()
	s.wg.Done()
}

// incoming is what ServeHTTP knows of a handshake before it is answered.
type incoming struct {
	reqID  string
	client netip.Addr // parsed when the refusal budget is on
	adm    throttle.Admission
}

// refuse answers a handshake with plain HTTP. It counts the refusal by
// code, spends the client's refusal budget when the client is at fault
// (4xx other than the 429 itself) and gives back what admission took
// otherwise, and logs by sample: the first refusal of each code in a
// window in full, the rest as one count, so a flood of refused handshakes
// cannot fill the disk. A 5xx is logged at Error unless it is expected
// (the server shutting down).
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, h incoming, ref *refusal) {
	s.refusedMu.Lock()
	s.refused[ref.code]++
	s.refusedMu.Unlock()
	fault := ref.status >= 400 && ref.status < 500 && ref.status != http.StatusTooManyRequests
	s.cfg.Refusals.Done(h.adm, fault)
	if s.refusedLog.Sample(ref.code) {
		lvl := slog.LevelInfo
		if ref.status >= 500 && !ref.expected {
			lvl = slog.LevelError
		}
		client := h.client
		if s.cfg.Refusals == nil {
			client = s.cfg.Proxies.Client(r)
		}
		s.log.LogAttrs(r.Context(), lvl, "gateway connection refused", slog.String("request_id", h.reqID),
			slog.String("call_id", r.URL.Query().Get("call_id")), slog.String("client", client.String()),
			slog.Int("status", ref.status), slog.String("code", ref.code), slog.String("message", ref.message), slog.Any("err", ref.err))
	}
	writeRefusal(w, h.reqID, ref)
}
