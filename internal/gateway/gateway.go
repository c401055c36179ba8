// Package gateway is the web-call gateway: the websocket endpoint through
// which a browser (or any websocket client) joins a web call, speaking
// protocol v1 (docs/gateway-protocol.md; the codec is package protocol).
//
// One connection is one session, and the socket is the call: the session
// claims the queued call before upgrading, runs the conversation engine,
// and when the socket closes for whatever reason the call ends. A session
// owns three goroutines, all gone when ServeHTTP returns: a reader that turns
// client frames into the conversation's inputs, the conversation, and one
// writer that sends server events in seq order from a bounded queue.
package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/voice"
)

// Brains makes the reply engine of a call's assistant (a flow or a model);
// the app provides it (conversation.Brains does).
type Brains interface {
	New(ctx context.Context, c call.Call, a assistant.Assistant) (conversation.Brain, error)
}

// Store is the storage the gateway reads calls and assistants from and the
// conversation writes transcript turns to.
type Store interface {
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)
	GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error)
	AppendTurn(ctx context.Context, t call.Turn) error
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

// Config is what a Server needs. Store, Calls and Brains are required.
type Config struct {
	Store  Store
	Calls  Calls
	Brains Brains
	// Voices gives audio sessions their speech engines; nil means this
	// server has none, and textOnly false is answered unsupported.
	Voices voice.Voices
	// VoiceObserver, when set, watches audio sessions (metrics).
	VoiceObserver voice.Observer
	Log           *slog.Logger
	// Now is the clock of `at` and of the abuse rule; nil means time.Now.
	Now func() time.Time
	// WriteTimeout bounds one frame's write, a flush at the end of a
	// session, and the close handshake (default 10 s).
	WriteTimeout time.Duration
	// OutboundBuffer is how many server events may wait for the writer
	// (default 256). A client that lets it fill up is cut off (1008).
	OutboundBuffer int
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
	cfg  Config
	log  *slog.Logger
	base context.Context // canceled by Close: every conversation ends system-shutdown
	stop context.CancelFunc

	mu       sync.Mutex
	closed   bool
	sessions map[string]*session // by call id, from the claim until ServeHTTP returns
	wg       sync.WaitGroup      // one per claimed session

	stats struct{ sessions, overflows, abuse, panics atomic.Int64 }
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
	base, stop := context.WithCancel(context.Background())
	return &Server{cfg: cfg, log: cfg.Log, base: base, stop: stop, sessions: map[string]*session{}}
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
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Sessions:  s.stats.sessions.Load(),
		Overflows: s.stats.overflows.Load(),
		Abuse:     s.stats.abuse.Load(),
		Panics:    s.stats.panics.Load(),
	}
}

// Close ends every live session's call with system-shutdown (call.ended,
// then close 1001) and waits for the sessions to finish. New connections are
// refused with 503 from the moment Close is called. If ctx ends first, the
// remaining connections are cut and Close returns ctx's error.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
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

// CallEnded tells the gateway that a call has ended, wherever that
// happened; wire it to callctl's Ended hook. A live session whose call was
// ended outside its own conversation (housekeeping, the API) stops at once:
// its client gets call.ended with the recorded outcome and reason, then
// close 4410. It does not block.
func (s *Server) CallEnded(c call.Call) {
	s.mu.Lock()
	ss := s.sessions[c.ID]
	s.mu.Unlock()
	if ss != nil && !ss.ending.Load() {
		ss.stopEngine()
	}
}

// ServeHTTP admits a client to its call: it checks the call and the
// handshake, claims the call (queued → in-progress) and upgrades, then runs
// the session until the call has ended and the socket is closed. Refusals
// are plain HTTP with the API's error body (404, 409, 410; see the protocol
// document's "Connecting").
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, a, ref := s.admit(r)
	if ref != nil {
		s.refuse(w, r, ref)
		return
	}
	ss, ref := s.claim(r.Context(), c, a)
	if ref != nil {
		s.refuse(w, r, ref)
		return
	}
	defer s.release(ss)
	upgraded := false
	defer func() {
		// A panic between the claim and the session's own guards: the
		// call must not stay in progress with nobody on it.
		if p := recover(); p != nil {
			s.stats.panics.Add(1)
			ss.log.Error("panic in the gateway handshake", "panic", p)
			if !upgraded {
				ss.endDirect(call.Failed, ReasonSystemError)
				writeRefusal(w, internalError(errors.New("panic")))
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
		ss.log.Warn("websocket upgrade failed after the claim; ending the call", "err", err)
		ss.endDirect(call.Failed, call.ReasonClientNeverConnected)
		return
	}
	upgraded = true
	s.stats.sessions.Add(1)
	ss.serve(conn, hw.conn)
}

// admit checks the call and the handshake without changing anything, so a
// refused client leaves the call as it was (a link preview's plain GET must
// not burn a call).
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
	c, err := s.cfg.Store.GetCallAnyOrg(r.Context(), callID)
	if err != nil {
		return call.Call{}, assistant.Assistant{}, refusalFor(err, "call "+callID+" not found")
	}
	switch {
	case c.Type != call.Web:
		return c, assistant.Assistant{}, notFound("call " + callID + " is not a web call")
	case c.AssistantID != asstID:
		return c, assistant.Assistant{}, notFound("call " + callID + " is not a call of assistant " + asstID)
	}
	if ref := statusRefusal(c); ref != nil {
		return c, assistant.Assistant{}, ref
	}
	a, err := s.cfg.Store.GetAssistant(r.Context(), c.OrgID, c.AssistantID)
	if err != nil {
		return c, a, refusalFor(err, "assistant "+asstID+" not found")
	}
	return c, a, checkHandshake(r)
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
func (s *Server) claim(ctx context.Context, c call.Call, a assistant.Assistant) (*session, *refusal) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, &refusal{status: http.StatusServiceUnavailable, code: "unavailable", message: "the server is shutting down"}
	}
	if _, taken := s.sessions[c.ID]; taken {
		s.mu.Unlock()
		return nil, conflict("call " + c.ID + " already has a client connected; a gateway URL admits one connection")
	}
	ss := newSession(s, c, a)
	s.sessions[c.ID] = ss
	s.wg.Add(1)
	s.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
	defer cancel()
	got, err := s.cfg.Calls.Connect(cctx, c.ID)
	ref := refusalFor(err, "call "+c.ID+" not found")
	if ref == nil {
		if got.Status != call.InProgress {
			ref = statusRefusal(got)
		}
		if ref == nil {
			ss.call = got
		}
	}
	if ref != nil {
		s.release(ss)
		return nil, ref
	}
	return ss, nil
}

// release forgets a session once its ServeHTTP is done.
func (s *Server) release(ss *session) {
	s.mu.Lock()
	if s.sessions[ss.call.ID] == ss {
		delete(s.sessions, ss.call.ID)
	}
	s.mu.Unlock()
	ss.stopEngine()
	s.wg.Done()
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, ref *refusal) {
	lvl := slog.LevelInfo
	if ref.status >= 500 {
		lvl = slog.LevelError
	}
	s.log.Log(r.Context(), lvl, "gateway connection refused", "call_id", r.URL.Query().Get("call_id"),
		"status", ref.status, "message", ref.message, "err", ref.err)
	writeRefusal(w, ref)
}
