package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/store"
)

// ReserveIdempotency claims a key or returns what is stored under it.
func (s *Store) ReserveIdempotency(ctx context.Context, orgID, key, hash string, now time.Time) (*store.Idempotent, error) {
	var out *store.Idempotent
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		res, err := s.exec(ctx, tx, `INSERT INTO idempotency_keys (org_id, key, request_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (org_id, key) DO NOTHING`,
			orgID, key, hash, ms(now))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var rec store.Idempotent
		var body string
		var created int64
		if err := s.row(ctx, tx, `SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE org_id = ? AND key = ?`, orgID, key).
			Scan(&rec.RequestHash, &rec.Status, &body, &created); err != nil {
			return err
		}
		rec.Body, rec.CreatedAt = []byte(body), fromMS(created)
		out = &rec
		return nil
	})
	return out, wrap("ReserveIdempotency", err)
}

// CompleteIdempotency stores the response for a reserved key.
func (s *Store) CompleteIdempotency(ctx context.Context, orgID, key string, status int, body []byte) error {
	_, err := s.exec(ctx, s.w, `UPDATE idempotency_keys SET status = ?, body = ? WHERE org_id = ? AND key = ?`, status, string(body), orgID, key)
	return wrap("CompleteIdempotency", err)
}

// ReleaseIdempotency forgets a reservation.
func (s *Store) ReleaseIdempotency(ctx context.Context, orgID, key string) error {
	_, err := s.exec(ctx, s.w, `DELETE FROM idempotency_keys WHERE org_id = ? AND key = ?`, orgID, key)
	return wrap("ReleaseIdempotency", err)
}

// PurgeIdempotency deletes old records.
func (s *Store) PurgeIdempotency(ctx context.Context, before time.Time) error {
	_, err := s.exec(ctx, s.w, `DELETE FROM idempotency_keys WHERE created_at < ?`, ms(before))
	return wrap("PurgeIdempotency", err)
}

var _ store.Store = (*Store)(nil)
