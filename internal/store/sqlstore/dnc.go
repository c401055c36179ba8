package sqlstore

import (
	"context"
	"database/sql"
	"hash/fnv"
	"slices"
	"strings"

	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// dncLockClass is the first key of the do-not-call advisory locks
// (pg_advisory_xact_lock(int, int), a key space apart from the one-bigint
// locks such as bootstrap's): "DNC".
const dncLockClass = 0x444e43

// dncLockKey is the second key of the lock on (org, number): a 32-bit
// hash. Two numbers that share it only serialize more than they must.
func dncLockKey(orgID, number string) int32 {
	h := fnv.New32a()
	h.Write([]byte(orgID))
	h.Write([]byte{0})
	h.Write([]byte(number))
	return int32(h.Sum32())
}

// lockNumbers takes, until tx ends, the lock on each (org, number) that an
// add and a dial of the number both take, so that they are ordered: on
// PostgreSQL transaction-scoped advisory locks, in key order (two adds of
// overlapping lists cannot deadlock); on SQLite nothing, its one writer
// already orders write transactions.
func (s *Store) lockNumbers(ctx context.Context, tx *sql.Tx, orgID string, numbers []string) error {
	keys := make([]int32, 0, len(numbers))
	for _, n := range numbers {
		keys = append(keys, dncLockKey(orgID, n))
	}
	return s.lockKeys(ctx, tx, keys)
}

// lockKeys takes lockNumbers' locks of keys (dncLockKey), in key order.
func (s *Store) lockKeys(ctx context.Context, tx *sql.Tx, keys []int32) error {
	if s.d.Name != "postgres" || len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for chunk := range slices.Chunk(keys, 100) { // one SELECT locks up to 100 keys, left to right
		exprs := make([]string, len(chunk))
		args := make([]any, 0, 2*len(chunk))
		for i, k := range chunk {
			exprs[i] = "pg_advisory_xact_lock(?, ?)"
			args = append(args, dncLockClass, k)
		}
		if _, err := s.exec(ctx, tx, `SELECT `+strings.Join(exprs, ", "), args...); err != nil {
			return err
		}
	}
	return nil
}

// AddDNC lists the entries' numbers, the first entry of a number standing.
func (s *Store) AddDNC(ctx context.Context, orgID string, entries []phone.DNCEntry) (store.DNCAdded, error) {
	var out store.DNCAdded
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = store.DNCAdded{Added: []phone.DNCEntry{}, LiveCalls: map[string][]string{}}
		numbers := make([]string, len(entries))
		for i, e := range entries {
			numbers[i] = e.Number
		}
		if err := s.lockNumbers(ctx, tx, orgID, numbers); err != nil {
			return err
		}
		for i, e := range entries {
			res, err := s.exec(ctx, tx, `INSERT INTO dnc (org_id, number, reason, source, call_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (org_id, number) DO NOTHING`, orgID, e.Number, e.Reason, e.Source, e.CallID, ms(e.CreatedAt))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				out.Listed = append(out.Listed, i)
				continue
			}
			e.OrgID = orgID
			out.Added = append(out.Added, e)
		}
		return s.liveCallsTo(ctx, tx, orgID, out)
	})
	if err != nil {
		return store.DNCAdded{}, wrap("AddDNC", err)
	}
	return out, nil
}

// liveCallsTo fills out.LiveCalls: the outbound calls to the added numbers
// that are not ended, as tx sees them under the numbers' locks.
func (s *Store) liveCallsTo(ctx context.Context, tx *sql.Tx, orgID string, out store.DNCAdded) error {
	for chunk := range slices.Chunk(out.Added, 500) {
		args := []any{orgID}
		for _, e := range chunk {
			args = append(args, e.Number)
		}
		rows, err := s.query(ctx, tx, `SELECT id, to_number FROM calls WHERE org_id = ? AND to_number IN (`+placeholders(len(chunk))+`)
			AND status IN (0, 1, 2) AND type = 'phone' AND direction <> 'inbound' ORDER BY created_at, id`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, to string
			if err := rows.Scan(&id, &to); err != nil {
				rows.Close()
				return err
			}
			out.LiveCalls[to] = append(out.LiveCalls[to], id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

const dncCols = `org_id, number, reason, source, call_id, created_at`

func scanDNC(sc interface{ Scan(...any) error }) (phone.DNCEntry, error) {
	var e phone.DNCEntry
	var created int64
	err := sc.Scan(&e.OrgID, &e.Number, &e.Reason, &e.Source, &e.CallID, &created)
	e.CreatedAt = fromMS(created)
	return e, err
}

// ListDNC lists the organization's list, newest first.
func (s *Store) ListDNC(ctx context.Context, orgID, search string, p store.Page) ([]phone.DNCEntry, int, error) {
	cond, args := "org_id = ?", []any{orgID}
	if search != "" {
		// The API lets only a plus and digits through (phone.CheckDNCSearch);
		// LIKE's own characters are escaped all the same.
		esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(search)
		cond += ` AND number LIKE ? ESCAPE '\'`
		args = append(args, "%"+esc+"%")
	}
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM dnc WHERE `+cond, args...).Scan(&total); err != nil {
		return nil, 0, wrap("ListDNC", err)
	}
	rows, err := s.query(ctx, s.r, `SELECT `+dncCols+` FROM dnc WHERE `+cond+` ORDER BY created_at DESC, number DESC LIMIT ? OFFSET ?`,
		append(args, p.PageSize, p.Offset())...)
	if err != nil {
		return nil, 0, wrap("ListDNC", err)
	}
	defer rows.Close()
	out := []phone.DNCEntry{}
	for rows.Next() {
		e, err := scanDNC(rows)
		if err != nil {
			return nil, 0, wrap("ListDNC", err)
		}
		out = append(out, e)
	}
	return out, total, wrap("ListDNC", rows.Err())
}

// DeleteDNC takes a number off the list.
func (s *Store) DeleteDNC(ctx context.Context, orgID, number string) error {
	res, err := s.exec(ctx, s.w, `DELETE FROM dnc WHERE org_id = ? AND number = ?`, orgID, number)
	return wrap("DeleteDNC", affected(res, err, "do-not-call number"))
}

// suppressAttempt ends the pending attempt of a dial to a listed number
// as suppressed and queues the events that announce it; false when the
// attempt was no longer pending.
func (s *Store) suppressAttempt(ctx context.Context, tx *sql.Tx, c call.Call, events []event.Event) (bool, error) {
	res, err := s.exec(ctx, tx, `UPDATE attempts SET state = ?, error = ?, updated_at = ? WHERE id = ? AND state = 'pending'`,
		string(schedule.Suppressed), c.To+" is on the do-not-call list", ms(c.CreatedAt), c.AttemptID)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	return true, s.queueEvents(ctx, tx, c.OrgID, events)
}
