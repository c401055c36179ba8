package store

import (
	"context"

	"switchboard/internal/phone"
)

// Connections is the organizations' own telephony accounts (SIP trunks,
// Twilio accounts) and their numbers.
type Connections interface {
	// CreateConnection stores a connection and its numbers. A number
	// already on a connection of the same provider, of any organization,
	// is a Conflict (code number_taken) naming the field of each such
	// number (sip.numbers[i]); nothing is stored then.
	CreateConnection(ctx context.Context, c phone.Connection) error
	GetConnection(ctx context.Context, orgID, id string) (phone.Connection, error)

	// GetConnectionAnyOrg reads a connection by id alone, for a provider's
	// callback that names it (a Twilio webhook's path) before anything
	// says whose it is.
	GetConnectionAnyOrg(ctx context.Context, id string) (phone.Connection, error)

	// ListConnections returns a page of the organization's connections,
	// newest first, and their total.
	ListConnections(ctx context.Context, orgID string, p Page) ([]phone.Connection, int, error)

	// DeleteConnection deletes a connection and frees its numbers. It is a
	// Conflict, naming them, while numbers of it are purchased.
	DeleteConnection(ctx context.Context, orgID, id string) error

	// ConnectionNumbers lists the numbers of the organization's
	// connections of a provider, oldest connection first and in each in
	// its order, with the purchase that holds each one, if any.
	ConnectionNumbers(ctx context.Context, orgID, provider string) ([]phone.ConnectionNumber, error)

	// FindInboundNumber finds, across organizations, the held purchase of
	// number on a connection of provider, and that connection: where an
	// inbound call to the number goes. NotFound when there is none.
	FindInboundNumber(ctx context.Context, provider, number string) (phone.Purchase, phone.Connection, error)
}
