package httpapi

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/apperr"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/webhook"
)

type webhookView struct {
	ID string `json:"id"`
	// Kind is "http" (deliveries POSTed to URL) or "listener" (streamed to
	// `switchboard webhooks listen`; no URL).
	Kind      string   `json:"kind"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt ts       `json:"createdAt"`
	// ExpiresAt is when a listener no stream renews is deleted; null for
	// an HTTP endpoint.
	ExpiresAt ts `json:"expiresAt"`
	// Secret is shown once, when the endpoint is created or its secret rotated.
	Secret string `json:"secret,omitempty"`
}

func viewWebhook(w store.Webhook) webhookView {
	return webhookView{ID: w.ID, Kind: cmp.Or(w.Kind, store.WebhookHTTP), URL: w.URL, Events: w.Events, CreatedAt: ts(w.CreatedAt), ExpiresAt: ts(w.ExpiresAt)}
}

func (s *Server) createWebhook(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	w := store.Webhook{ID: id.New(id.Webhook), OrgID: r.orgID, Kind: strings.TrimSpace(o.Str("kind", false)),
		Secrets: []string{webhook.NewSecret()}, CreatedAt: s.now()}
	switch w.Kind {
	case "", store.WebhookHTTP:
		w.Kind = store.WebhookHTTP
		w.URL = strings.TrimSpace(o.Str("url", true))
		w.Events = o.Strings("events", true)
	case store.WebhookListener:
		// Its deliveries go to the stream that `switchboard webhooks
		// listen` opens (GET /v1/webhooks/{id}/listen), not to a URL.
		if o.Present("url") {
			o.Errs.Add("url", "must be left out: a listener has no URL, its deliveries are streamed to the client that listens")
			o.Skip("url")
		}
		w.Events = slices.Clone(event.Types)
		if o.Present("events") {
			w.Events = o.Strings("events", true)
		}
		w.ExpiresAt = w.CreatedAt.Add(webhook.DefaultListenerIdle)
	default:
		o.Errs.Add("kind", "must be %q or %q, got %q", store.WebhookHTTP, store.WebhookListener, w.Kind)
		o.Skip("url") // judged once the kind is known
		o.Skip("events")
	}
	o.Done()
	s.cfg.Webhooks.CheckEndpoint(ctx, w.URL, w.Events, event.Types, o.Errs)
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	if err := s.store.CreateWebhook(ctx, w); err != nil {
		return response{}, err
	}
	v := viewWebhook(w)
	v.Secret = w.Secrets[0]
	msg := "webhook created; store its secret now, it is not shown again"
	if w.Kind == store.WebhookListener {
		msg = "webhook listener created: connect to GET /v1/webhooks/" + w.ID + "/listen within " + webhook.DefaultListenerIdle.String() + "; its secret verifies the deliveries"
	}
	return ok(http.StatusCreated, msg, v), nil
}

func (s *Server) listWebhooks(ctx context.Context, r *request) (response, error) {
	if err := newQuery(r.URL.Query()).errs.Err(); err != nil {
		return response{}, err
	}
	ws, err := s.store.ListWebhooks(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "webhooks", viewAll(ws, viewWebhook)), nil
}

func (s *Server) deleteWebhook(ctx context.Context, r *request) (response, error) {
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteWebhook(ctx, r.orgID, wid, s.now()); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "webhook deleted", nil), nil
}

// rotateWebhookSecret issues a new secret; the previous one keeps signing
// alongside it until the next rotation, so receivers can switch over.
func (s *Server) rotateWebhookSecret(ctx context.Context, r *request) (response, error) {
	if err := emptyBody(r); err != nil {
		return response{}, err
	}
	w, err := s.pathWebhook(ctx, r)
	if err != nil {
		return response{}, err
	}
	secret := webhook.NewSecret()
	w.Secrets = []string{secret, w.Secrets[0]}
	if err := s.store.UpdateWebhookSecrets(ctx, r.orgID, w.ID, w.Secrets); err != nil {
		return response{}, err
	}
	v := viewWebhook(w)
	v.Secret = secret
	return ok(http.StatusOK, "secret rotated; deliveries are signed with the new and the previous secret until the next rotation", v), nil
}

// pathWebhook reads the organization's endpoint the path's {id} names.
func (s *Server) pathWebhook(ctx context.Context, r *request) (store.Webhook, error) {
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return store.Webhook{}, err
	}
	return s.store.GetWebhook(ctx, r.orgID, wid)
}

type deliveryView struct {
	ID         string `json:"id"`
	MessageID  string `json:"messageId"`
	Event      string `json:"event"`
	Attempt    int    `json:"attempt"`
	Status     int    `json:"status"`
	Response   string `json:"response"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"durationMs"`
	At         ts     `json:"at"`
}

func (s *Server) listDeliveries(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	ds, total, err := s.store.ListDeliveries(ctx, r.orgID, wid, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "deliveries", viewAll(ds, func(d store.Delivery) deliveryView {
		return deliveryView{ID: d.ID, MessageID: d.MessageID, Event: d.Type, Attempt: d.Attempt, Status: d.Status, Response: d.Response,
			Error: d.Error, DurationMs: d.Duration.Milliseconds(), At: ts(d.At)}
	}))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) redeliver(ctx context.Context, r *request) (response, error) {
	// Both path ids are checked before any query.
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	mid, err := pathID(r, "messageId", id.Message, "webhook message")
	if err != nil {
		return response{}, err
	}
	if _, err := s.store.GetWebhook(ctx, r.orgID, wid); err != nil {
		return response{}, err
	}
	if err := s.store.Redeliver(ctx, r.orgID, wid, mid, s.now()); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "message queued for redelivery", nil), nil
}

// listenWebhook is GET /v1/webhooks/{id}/listen: the websocket over which
// a listener endpoint's deliveries are streamed to the client that holds
// it (`switchboard webhooks listen`; webhook.Listener, docs/api.md
// "Listening from your machine"). The endpoint is checked before the
// upgrade: another organization's id, an HTTP endpoint or an expired
// listener is a plain 404.
func (s *Server) listenWebhook(ctx context.Context, r *request) (response, error) {
	w, err := s.pathWebhook(ctx, r)
	if err != nil {
		return response{}, err
	}
	if w.Kind != store.WebhookListener {
		return response{}, apperr.NotFoundf("webhook listener not found: %s is an HTTP endpoint (kind %q); create one with {\"kind\": \"listener\"}", w.ID, w.Kind)
	}
	if !s.streams.add() {
		return response{}, apperr.New(apperr.Unavailable, "the server is shutting down; connect again")
	}
	return response{stream: func(rw http.ResponseWriter, req *http.Request) {
		defer s.streams.done()
		hw := &hijacked{ResponseWriter: rw}
		conn, err := websocket.Accept(hw, req, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled})
		if err != nil {
			return // Accept has answered the client
		}
		conn.SetReadLimit(64 << 10)
		ctx, cancel := s.streams.context(req.Context())
		defer cancel()
		lc := listenConn{conn}
		log := s.log.With("org_id", w.OrgID, "webhook_id", w.ID)
		if err := lc.Send(ctx, webhook.ListenFrame{Type: webhook.FrameListening, WebhookID: w.ID, Events: w.Events}); err != nil {
			conn.CloseNow()
			return
		}
		err = s.listener.Serve(ctx, w.OrgID, w.ID, lc)
		switch {
		case errors.Is(err, webhook.ErrListenerGone):
			conn.Close(StatusListenerGone, "the listener was deleted or has expired")
		case ctx.Err() != nil:
			conn.Close(websocket.StatusGoingAway, "the server is shutting down")
		case websocket.CloseStatus(err) != -1:
			conn.Close(websocket.StatusNormalClosure, "")
		default:
			log.Info("webhook listener stream ended", "err", err)
			conn.Close(websocket.StatusInternalError, "the stream failed")
		}
	}}, nil
}

// StatusListenerGone closes a listener's stream whose endpoint was
// deleted or expired: the client should not reconnect.
const StatusListenerGone websocket.StatusCode = 4404

// listenConn carries a listener's frames as JSON text messages.
type listenConn struct{ c *websocket.Conn }

func (l listenConn) Send(ctx context.Context, f webhook.ListenFrame) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return l.c.Write(ctx, websocket.MessageText, b)
}

func (l listenConn) Recv(ctx context.Context) (webhook.ListenAck, error) {
	var a webhook.ListenAck
	typ, b, err := l.c.Read(ctx)
	if err != nil {
		return a, err
	}
	if typ != websocket.MessageText {
		return a, errors.New("a listener sends JSON text frames only")
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("an ack that is not JSON: %w", err)
	}
	return a, nil
}

// hijacked clears the deadlines the HTTP server left on a connection it
// hands over (ReadTimeout would otherwise cut every stream after 30 s).
type hijacked struct{ http.ResponseWriter }

func (h *hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, brw, nil
}

// streams tracks the long-lived streams a server holds (listeners'
// websockets, which http.Server.Shutdown does not wait for): Close ends
// them and waits.
type streams struct {
	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

func newStreams() *streams { return &streams{closing: make(chan struct{})} }

// add counts a new stream in, unless the server is closing.
func (st *streams) add() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	st.wg.Add(1)
	return true
}

func (st *streams) done() { st.wg.Done() }

// context is parent, canceled too when the server closes.
func (st *streams) context(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() { // ends with ctx, which the caller cancels when its stream ends
		select {
		case <-st.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// close ends every stream and waits for them.
func (st *streams) close() {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		close(st.closing)
	}
	st.mu.Unlock()
	st.wg.Wait()
}
