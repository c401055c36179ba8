// Package store declares the storage contract the service is built on. It
// is the one interface shared across packages (River's shape): one
// implementation per database under internal/store/, and one conformance
// suite (internal/store/storetest) that every implementation must pass.
//
// The contract is split by aggregate: one interface per kind of record
// and what is decided with it (Calls, Attempts, Schedules, Purchases,
// Connections, Contacts, Webhooks, Outbox, …), each in its own file, and
// Store embeds them all. A consumer takes only the aggregates it uses,
// composed in a small interface of its own (docs/ARCHITECTURE.md, "The
// store").
//
// Every method that reads or changes an organization's data takes the
// organization id and filters by it; a row of another organization is
// reported as apperr.NotFound, exactly as if it did not exist.
package store

import "context"

// Store is everything the service persists.
type Store interface {
	// Ping checks that the database answers.
	Ping(ctx context.Context) error
	// Close releases the connections.
	Close() error

	Orgs
	Keys
	PublicKeys
	Assistants
	Overviews
	Purchases
	Connections
	Contacts
	Calls
	DoNotCall
	Schedules
	Attempts
	Turns
	Analyses
	Webhooks
	AssistantRequests
	Outbox
	Idempotency
	RateLimits
	Operators
	Nodes
}

// Page selects one page of a listing; Page is 1-based.
type Page struct {
	Page     int
	PageSize int
}

// Offset is the number of rows before the page.
func (p Page) Offset() int { return (p.Page - 1) * p.PageSize }
