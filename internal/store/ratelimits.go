package store

import (
	"context"
	"time"
)

// RateLimits is the rate limits shared by the nodes on one database (issue 12,
// internal/httpapi/ratelimit.go): a count per API key of the requests
// all nodes have admitted, which only grows.
type RateLimits interface {
	// AddRateSpend adds each key's requests admitted by this node (key id
	// → count) to the key's count, in one transaction, and marks the keys
	// changed at at. Counts of zero or less are ignored.
	AddRateSpend(ctx context.Context, spent map[string]int64, at time.Time) error

	// RateSpend returns the count of every key changed at or after since
	// (key id → count): what a node reads back to learn what the others
	// admitted.
	RateSpend(ctx context.Context, since time.Time) (map[string]int64, error)

	// PurgeRateSpend forgets the counts of keys unchanged since before.
	PurgeRateSpend(ctx context.Context, before time.Time) error
}
