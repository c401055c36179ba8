package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"switchboard/internal/store"
)

// RenewListener moves a live listener's expiry.
func (s *Store) RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error {
	res, err := s.exec(ctx, s.w, `UPDATE webhooks SET expires_at = ? WHERE org_id = ? AND id = ? AND kind = ? AND deleted_at = 0`,
		ms(until), orgID, webhookID, store.WebhookListener)
	return wrap("RenewListener", affected(res, err, "webhook listener"))
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
	return n, wrap("ExpireListeners", err)
}

// CreateWebhook stores an endpoint.
func (s *Store) CreateWebhook(ctx context.Context, w store.Webhook) error {
	events, _ := json.Marshal(w.Events)
	secrets, _ := json.Marshal(w.Secrets)
	kind := cmp.Or(w.Kind, store.WebhookHTTP)
	var expires int64
	if kind == store.WebhookListener {
		expires = ms(w.ExpiresAt)
	}
	_, err := s.exec(ctx, s.w, `INSERT INTO webhooks (id, org_id, kind, url, events, secrets, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.OrgID, kind, w.URL, string(events), string(secrets), ms(w.CreatedAt), expires)
	return wrap("CreateWebhook", err)
}

const webhookCols = `id, org_id, kind, url, events, secrets, created_at, expires_at`

func scanWebhook(sc interface{ Scan(...any) error }) (store.Webhook, error) {
	var w store.Webhook
	var events, secrets string
	var created, expires int64
	if err := sc.Scan(&w.ID, &w.OrgID, &w.Kind, &w.URL, &events, &secrets, &created, &expires); err != nil {
		return w, err
	}
	_ = json.Unmarshal([]byte(events), &w.Events)
	_ = json.Unmarshal([]byte(secrets), &w.Secrets)
	w.CreatedAt, w.ExpiresAt = fromMS(created), fromMS(expires)
	return w, nil
}

// ListWebhooks lists an organization's endpoints, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, orgID string) ([]store.Webhook, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND deleted_at = 0 ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, wrap("ListWebhooks", err)
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, wrap("ListWebhooks", err)
		}
		out = append(out, w)
	}
	return out, wrap("ListWebhooks", rows.Err())
}

// GetWebhook reads one endpoint.
func (s *Store) GetWebhook(ctx context.Context, orgID, id string) (store.Webhook, error) {
	w, err := scanWebhook(s.row(ctx, s.r, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at = 0`, orgID, id))
	return w, wrap("GetWebhook", notFound(err, "webhook"))
}

// UpdateWebhookSecrets replaces an endpoint's secrets.
func (s *Store) UpdateWebhookSecrets(ctx context.Context, orgID, id string, secrets []string) error {
	b, _ := json.Marshal(secrets)
	res, err := s.exec(ctx, s.w, `UPDATE webhooks SET secrets = ? WHERE org_id = ? AND id = ? AND deleted_at = 0`, string(b), orgID, id)
	return wrap("UpdateWebhookSecrets", affected(res, err, "webhook"))
}

// DeleteWebhook deletes an endpoint and drops its undelivered messages.
func (s *Store) DeleteWebhook(ctx context.Context, orgID, id string, at time.Time) error {
	return wrap("DeleteWebhook", s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE webhooks SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at = 0`, ms(at), orgID, id)
		if err := affected(res, err, "webhook"); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, updated_at = ? WHERE webhook_id = ? AND state = ?`,
			store.OutboxFailed, ms(at), id, store.OutboxPending)
		return err
	}))
}
