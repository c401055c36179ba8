package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"switchboard/internal/routing"
)

// GetAssistantRequest reads the organization's routing endpoint.
func (s *Store) GetAssistantRequest(ctx context.Context, orgID string) (routing.Endpoint, error) {
	e := routing.Endpoint{OrgID: orgID}
	var timeoutMS, updated int64
	err := s.row(ctx, s.r, `SELECT url, timeout_ms, secret, updated_at FROM assistant_requests WHERE org_id = ?`, orgID).
		Scan(&e.URL, &timeoutMS, &e.Secret, &updated)
	e.Timeout, e.UpdatedAt = time.Duration(timeoutMS)*time.Millisecond, fromMS(updated)
	return e, wrap("GetAssistantRequest", notFound(err, "assistant request endpoint"))
}

// SetAssistantRequest stores the organization's routing endpoint.
func (s *Store) SetAssistantRequest(ctx context.Context, e routing.Endpoint) error {
	_, err := s.exec(ctx, s.w, `INSERT INTO assistant_requests (org_id, url, timeout_ms, secret, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id) DO UPDATE SET url = excluded.url, timeout_ms = excluded.timeout_ms, secret = excluded.secret, updated_at = excluded.updated_at`,
		e.OrgID, e.URL, e.Timeout.Milliseconds(), e.Secret, ms(e.UpdatedAt))
	return wrap("SetAssistantRequest", err)
}

// DeleteAssistantRequest removes the organization's routing endpoint.
func (s *Store) DeleteAssistantRequest(ctx context.Context, orgID string) error {
	_, err := s.exec(ctx, s.w, `DELETE FROM assistant_requests WHERE org_id = ?`, orgID)
	return wrap("DeleteAssistantRequest", err)
}

// DNCListed reports whether number is on the organization's list.
func (s *Store) DNCListed(ctx context.Context, orgID, number string) (bool, error) {
	var one int
	err := s.row(ctx, s.r, `SELECT 1 FROM dnc WHERE org_id = ? AND number = ?`, orgID, number).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, wrap("DNCListed", err)
}
