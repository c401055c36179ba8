package sqlstore

import (
	"context"
	"database/sql"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/schedule"
)

// Bootstrap creates the first organization and key when there is none.
func (s *Store) Bootstrap(ctx context.Context, org auth.Org, key auth.Key) (bool, error) {
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		created = false
		if s.d.SerializeTx != "" {
			if _, err := s.exec(ctx, tx, s.d.SerializeTx); err != nil {
				return err
			}
		}
		var n int
		if err := s.row(ctx, tx, `SELECT COUNT(*) FROM orgs`).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if err := s.insertOrg(ctx, tx, org); err != nil {
			return err
		}
		created = true
		return s.insertKey(ctx, tx, key)
	})
	if err != nil {
		if s.d.IsUnique(err) {
			return false, nil // another node bootstrapped first
		}
		return false, wrap("Bootstrap", err)
	}
	return created, nil
}

// CreateOrg stores a new organization.
func (s *Store) CreateOrg(ctx context.Context, org auth.Org) error {
	return wrap("CreateOrg", s.insertOrg(ctx, s.w, org))
}

func (s *Store) insertOrg(ctx context.Context, q querier, org auth.Org) error {
	_, err := s.exec(ctx, q, `INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)`, org.ID, org.Name, ms(org.CreatedAt))
	return err
}

// GetOrg reads an organization.
func (s *Store) GetOrg(ctx context.Context, id string) (auth.Org, error) {
	var o auth.Org
	var created int64
	err := s.row(ctx, s.r, `SELECT id, name, created_at FROM orgs WHERE id = ?`, id).Scan(&o.ID, &o.Name, &created)
	o.CreatedAt = fromMS(created)
	return o, wrap("GetOrg", notFound(err, "organization"))
}

// GetOrgCaps reads the organization's own caps.
func (s *Store) GetOrgCaps(ctx context.Context, orgID string) (schedule.Caps, error) {
	var c schedule.Caps
	err := s.row(ctx, s.r, `SELECT max_concurrent_calls, max_concurrent_calls_per_number FROM orgs WHERE id = ?`, orgID).Scan(&c.PerOrg, &c.PerNumber)
	return c, wrap("GetOrgCaps", notFound(err, "organization"))
}

// SetOrgCaps stores the organization's own caps.
func (s *Store) SetOrgCaps(ctx context.Context, orgID string, caps schedule.Caps) error {
	if caps.PerOrg < 0 || caps.PerNumber < 0 {
		return apperr.Invalidf("maxConcurrentCalls", "caps must be 0 (none) or more")
	}
	res, err := s.exec(ctx, s.w, `UPDATE orgs SET max_concurrent_calls = ?, max_concurrent_calls_per_number = ? WHERE id = ?`, caps.PerOrg, caps.PerNumber, orgID)
	return wrap("SetOrgCaps", affected(res, err, "organization"))
}
