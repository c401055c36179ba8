package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// queueEvents fans events out to the organization's endpoints that
// subscribe to them, inside the caller's transaction.
func (s *Store) queueEvents(ctx context.Context, tx *sql.Tx, orgID string, events []event.Event) error {
	if len(events) == 0 {
		return nil
	}
	rows, err := s.query(ctx, tx, `SELECT id, events FROM webhooks WHERE org_id = ? AND deleted_at = 0`, orgID)
	if err != nil {
		return err
	}
	type endpoint struct {
		id     string
		events map[string]bool
	}
	var eps []endpoint
	for rows.Next() {
		var wid, evs string
		if err := rows.Scan(&wid, &evs); err != nil {
			rows.Close()
			return err
		}
		var list []string
		_ = json.Unmarshal([]byte(evs), &list)
		ep := endpoint{id: wid, events: map[string]bool{}}
		for _, e := range list {
			ep.events[e] = true
		}
		eps = append(eps, ep)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, ev := range events {
		payload, err := json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{ev.Type, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Data})
		if err != nil {
			return err
		}
		for _, ep := range eps {
			if !ep.events[ev.Type] {
				continue
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO webhook_outbox (id, org_id, webhook_id, type, payload, state, next_at, created_at, updated_at, call_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id.New(id.Message), orgID, ep.id, ev.Type, string(payload), store.OutboxPending, ms(ev.At), ms(ev.At), ms(ev.At), ev.CallID); err != nil {
				return err
			}
		}
	}
	return nil
}

// QueueEvent queues one event outside a call update.
func (s *Store) QueueEvent(ctx context.Context, orgID string, ev event.Event, at time.Time) error {
	return wrap("QueueEvent", s.tx(ctx, func(tx *sql.Tx) error { return s.queueEvents(ctx, tx, orgID, []event.Event{ev}) }))
}

// ListCallMessages lists the webhook messages about a call.
func (s *Store) ListCallMessages(ctx context.Context, orgID, callID string, limit int) ([]store.CallMessage, error) {
	rows, err := s.query(ctx, s.r, `SELECT o.id, o.webhook_id, w.url, o.type, o.state, o.attempts, o.last_status, o.created_at, o.updated_at
		FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
		WHERE o.org_id = ? AND o.call_id = ? AND o.call_id <> '' ORDER BY o.created_at, o.id LIMIT ?`, orgID, callID, limit)
	if err != nil {
		return nil, wrap("ListCallMessages", err)
	}
	defer rows.Close()
	out := []store.CallMessage{}
	for rows.Next() {
		var m store.CallMessage
		var created, updated int64
		if err := rows.Scan(&m.ID, &m.WebhookID, &m.URL, &m.Type, &m.State, &m.Attempts, &m.LastStatus, &created, &updated); err != nil {
			return nil, wrap("ListCallMessages", err)
		}
		m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
		out = append(out, m)
	}
	return out, wrap("ListCallMessages", rows.Err())
}

// ClaimOutbox leases due messages of HTTP endpoints; a listener's are
// its stream's (ClaimListener).
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error) {
	msgs, err := s.claimMessages(ctx, `w.kind = ?`, now, lease, limit, store.WebhookHTTP)
	return msgs, wrap("ClaimOutbox", err)
}

// outboxSelect reads the claimable messages of the endpoints that where
// (on webhooks w) picks; claimMessages adds its arguments after the
// outbox's own.
const outboxSelect = `SELECT o.id, o.org_id, o.webhook_id, w.url, w.secrets, o.type, o.payload, o.state, o.attempts, o.created_at
	FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
	WHERE o.state = ? AND o.next_at <= ? AND o.locked_until < ? AND `

// claimMessages leases due messages of the endpoints where picks, earliest
// due first.
func (s *Store) claimMessages(ctx context.Context, where string, now time.Time, lease time.Duration, limit int, args ...any) ([]store.OutboxMessage, error) {
	c := claim{Table: "webhook_outbox", Alias: "o", Key: "id", Lease: "locked_until",
		Select: outboxSelect + where + ` ORDER BY o.next_at LIMIT ?`}
	var out []store.OutboxMessage
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, lease, limit, func(rows *sql.Rows) (string, error) {
			var m store.OutboxMessage
			var secrets, payload string
			var created int64
			if err := rows.Scan(&m.ID, &m.OrgID, &m.WebhookID, &m.URL, &secrets, &m.Type, &payload, &m.State, &m.Attempts, &created); err != nil {
				return "", err
			}
			_ = json.Unmarshal([]byte(secrets), &m.Secrets)
			m.Payload, m.CreatedAt = []byte(payload), fromMS(created)
			out = append(out, m)
			return m.ID, nil
		}, append([]any{store.OutboxPending, ms(now), ms(now)}, args...)...)
		return err
	})
	return out, err
}

// Listener endpoints (kind 'listener', migration 00019): their messages
// wait in the outbox like any endpoint's, but only a stream attached to
// the endpoint claims them (ClaimListener), on whichever node holds it.

// ClaimListener leases due messages of one listener endpoint of the
// organization. It checks the endpoint first, so that a stream on a
// deleted or expired listener, or on another organization's endpoint,
// learns so (NotFound) rather than waiting forever on nothing.
func (s *Store) ClaimListener(ctx context.Context, orgID, webhookID string, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error) {
	var one int
	err := s.row(ctx, s.r, `SELECT 1 FROM webhooks WHERE org_id = ? AND id = ? AND kind = ? AND deleted_at = 0`,
		orgID, webhookID, store.WebhookListener).Scan(&one)
	if err != nil {
		return nil, wrap("ClaimListener", notFound(err, "webhook listener"))
	}
	msgs, err := s.claimMessages(ctx, `o.webhook_id = ? AND o.org_id = ? AND w.kind = ? AND w.deleted_at = 0`, now, lease, limit,
		webhookID, orgID, store.WebhookListener)
	return msgs, wrap("ClaimListener", err)
}

// RecordDelivery logs an attempt and moves the message on. The receiver's
// answer and error are stored as text whatever bytes they hold (see
// store.Delivery), so a receiver cannot make the record fail on PostgreSQL.
func (s *Store) RecordDelivery(ctx context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error {
	return wrap("RecordDelivery", s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, `INSERT INTO webhook_deliveries (id, org_id, webhook_id, message_id, attempt, status, response, error, duration_ms, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, m.OrgID, m.WebhookID, m.ID, d.Attempt, d.Status, deliveryText(d.Response), deliveryText(d.Error), d.Duration.Milliseconds(), ms(d.At)); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, attempts = ?, next_at = ?, locked_until = 0, last_status = ?, updated_at = ? WHERE id = ?`,
			state, d.Attempt, ms(next), d.Status, ms(d.At), m.ID)
		return err
	}))
}

// deliveryText makes s storable as TEXT on both databases: each NUL and each
// byte of invalid UTF-8 (PostgreSQL refuses both) becomes U+FFFD, and the
// result is cut to store.MaxDeliveryText bytes at a rune boundary.
func deliveryText(s string) string {
	if len(s) <= store.MaxDeliveryText && utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s) // (RuneError, 1) for each invalid byte
		s = s[n:]
		if r == 0 {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > store.MaxDeliveryText {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ListDeliveries lists an endpoint's delivery attempts, newest first.
func (s *Store) ListDeliveries(ctx context.Context, orgID, webhookID string, p store.Page) ([]store.Delivery, int, error) {
	if _, err := s.GetWebhook(ctx, orgID, webhookID); err != nil {
		return nil, 0, wrap("ListDeliveries", err)
	}
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ?`, webhookID).Scan(&total); err != nil {
		return nil, 0, wrap("ListDeliveries", err)
	}
	rows, err := s.query(ctx, s.r, `SELECT d.id, d.message_id, d.webhook_id, d.org_id, o.type, d.attempt, d.status, d.response, d.error, d.duration_ms, d.at
		FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.message_id
		WHERE d.org_id = ? AND d.webhook_id = ? ORDER BY d.at DESC, d.id DESC LIMIT ? OFFSET ?`, orgID, webhookID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListDeliveries", err)
	}
	defer rows.Close()
	out := []store.Delivery{}
	for rows.Next() {
		var d store.Delivery
		var dur, at int64
		if err := rows.Scan(&d.ID, &d.MessageID, &d.WebhookID, &d.OrgID, &d.Type, &d.Attempt, &d.Status, &d.Response, &d.Error, &dur, &at); err != nil {
			return nil, 0, wrap("ListDeliveries", err)
		}
		d.Duration, d.At = time.Duration(dur)*time.Millisecond, fromMS(at)
		out = append(out, d)
	}
	return out, total, wrap("ListDeliveries", rows.Err())
}

// Redeliver queues a message again. It reads the endpoint FOR SHARE first:
// a DeleteWebhook racing it either waits, then drops the requeued message,
// or wins and the redelivery is NotFound; a deleted endpoint's message is
// never queued again.
func (s *Store) Redeliver(ctx context.Context, orgID, webhookID, messageID string, at time.Time) error {
	return wrap("Redeliver", s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at = 0`+s.forShare(), orgID, webhookID).Scan(&one); err != nil {
			return notFound(err, "webhook")
		}
		res, err := s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, next_at = ?, locked_until = 0, updated_at = ?
			WHERE org_id = ? AND webhook_id = ? AND id = ?`, store.OutboxPending, ms(at), ms(at), orgID, webhookID, messageID)
		return affected(res, err, "webhook message")
	}))
}
