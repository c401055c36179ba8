package store

import (
	"context"
	"time"

	"switchboard/internal/auth"
)

// PublicKeys is the publishable keys (pk_…): keys a web page may hold, which only start
// web calls for their assistants from their origins.
type PublicKeys interface {
	// CreatePublicKey stores k. Each of k.AssistantIDs must name an
	// assistant of k.OrgID, checked in the same transaction: otherwise
	// nothing is stored and the error is a NotFound naming the field of
	// each missing one (assistantIds[i]).
	CreatePublicKey(ctx context.Context, k auth.PublicKey) error

	// GetPublicKey finds a publishable key by id, revoked or not; it is not
	// org-scoped because it is how a request's organization is learned.
	GetPublicKey(ctx context.Context, id string) (auth.PublicKey, error)

	// ListPublicKeys returns a page of the organization's publishable
	// keys, revoked ones included, newest first, and their total.
	ListPublicKeys(ctx context.Context, orgID string, p Page) ([]auth.PublicKey, int, error)

	// RevokePublicKey revokes one of the organization's publishable keys
	// and returns it; revoking twice keeps the first time.
	RevokePublicKey(ctx context.Context, orgID, id string, at time.Time) (auth.PublicKey, error)

	// PublicOriginAllowed reports whether origin is an origin of some
	// publishable key that is not revoked, of any organization (a CORS
	// preflight names no key).
	PublicOriginAllowed(ctx context.Context, origin string) (bool, error)
}
