package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/store"
)

const nodeCols = `id, addr, started_at, heartbeat_at, lease_until, draining`

func scanNode(sc interface{ Scan(...any) error }) (store.Node, error) {
	var n store.Node
	var started, beat, until int64
	err := sc.Scan(&n.ID, &n.Addr, &started, &beat, &until, &n.Draining)
	n.StartedAt, n.HeartbeatAt, n.LeaseUntil = fromMS(started), fromMS(beat), fromMS(until)
	return n, err
}

// RegisterNode stores (or replaces) a node's row.
func (s *Store) RegisterNode(ctx context.Context, n store.Node) error {
	_, err := s.exec(ctx, s.w, `INSERT INTO nodes (`+nodeCols+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET addr = excluded.addr, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
		lease_until = excluded.lease_until, draining = excluded.draining`,
		n.ID, n.Addr, ms(n.StartedAt), ms(n.HeartbeatAt), ms(n.LeaseUntil), n.Draining)
	return wrap("RegisterNode", err)
}

// RenewNode moves a node's heartbeat and lease.
func (s *Store) RenewNode(ctx context.Context, id string, now, leaseUntil time.Time, draining bool) error {
	res, err := s.exec(ctx, s.w, `UPDATE nodes SET heartbeat_at = ?, lease_until = ?, draining = ? WHERE id = ?`,
		ms(now), ms(leaseUntil), draining, id)
	return wrap("RenewNode", affected(res, err, "node"))
}

// GetNode reads one node.
func (s *Store) GetNode(ctx context.Context, id string) (store.Node, error) {
	n, err := scanNode(s.row(ctx, s.r, `SELECT `+nodeCols+` FROM nodes WHERE id = ?`, id))
	return n, wrap("GetNode", notFound(err, "node"))
}

// ListNodes lists the nodes whose lease runs past since, oldest first.
func (s *Store) ListNodes(ctx context.Context, since time.Time) ([]store.Node, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+nodeCols+` FROM nodes WHERE lease_until > ? ORDER BY started_at, id`, ms(since))
	if err != nil {
		return nil, wrap("ListNodes", err)
	}
	defer rows.Close()
	var out []store.Node
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, wrap("ListNodes", err)
		}
		out = append(out, n)
	}
	return out, wrap("ListNodes", rows.Err())
}

// ClaimLease takes or renews a named lease with one conditional upsert:
// the row is inserted when missing, else updated only if holder holds it
// or its lease ran out. PostgreSQL locks the row and checks the condition
// on its latest version, SQLite's one writer serializes: two claimers never
// both see their update applied.
func (s *Store) ClaimLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (store.Lease, bool, error) {
	var l store.Lease
	var until int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `INSERT INTO leases (name, holder, lease_until, term) VALUES (?, ?, ?, 1)
			ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, lease_until = excluded.lease_until,
				term = CASE WHEN leases.holder = excluded.holder THEN leases.term ELSE leases.term + 1 END
			WHERE leases.holder = excluded.holder OR leases.lease_until <= ?`,
			name, holder, ms(now.Add(ttl)), ms(now))
		if err != nil {
			return err
		}
		return s.row(ctx, tx, `SELECT name, holder, lease_until, term FROM leases WHERE name = ?`, name).Scan(&l.Name, &l.Holder, &until, &l.Term)
	})
	if err != nil {
		return store.Lease{}, false, wrap("ClaimLease", err)
	}
	l.LeaseUntil = fromMS(until)
	return l, l.Holder == holder && l.LeaseUntil.After(now), nil
}

// ReleaseLease ends holder's lease called name, if it holds it.
func (s *Store) ReleaseLease(ctx context.Context, name, holder string) error {
	_, err := s.exec(ctx, s.w, `UPDATE leases SET lease_until = 0 WHERE name = ? AND holder = ?`, name, holder)
	return wrap("ReleaseLease", err)
}

// OrphanedCalls lists live calls whose node has no running lease.
func (s *Store) OrphanedCalls(ctx context.Context, now time.Time, limit int) ([]call.Call, error) {
	cs, err := s.queryCalls(ctx, `SELECT `+callCols+` FROM calls WHERE status IN (0, 1, 2) AND node_id <> ''
		AND node_id NOT IN (SELECT id FROM nodes WHERE lease_until > ?) ORDER BY created_at LIMIT ?`, ms(now), limit)
	return cs, wrap("OrphanedCalls", err)
}
