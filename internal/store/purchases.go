package store

import (
	"context"
	"time"

	"switchboard/internal/phone"
)

// Purchases is the phone numbers an organization holds (phone.Purchase),
// and which assistants answer and place their calls.
type Purchases interface {
	// CreatePurchase is a Conflict when the number is held by anyone.
	// When p.ConnectionID is set, the number must be one of that
	// connection's numbers, the connection one of p.OrgID's of provider
	// p.Provider, checked in the same transaction (NotFound otherwise);
	// the connection cannot be deleted while the purchase is held.
	CreatePurchase(ctx context.Context, p phone.Purchase) error
	GetPurchase(ctx context.Context, orgID, id string) (phone.Purchase, error)
	ListPurchases(ctx context.Context, orgID string) ([]phone.Purchase, error)
	// FindInventoryNumber returns the organization's held purchase of
	// number bought from provider's inventory (no connection): where a
	// sandbox call that the organization's own API key placed "in" goes.
	// NotFound when it holds none.
	FindInventoryNumber(ctx context.Context, orgID, provider, number string) (phone.Purchase, error)

	// HeldNumbers lists the numbers of a provider that are currently purchased, by anyone.
	HeldNumbers(ctx context.Context, provider string) (map[string]bool, error)

	// AllocateAssistants sets one of the organization's purchases'
	// assistants and message (a) and returns it. Each non-empty assistant
	// id must name an assistant of the organization, checked in the same
	// transaction (NotFound naming the field otherwise).
	AllocateAssistants(ctx context.Context, a Allocation) (phone.Purchase, error)

	// ReleasePurchase gives the number up and deletes its contacts. It is a
	// Conflict while a schedule of the number has pending attempts.
	ReleasePurchase(ctx context.Context, orgID, id string, at time.Time) error
}

// Allocation is what AllocateAssistants sets on a purchase: the assistants
// that answer its inbound calls and place its outbound ones ("" for none),
// and its message, changed at At.
type Allocation struct {
	OrgID, PurchaseID     string
	InboundID, OutboundID string
	Message               string
	At                    time.Time
}
