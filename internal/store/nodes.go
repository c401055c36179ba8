package store

import (
	"context"
	"time"

	"switchboard/internal/call"
)

// Nodes is the serve processes sharing the database (internal/cluster),
// their named leases, and the calls a dead node left.
type Nodes interface {
	// RegisterNode stores a node that starts (its lease already running);
	// registering an id again replaces the row.
	RegisterNode(ctx context.Context, n Node) error

	// RenewNode moves a node's heartbeat to now and its lease to
	// leaseUntil, and sets its draining flag. NotFound when the node has no
	// row (it was purged as long dead).
	RenewNode(ctx context.Context, id string, now, leaseUntil time.Time, draining bool) error

	// GetNode reads one node.
	GetNode(ctx context.Context, id string) (Node, error)

	// ListNodes lists the nodes whose lease runs past since (every node
	// with the zero time), oldest first. Only tests call it (TestCallers
	// lists it).
	ListNodes(ctx context.Context, since time.Time) ([]Node, error)

	// ClaimLease takes or renews the lease called name for holder until
	// now+ttl and reports whether holder holds it: yes when nobody held it,
	// holder already did, or the holder's lease ran out before now. Two
	// callers, on any nodes, never both hold a lease at the same now.
	ClaimLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (Lease, bool, error)

	// ReleaseLease gives up the lease called name if holder holds it, so
	// that another may claim it at once.
	ReleaseLease(ctx context.Context, name, holder string) error

	// OrphanedCalls lists up to limit live calls (queued, ringing, in
	// progress) of any organization whose node (Call.NodeID) has no lease
	// running past now: it died, so nothing will end them.
	OrphanedCalls(ctx context.Context, now time.Time, limit int) ([]call.Call, error)
}

// Node is one server process sharing the database (a cluster member).
type Node struct {
	ID string
	// Addr is the node's listen address, for operators.
	Addr        string
	StartedAt   time.Time
	HeartbeatAt time.Time
	// LeaseUntil is when the node counts as dead unless it renews.
	LeaseUntil time.Time
	// Draining is set from SIGTERM on: the node takes no new calls.
	Draining bool
}

// Alive reports whether n's lease runs past now.
func (n Node) Alive(now time.Time) bool { return n.LeaseUntil.After(now) }

// Lease is a named lease as stored.
type Lease struct {
	Name       string
	Holder     string
	LeaseUntil time.Time
	// Term grows by one each time another holder takes the lease.
	Term int64
}
