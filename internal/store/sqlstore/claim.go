package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// claim is the one lease claimer behind every kind of durable work: the
// rows of a table that are due and not leased (their lease column is in
// the past) are read in order, at most limit, and leased until now+lease
// in the same transaction, so two callers — on any nodes — never hold the
// same row at once, and a row whose holder died is claimed again once its
// lease runs out. On PostgreSQL the read takes the rows with FOR UPDATE
// SKIP LOCKED (a concurrent claimer skips them instead of waiting); SQLite
// has one writer. Analyses (ClaimAnalyses), webhook messages (ClaimOutbox)
// and a dialer's attempts (ClaimDials) are claimed through it; the
// promoter (LeaseAttempts) picks its rows under the caps itself and
// leases them with its write (claim.lease).
type claim struct {
	// Table and Alias name the claimed table in Select's FROM.
	Table, Alias string
	// Key is the table's key column; Lease its lease column (Unix ms).
	Key, Lease string
	// Count, when set, is a column raised by one with each claim.
	Count string
	// Select reads the candidate rows: it must select the key first, end
	// with its ORDER BY and LIMIT ? (the limit is passed last) and may
	// join other tables (the lock is taken on Alias only).
	Select string
	// Join, when set, reads what scan gets from the rows Select picked
	// (WITH picked AS (Select) Join: Join selects FROM picked, key
	// first). A join in Select itself is made before its ORDER BY and
	// LIMIT, for every candidate: with Join only the picked rows are
	// joined.
	Join string
}

// run claims the rows Select finds with args (then the limit), calling
// scan for each row (its key first); it returns the keys it leased.
func (c claim) run(ctx context.Context, s *Store, tx *sql.Tx, now time.Time, lease time.Duration, limit int,
	scan func(rows *sql.Rows) (string, error), args ...any) ([]string, error) {
	q := c.Select + s.skipLockedOf(c.Alias)
	if c.Join != "" {
		q = "WITH picked AS (" + q + ") " + c.Join
	}
	rows, err := s.query(ctx, tx, q, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	var keys []string
	for rows.Next() {
		k, err := scan(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		keys = append(keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return keys, c.lease(ctx, s, tx, now, lease, keys)
}

// lease leases the rows of keys until now+lease (and raises Count), in
// batches: the claim's write, also used by a claimer that chose its rows
// itself (LeaseAttempts, which keeps the caps).
func (c claim) lease(ctx context.Context, s *Store, tx *sql.Tx, now time.Time, lease time.Duration, keys []string) error {
	set := c.Lease + " = ?"
	if c.Count != "" {
		set += ", " + c.Count + " = " + c.Count + " + 1"
	}
	for chunk := range slices.Chunk(keys, 500) {
		args := []any{ms(now.Add(lease))}
		for _, k := range chunk {
			args = append(args, k)
		}
		if _, err := s.exec(ctx, tx, `UPDATE `+c.Table+` SET `+set+` WHERE `+c.Key+` IN (`+placeholders(len(chunk))+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// skipLockedOf lets several nodes claim rows of table (an alias in the
// query) without waiting on each other; SQLite has one writer.
func (s *Store) skipLockedOf(table string) string {
	if s.d.Name == "postgres" {
		return " FOR UPDATE OF " + table + " SKIP LOCKED"
	}
	return ""
}
