package store

import (
	"context"
	"time"
)

// Idempotency is the responses stored under requests' Idempotency-Key.
type Idempotency interface {
	// ReserveIdempotency claims key for a request with the given hash. It
	// returns nil when the caller should go on and handle the request, or
	// the record already stored under the key.
	ReserveIdempotency(ctx context.Context, orgID, key, requestHash string, now time.Time) (*Idempotent, error)

	// CompleteIdempotency stores the response of a reserved request.
	CompleteIdempotency(ctx context.Context, orgID, key string, status int, body []byte) error

	// ReleaseIdempotency forgets a reservation whose request failed.
	ReleaseIdempotency(ctx context.Context, orgID, key string) error

	// PurgeIdempotency deletes records created before the given time.
	PurgeIdempotency(ctx context.Context, before time.Time) error
}

// Idempotent is a stored response to a request made with an Idempotency-Key.
type Idempotent struct {
	RequestHash string
	// Status is 0 while the first request is still being handled.
	Status    int
	Body      []byte
	CreatedAt time.Time
}
