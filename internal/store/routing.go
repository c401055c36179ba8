package store

import (
	"context"

	"switchboard/internal/routing"
)

// AssistantRequests is each organization's inbound routing endpoint
// (routing.Endpoint), at most one.
type AssistantRequests interface {
	// GetAssistantRequest reads the organization's endpoint; NotFound
	// when it has none.
	GetAssistantRequest(ctx context.Context, orgID string) (routing.Endpoint, error)
	// SetAssistantRequest stores e as its organization's endpoint,
	// replacing the one it had.
	SetAssistantRequest(ctx context.Context, e routing.Endpoint) error
	// DeleteAssistantRequest removes the organization's endpoint; removing
	// none is not an error.
	DeleteAssistantRequest(ctx context.Context, orgID string) error
	// DNCListed reports whether number is on the organization's
	// do-not-call list (an inbound caller's status, for the endpoint).
	DNCListed(ctx context.Context, orgID, number string) (bool, error)
}
