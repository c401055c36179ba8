package webhook

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/store"
)

// A listener is an endpoint with no URL (store.WebhookListener): its
// messages are streamed to `switchboard webhooks listen`, which connected
// to the server, instead of POSTed by the Dispatcher, so a developer's
// receiver on their own machine gets deliveries without the server ever
// making a request to a private address (docs/ARCHITECTURE.md, "Webhook
// listeners"). The frames below are the stream's wire format (docs/api.md,
// "Listening from your machine").

// Frame types of a listener's stream.
const (
	// FrameListening is the server's first frame: the stream is attached.
	FrameListening = "listening"
	// FrameDelivery is one attempt of one message.
	FrameDelivery = "delivery"
	// FrameAck is the listener's answer to a delivery.
	FrameAck = "ack"
)

// Listener defaults.
const (
	// DefaultListenerIdle is how long a listener lives with no stream
	// attached before ExpireListeners deletes it.
	DefaultListenerIdle = 5 * time.Minute
	// DefaultAckTimeout is how long a delivery waits for its ack before the
	// attempt counts as failed: the listener's own timeout for forwarding
	// it (DefaultTimeout) with room to spare.
	DefaultAckTimeout = 30 * time.Second
	// DefaultListenInFlight bounds the deliveries a stream has sent and not
	// had acknowledged.
	DefaultListenInFlight = 8
)

// ErrListenerGone ends a stream whose listener endpoint was deleted or
// expired.
var ErrListenerGone = errors.New("webhook: the listener endpoint was deleted or has expired")

// ListenFrame is a frame the server sends on a listener's stream. A
// delivery's Headers are exactly those of an HTTP attempt (Headers), keyed
// by lower-case name, and Body is the raw body they sign.
type ListenFrame struct {
	Type string `json:"type"`
	// WebhookID and Events describe the listener (listening).
	WebhookID string   `json:"webhookId,omitempty"`
	Events    []string `json:"events,omitempty"`
	// The delivery.
	MessageID string            `json:"messageId,omitempty"`
	Event     string            `json:"event,omitempty"`
	Attempt   int               `json:"attempt,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Body      string            `json:"body,omitempty"`
}

// ListenAck is the listener's answer to one delivery: OK, or a failure
// with why (the signature did not verify, the local receiver's status or
// error). Status and Response, when it forwarded the delivery, are the
// local receiver's answer, as the delivery log shows an endpoint's.
type ListenAck struct {
	Type      string `json:"type"`
	MessageID string `json:"messageId"`
	OK        bool   `json:"ok"`
	Status    int    `json:"status,omitempty"`
	Response  string `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ListenConn is a listener's stream, whatever carries it (a websocket).
// Send writes one frame; Recv returns the next ack, and an error once the
// stream has ended.
type ListenConn interface {
	Send(ctx context.Context, f ListenFrame) error
	Recv(ctx context.Context) (ListenAck, error)
}

// ListenerStore is what a listener's stream needs from storage.
type ListenerStore interface {
	ClaimListener(ctx context.Context, orgID, webhookID string, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error)
	RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error
	recorder
}

// Listener serves listeners' streams on this node; zero fields take the
// defaults above.
type Listener struct {
	Store ListenerStore
	Log   *slog.Logger
	// Every is how often a stream looks for due messages (default 250 ms).
	Every      time.Duration
	Idle       time.Duration
	AckTimeout time.Duration
	InFlight   int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// sent is a delivery waiting for its ack.
type sent struct {
	m  store.OutboxMessage
	at time.Time
}

// stream is one Serve call's state, owned by its goroutine.
type stream struct {
	l              *Listener
	org, webhookID string
	conn           ListenConn
	log            *slog.Logger
	now            func() time.Time
	inflight       map[string]sent
}

// Serve streams the listener's messages over conn until ctx ends, the
// stream does (its error is returned) or the listener is deleted
// (ErrListenerGone). Each message is claimed with the dispatcher's lease,
// signed as an HTTP attempt, sent, and recorded when its ack comes; a
// failed ack, none within AckTimeout, or the stream ending first is a
// failed attempt, retried on Backoff's schedule like any. The listener is
// renewed while the stream lasts. The caller sends the FrameListening
// frame first.
func (l *Listener) Serve(ctx context.Context, orgID, webhookID string, conn ListenConn) error {
	s := &stream{l: l, org: orgID, webhookID: webhookID, conn: conn, inflight: map[string]sent{},
		log: l.Log.With("org_id", orgID, "webhook_id", webhookID), now: l.Now}
	if s.now == nil {
		s.now = time.Now
	}
	idle := cmp.Or(l.Idle, DefaultListenerIdle)
	if err := s.renew(ctx, idle); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	acks := make(chan ListenAck)
	ended := make(chan error, 1)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	wg.Go(func() {
		for {
			a, err := conn.Recv(ctx)
			if err != nil {
				ended <- err
				return
			}
			select {
			case acks <- a:
			case <-ctx.Done():
				return
			}
		}
	})
	// Whatever ends the stream, what it sent and had no answer for is a
	// failed attempt: retried, not lost.
	defer s.abandon(context.WithoutCancel(ctx))
	poll := time.NewTicker(cmp.Or(l.Every, 250*time.Millisecond))
	defer poll.Stop()
	renew := time.NewTicker(idle / 4)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			return err
		case a := <-acks:
			s.settle(ctx, a)
		case <-renew.C:
			if err := s.renew(ctx, idle); err != nil {
				return err
			}
		case <-poll.C:
			s.expire(ctx)
			if err := s.send(ctx); err != nil {
				return err
			}
		}
	}
}

// renew keeps the listener alive for idle more; a store failure is
// logged and the stream goes on (the next renewal may pass).
func (s *stream) renew(ctx context.Context, idle time.Duration) error {
	err := s.l.Store.RenewListener(ctx, s.org, s.webhookID, s.now().Add(idle))
	switch {
	case apperr.Is(err, apperr.NotFound):
		return ErrListenerGone
	case err != nil && ctx.Err() == nil:
		s.log.Warn("renewing a webhook listener failed", "err", err)
	}
	return nil
}

// send claims what there is room for and sends it.
func (s *stream) send(ctx context.Context) error {
	room := cmp.Or(s.l.InFlight, DefaultListenInFlight) - len(s.inflight)
	if room <= 0 {
		return nil
	}
	ms, err := s.l.Store.ClaimListener(ctx, s.org, s.webhookID, s.now(), messageLease, room)
	if apperr.Is(err, apperr.NotFound) {
		return ErrListenerGone
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("claiming a webhook listener's messages failed", "err", err)
		}
		return nil
	}
	frames := make([]ListenFrame, 0, len(ms))
	for _, m := range ms {
		at := s.now()
		h, err := Headers(m.Secrets, messageOf(m), at)
		if err != nil {
			record(context.WithoutCancel(ctx), s.l.Store, s.log, m, Result{Err: err.Error()}, at)
			continue
		}
		f := ListenFrame{Type: FrameDelivery, MessageID: m.ID, Event: m.Type, Attempt: m.Attempts + 1,
			Headers: make(map[string]string, len(h)), Body: string(m.Payload)}
		for k := range h {
			f.Headers[strings.ToLower(k)] = h.Get(k)
		}
		// In flight from now: a stream that fails below records them all.
		s.inflight[m.ID] = sent{m: m, at: at}
		frames = append(frames, f)
	}
	for _, f := range frames {
		if err := s.conn.Send(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// settle records the attempt an ack answers; an ack for anything this
// stream has not sent (or has already settled) changes nothing.
func (s *stream) settle(ctx context.Context, a ListenAck) {
	p, ok := s.inflight[a.MessageID]
	if !ok || a.Type != FrameAck {
		return
	}
	delete(s.inflight, a.MessageID)
	at := s.now()
	res := Result{Body: printable(a.Response, maxAnswerKept), Duration: at.Sub(p.at)}
	if a.Status >= 100 && a.Status <= 599 {
		res.Status = a.Status
	}
	if !a.OK {
		res.Err = printable(a.Error, maxErrKept)
		if res.Err == "" {
			res.Err = "the listener reported a failure"
		}
		res.Err = "listener: " + res.Err
	}
	record(context.WithoutCancel(ctx), s.l.Store, s.log, p.m, res, at)
}

// expire fails the deliveries whose ack is overdue.
func (s *stream) expire(ctx context.Context) {
	timeout := cmp.Or(s.l.AckTimeout, DefaultAckTimeout)
	for mid, p := range s.inflight {
		if at := s.now(); at.Sub(p.at) >= timeout {
			delete(s.inflight, mid)
			record(context.WithoutCancel(ctx), s.l.Store, s.log, p.m,
				Result{Duration: at.Sub(p.at), Err: "the listener did not acknowledge the delivery within " + timeout.String()}, at)
		}
	}
}

// abandon fails what is still in flight when the stream ends.
func (s *stream) abandon(ctx context.Context) {
	for mid, p := range s.inflight {
		delete(s.inflight, mid)
		at := s.now()
		record(ctx, s.l.Store, s.log, p.m, Result{Duration: at.Sub(p.at), Err: "the listener's stream ended before it acknowledged the delivery"}, at)
	}
}
