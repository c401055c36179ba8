package sqlstore

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/store"
)

const publicKeyCols = `id, org_id, name, assistant_ids, origins, hash, key_prefix, created_at, revoked_at`

func scanPublicKey(sc interface{ Scan(...any) error }) (auth.PublicKey, error) {
	var k auth.PublicKey
	var assistants, origins, hash string
	var created, revoked int64
	if err := sc.Scan(&k.ID, &k.OrgID, &k.Name, &assistants, &origins, &hash, &k.KeyPrefix, &created, &revoked); err != nil {
		return k, err
	}
	if err := json.Unmarshal([]byte(assistants), &k.AssistantIDs); err != nil {
		return k, fmt.Errorf("publishable key %s: stored assistant ids: %w", k.ID, err)
	}
	if err := json.Unmarshal([]byte(origins), &k.Origins); err != nil {
		return k, fmt.Errorf("publishable key %s: stored origins: %w", k.ID, err)
	}
	k.Hash, _ = hex.DecodeString(hash)
	k.CreatedAt, k.RevokedAt = fromMS(created), fromMS(revoked)
	return k, nil
}

// CreatePublicKey stores a publishable key once its assistants are found.
func (s *Store) CreatePublicKey(ctx context.Context, k auth.PublicKey) error {
	return wrap("CreatePublicKey", s.tx(ctx, func(tx *sql.Tx) error {
		var missing apperr.Fields
		for i, aid := range k.AssistantIDs {
			var one int
			err := s.row(ctx, tx, `SELECT 1 FROM assistants WHERE org_id = ? AND id = ?`+s.forShare(), k.OrgID, aid).Scan(&one)
			if err == sql.ErrNoRows {
				missing.Add(fmt.Sprintf("assistantIds[%d]", i), "assistant %s not found", aid)
			} else if err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			return &apperr.Error{Kind: apperr.NotFound, Message: "assistant not found", Fields: missing}
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO public_keys (`+publicKeyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.OrgID, k.Name, jsonList(k.AssistantIDs), jsonList(k.Origins), hex.EncodeToString(k.Hash), k.KeyPrefix,
			ms(k.CreatedAt), ms(k.RevokedAt)); err != nil {
			return err
		}
		for _, o := range k.Origins {
			if _, err := s.exec(ctx, tx, `INSERT INTO public_key_origins (origin, key_id) VALUES (?, ?) ON CONFLICT (origin, key_id) DO NOTHING`, o, k.ID); err != nil {
				return err
			}
		}
		return nil
	}))
}

// GetPublicKey reads a publishable key by id.
func (s *Store) GetPublicKey(ctx context.Context, id string) (auth.PublicKey, error) {
	k, err := scanPublicKey(s.row(ctx, s.r, `SELECT `+publicKeyCols+` FROM public_keys WHERE id = ?`, id))
	return k, wrap("GetPublicKey", notFound(err, "publishable key"))
}

// ListPublicKeys lists a page of an organization's publishable keys, newest first.
func (s *Store) ListPublicKeys(ctx context.Context, orgID string, p store.Page) ([]auth.PublicKey, int, error) {
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM public_keys WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, wrap("ListPublicKeys", err)
	}
	out := []auth.PublicKey{}
	if p.Offset() >= total {
		return out, total, nil
	}
	rows, err := s.query(ctx, s.r, `SELECT `+publicKeyCols+` FROM public_keys WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		orgID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListPublicKeys", err)
	}
	defer rows.Close()
	for rows.Next() {
		k, err := scanPublicKey(rows)
		if err != nil {
			return nil, 0, wrap("ListPublicKeys", err)
		}
		out = append(out, k)
	}
	return out, total, wrap("ListPublicKeys", rows.Err())
}

// RevokePublicKey revokes a key; revoking twice keeps the first time.
func (s *Store) RevokePublicKey(ctx context.Context, orgID, id string, at time.Time) (auth.PublicKey, error) {
	var out auth.PublicKey
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE public_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE org_id = ? AND id = ?`,
			ms(at), orgID, id)
		if err := affected(res, err, "publishable key"); err != nil {
			return err
		}
		out, err = scanPublicKey(s.row(ctx, tx, `SELECT `+publicKeyCols+` FROM public_keys WHERE id = ?`, id))
		return err
	})
	return out, wrap("RevokePublicKey", err)
}

// PublicOriginAllowed reports whether an active publishable key has origin.
func (s *Store) PublicOriginAllowed(ctx context.Context, origin string) (bool, error) {
	var one int
	err := s.row(ctx, s.r, `SELECT 1 FROM public_key_origins o JOIN public_keys k ON k.id = o.key_id
		WHERE o.origin = ? AND k.revoked_at = 0 LIMIT 1`, origin).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	return err == nil, wrap("PublicOriginAllowed", err)
}
