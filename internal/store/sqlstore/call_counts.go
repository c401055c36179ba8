package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"hash/fnv"
	"slices"
	"strings"

	"switchboard/internal/call"
)

// countDelta is a change to one call_counts row.
type countDelta struct {
	org        string
	typ        call.Type
	status     call.Status
	shard      int
	n, changes int
}

// delta adds n to the (org, type, status) total of c's shard, and changes
// to its count of changes (the listing version, see pageCache). A hash of
// the call's id picks one of the dialect's CountShards rows, so that
// concurrent calls of one organization seldom wait for one row's lock.
func (s *Store) delta(c call.Call, status call.Status, n, changes int) countDelta {
	return countDelta{org: c.OrgID, typ: c.Type, status: status, shard: s.shard(c.ID), n: n, changes: changes}
}

// shard is the call_counts shard of the call with the id.
func (s *Store) shard(callID string) int {
	if s.d.CountShards <= 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(callID))
	return int(h.Sum32() % uint32(s.d.CountShards))
}

// bumpCounts applies deltas, those of one row summed, in one statement per
// 200 rows, in (organization, type, status, shard) order. Every
// transaction locks call_counts rows in that order (statuses only move
// forward), so no two wait for each other in a cycle.
func (s *Store) bumpCounts(ctx context.Context, tx *sql.Tx, deltas []countDelta) error {
	key := func(d countDelta) countDelta { d.n, d.changes = 0, 0; return d }
	slices.SortFunc(deltas, func(a, b countDelta) int {
		return cmp.Or(strings.Compare(a.org, b.org), strings.Compare(string(a.typ), string(b.typ)), cmp.Compare(a.status, b.status), cmp.Compare(a.shard, b.shard))
	})
	var merged []countDelta
	for _, d := range deltas {
		if k := len(merged) - 1; k >= 0 && key(merged[k]) == key(d) {
			merged[k].n += d.n
			merged[k].changes += d.changes
			continue
		}
		merged = append(merged, d)
	}
	for chunk := range slices.Chunk(merged, 200) {
		rows, args := values(chunk, "(?, ?, ?, ?, ?, ?)", func(d countDelta) []any {
			return []any{d.org, string(d.typ), int(d.status), d.shard, d.n, d.changes}
		})
		if _, err := s.exec(ctx, tx, `INSERT INTO call_counts (org_id, type, status, shard, n, changes) VALUES `+rows+`
			ON CONFLICT (org_id, type, status, shard) DO UPDATE SET n = call_counts.n + excluded.n, changes = call_counts.changes + excluded.changes`,
			args...); err != nil {
			return err
		}
	}
	return nil
}

// orgCounts are an organization's call totals by (type, status).
type orgCounts []countRow

type countRow struct {
	typ        call.Type
	status     call.Status
	n, changes int64
}

func (s *Store) callCounts(ctx context.Context, orgID string) (orgCounts, error) {
	rows, err := s.query(ctx, s.r, `SELECT type, status, n, changes FROM call_counts WHERE org_id = ?`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out orgCounts
	for rows.Next() {
		var typ string
		var st int
		var n, ch int64
		if err := rows.Scan(&typ, &st, &n, &ch); err != nil {
			return nil, err
		}
		out = append(out, countRow{call.Type(typ), call.Status(st), n, ch})
	}
	return out, rows.Err()
}

// total is the number of calls of the type and status (zero values: any).
func (c orgCounts) total(typ call.Type, status *call.Status) int {
	var n int64
	for _, r := range c {
		if (typ == "" || r.typ == typ) && (status == nil || r.status == *status) {
			n += r.n
		}
	}
	return int(n)
}

// version identifies the state of all of an organization's calls. Calls
// are only ever inserted (Σ n grows) or updated (Σ changes grows), each in
// the same transaction as its call_counts update, and neither sum ever
// shrinks; so every change to any call of the organization changes the
// version. Nothing else writes the calls table.
func (c orgCounts) version() [2]int64 {
	var v [2]int64
	for _, r := range c {
		v[0] += r.n
		v[1] += r.changes
	}
	return v
}

// CallCounts totals calls by status across organizations.
func (s *Store) CallCounts(ctx context.Context) (map[call.Status]int64, error) {
	rows, err := s.query(ctx, s.r, `SELECT status, SUM(n) FROM call_counts GROUP BY status`)
	if err != nil {
		return nil, wrap("CallCounts", err)
	}
	defer rows.Close()
	out := map[call.Status]int64{}
	for rows.Next() {
		var st int
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, wrap("CallCounts", err)
		}
		out[call.Status(st)] = n
	}
	return out, wrap("CallCounts", rows.Err())
}
