package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"strings"
	"time"

	"switchboard/internal/auth"
)

// CreateKey stores a key for an existing organization.
func (s *Store) CreateKey(ctx context.Context, key auth.Key) error {
	return wrap("CreateKey", s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM orgs WHERE id = ?`, key.OrgID).Scan(&one); err != nil {
			return notFound(err, "organization")
		}
		return s.insertKey(ctx, tx, key)
	}))
}

func (s *Store) insertKey(ctx context.Context, q querier, k auth.Key) error {
	_, err := s.exec(ctx, q, `INSERT INTO api_keys (id, org_id, name, scopes, hash, last4, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.OrgID, k.Name, strings.Join(k.Scopes, ","), hex.EncodeToString(k.Hash), k.Last4, ms(k.CreatedAt))
	return err
}

const keyCols = `id, org_id, name, scopes, hash, last4, created_at, last_used_at, revoked_at`

func scanKey(sc interface{ Scan(...any) error }) (auth.Key, error) {
	var k auth.Key
	var scopes, hash string
	var created, used, revoked int64
	if err := sc.Scan(&k.ID, &k.OrgID, &k.Name, &scopes, &hash, &k.Last4, &created, &used, &revoked); err != nil {
		return k, err
	}
	k.Scopes = strings.Split(scopes, ",")
	k.Hash, _ = hex.DecodeString(hash)
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromMS(created), fromMS(used), fromMS(revoked)
	return k, nil
}

// GetKey reads a key by id.
func (s *Store) GetKey(ctx context.Context, id string) (auth.Key, error) {
	k, err := scanKey(s.row(ctx, s.r, `SELECT `+keyCols+` FROM api_keys WHERE id = ?`, id))
	return k, wrap("GetKey", notFound(err, "key"))
}

// ListKeys lists an organization's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, orgID string) ([]auth.Key, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+keyCols+` FROM api_keys WHERE org_id = ? ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, wrap("ListKeys", err)
	}
	defer rows.Close()
	var out []auth.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, wrap("ListKeys", err)
		}
		out = append(out, k)
	}
	return out, wrap("ListKeys", rows.Err())
}

// RevokeKey revokes a key; revoking twice keeps the first time.
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := s.exec(ctx, s.w, `UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`, ms(at), id)
	return wrap("RevokeKey", affected(res, err, "key"))
}

// TouchKeys records last use times, never moving one backwards.
func (s *Store) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	return wrap("TouchKeys", s.tx(ctx, func(tx *sql.Tx) error {
		for id, at := range used {
			if _, err := s.exec(ctx, tx, `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND last_used_at < ?`, ms(at), id, ms(at)); err != nil {
				return err
			}
		}
		return nil
	}))
}
