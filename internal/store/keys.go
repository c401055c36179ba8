package store

import (
	"context"
	"time"

	"switchboard/internal/auth"
)

// Keys is the organizations' API keys (sk_…).
type Keys interface {
	// CreateKey stores key; NotFound when its organization does not exist.
	CreateKey(ctx context.Context, key auth.Key) error

	// GetKey finds a key by id, revoked or not; it is not org-scoped because
	// it is how a request's organization is learned.
	GetKey(ctx context.Context, id string) (auth.Key, error)
	ListKeys(ctx context.Context, orgID string) ([]auth.Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error

	// TouchKeys records when keys were last used (id → time), in one batch.
	TouchKeys(ctx context.Context, used map[string]time.Time) error
}
