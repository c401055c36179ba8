package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/store"
)

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
		return nil, notFound(err, "webhook listener")
	}
	return s.claimMessages(ctx, `o.webhook_id = ? AND o.org_id = ? AND w.kind = ? AND w.deleted_at = 0`, now, lease, limit,
		webhookID, orgID, store.WebhookListener)
}

// RenewListener moves a live listener's expiry.
func (s *Store) RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error {
	res, err := s.exec(ctx, s.w, `UPDATE webhooks SET expires_at = ? WHERE org_id = ? AND id = ? AND kind = ? AND deleted_at = 0`,
		ms(until), orgID, webhookID, store.WebhookListener)
	return affected(res, err, "webhook listener")
}

// ExpireListeners deletes the listeners whose expiry has passed and drops
// their undelivered messages, as DeleteWebhook does, in one transaction:
// the endpoints are marked first (RETURNING their ids), so a renewal
// racing it either lands before (and the endpoint is kept) or finds it
// deleted.
func (s *Store) ExpireListeners(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		rows, err := s.query(ctx, tx, `UPDATE webhooks SET deleted_at = ?
			WHERE kind = ? AND deleted_at = 0 AND expires_at < ? RETURNING id`, ms(now), store.WebhookListener, ms(now))
		if err != nil {
			return err
		}
		var gone []any
		for rows.Next() {
			var wid string
			if err := rows.Scan(&wid); err != nil {
				rows.Close()
				return err
			}
			gone = append(gone, wid)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n = len(gone)
		if n == 0 {
			return nil
		}
		_, err = s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, updated_at = ? WHERE state = ? AND webhook_id IN (`+placeholders(n)+`)`,
			append([]any{store.OutboxFailed, ms(now), store.OutboxPending}, gone...)...)
		return err
	})
	return n, err
}
