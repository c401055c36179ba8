package webhook

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/store"
)

// Outbox is what the dispatcher needs from storage.
type Outbox interface {
	ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error)
	recorder
	// ExpireListeners deletes the listener endpoints no stream has
	// renewed (Listener); the dispatcher runs it every ExpireEvery.
	ExpireListeners(ctx context.Context, now time.Time) (int, error)
}

// recorder stores an attempt's outcome: the delivery log and the
// message's next state.
type recorder interface {
	RecordDelivery(ctx context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error
}

// DefaultExpireEvery is how often a dispatcher deletes expired listeners.
const DefaultExpireEvery = 30 * time.Second

// messageLease is how long a claimed message stays its claimer's: a
// delivery's timeout (or a listener's ack timeout) plus the write after it.
const messageLease = 2 * time.Minute

// Dispatcher delivers the outbox: every node runs one; messages are leased,
// so several nodes never send the same attempt twice, and a node that dies
// mid-delivery leaves its messages to be claimed again after the lease.
type Dispatcher struct {
	Store  Outbox
	Sender *Sender
	Log    *slog.Logger
	// Every is the polling interval (default 500 ms).
	Every time.Duration
	// Parallel bounds concurrent deliveries (default 8).
	Parallel int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// ExpireEvery is how often expired listener endpoints are deleted
	// (default DefaultExpireEvery).
	ExpireEvery time.Duration
}

// Run delivers until ctx is done, then waits for deliveries in flight.
func (d *Dispatcher) Run(ctx context.Context) {
	every, parallel := d.Every, d.Parallel
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	if parallel <= 0 {
		parallel = 8
	}
	now := d.Now
	if now == nil {
		now = time.Now
	}
	expireEvery := cmp.Or(d.ExpireEvery, DefaultExpireEvery)
	var expired time.Time
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if t := now(); t.Sub(expired) >= expireEvery {
			expired = t
			if n, err := d.Store.ExpireListeners(ctx, t); err != nil && ctx.Err() == nil {
				d.Log.Warn("deleting expired webhook listeners failed", "err", err)
			} else if n > 0 {
				d.Log.Info("deleted webhook listeners no stream renewed", "count", n)
			}
		}
		msgs, err := d.Store.ClaimOutbox(ctx, now(), messageLease, parallel*4)
		if err != nil {
			if ctx.Err() == nil {
				d.Log.Warn("claiming webhook messages failed", "err", err)
			}
			continue
		}
		for _, m := range msgs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				d.deliver(context.WithoutCancel(ctx), m, now)
			})
		}
	}
}

// deliver makes one attempt and records it.
func (d *Dispatcher) deliver(ctx context.Context, m store.OutboxMessage, now func() time.Time) {
	res := d.Sender.Deliver(ctx, m.URL, m.Secrets, messageOf(m))
	record(ctx, d.Store, d.Log, m, res, now())
}

// messageOf is the Message a claimed outbox row carries.
func messageOf(m store.OutboxMessage) Message {
	return Message{ID: m.ID, Type: m.Type, Timestamp: m.CreatedAt, Body: m.Payload}
}

// record stores the outcome of an attempt made at at: delivered, retried
// later per Backoff, or failed once the attempts are spent. The
// dispatcher and a listener's stream record the same way.
func record(ctx context.Context, st recorder, log *slog.Logger, m store.OutboxMessage, res Result, at time.Time) {
	attempt := m.Attempts + 1
	state, next := store.OutboxDelivered, at
	if !res.OK() {
		if wait, ok := Backoff(attempt + 1); ok {
			state, next = store.OutboxPending, at.Add(wait)
		} else {
			state = store.OutboxFailed
		}
	}
	rec := store.Delivery{ID: id.New(id.Delivery), MessageID: m.ID, WebhookID: m.WebhookID, OrgID: m.OrgID, Type: m.Type,
		Attempt: attempt, Status: res.Status, Response: res.Body, Error: res.Err, Duration: res.Duration, At: at}
	if err := st.RecordDelivery(ctx, m, rec, state, next); err != nil {
		// The attempt happened: if its record is lost, the lease runs out
		// and the message is sent again, every lease, for as long as the
		// record keeps failing. Whatever the receiver's text did to the
		// write, a record without it cannot fail the same way, so the
		// message still moves on (delivered, retried by Backoff, failed).
		// Should that fail too, the database itself is failing: the message
		// is sent again after the lease, which at-least-once delivery
		// allows (the receiver dedupes on webhook-id).
		log.Warn("recording a webhook delivery failed; recording it without the receiver's answer", "message_id", m.ID, "err", err)
		rec.ID = id.New(id.Delivery)
		rec.Response = "<the answer could not be stored>"
		rec.Error = asciiOnly(res.Err)
		if !res.OK() && rec.Error == "" {
			rec.Error = "the attempt failed"
		}
		if err := st.RecordDelivery(ctx, m, rec, state, next); err != nil {
			log.Error("recording a webhook delivery failed; the message will be sent again when its lease ends", "message_id", m.ID, "err", err)
		}
	}
	if !res.OK() {
		log.Info("webhook delivery failed", "message_id", m.ID, "webhook_id", m.WebhookID, "attempt", attempt, "status", res.Status, "next", state)
	}
}

// asciiOnly keeps the printable ASCII of s, at most 200 bytes: text any
// database stores.
func asciiOnly(s string) string {
	b := make([]byte, 0, min(len(s), 200))
	for i := 0; i < len(s) && len(b) < cap(b); i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}
