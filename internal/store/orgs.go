package store

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/schedule"
)

// Orgs is the organizations: the tenants every other row belongs to, and
// their own caps on calls.
type Orgs interface {
	// Bootstrap creates org and key if and only if there is no organization
	// yet; it reports whether it did. Safe to race from several nodes.
	Bootstrap(ctx context.Context, org auth.Org, key auth.Key) (bool, error)
	CreateOrg(ctx context.Context, org auth.Org) error
	GetOrg(ctx context.Context, id string) (auth.Org, error)

	// GetOrgCaps reads the organization's own caps (0: none of its own).
	GetOrgCaps(ctx context.Context, orgID string) (schedule.Caps, error)

	// SetOrgCaps stores the organization's own caps; NotFound when there
	// is no such organization.
	SetOrgCaps(ctx context.Context, orgID string, caps schedule.Caps) error
}
