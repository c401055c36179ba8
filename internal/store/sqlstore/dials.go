package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"hash/fnv"
	"slices"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// CreateCall stores one call: CreateCalls of one.
func (s *Store) CreateCall(ctx context.Context, c call.Call, suppressed ...store.Event) error {
	return only(s.CreateCalls(ctx, []store.NewCall{{Call: c, Suppressed: suppressed}}))
}

// only is the outcome of a batch of one: the batch's error, else its
// one item's.
func only(errs []error, err error) error {
	if err != nil {
		return err
	}
	return errs[0]
}

// CreateCalls stores calls and, for scheduled ones, claims their attempts,
// in one transaction and a few statements whatever their number (a
// dialer's batch). Each call goes through the steps in order, and the
// first that refuses it records its error: the claim of a paused
// schedule's attempt gives the attempt back (givePausedBack); a dial to a
// number on the do-not-call list stores nothing and suppresses the
// attempt (suppressListed); an attempt no longer pending is a Conflict
// (claimAttempts); the rest are inserted with their totals (insertCalls).
func (s *Store) CreateCalls(ctx context.Context, ncs []store.NewCall) ([]error, error) {
	errs := make([]error, len(ncs))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		clear(errs)
		for _, step := range []func(context.Context, *sql.Tx, []store.NewCall, []error) error{
			s.givePausedBack, s.suppressListed, s.claimAttempts, s.insertCalls,
		} {
			if err := step(ctx, tx, ncs, errs); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// open are the indexes of the calls no step has refused yet that keep
// holds true of.
func open(ncs []store.NewCall, errs []error, keep func(c call.Call) bool) []int {
	var out []int
	for i, nc := range ncs {
		if errs[i] == nil && keep(nc.Call) {
			out = append(out, i)
		}
	}
	return out
}

func scheduled(c call.Call) bool { return c.AttemptID != "" }

// givePausedBack reads the schedules of the calls' attempts under a shared
// lock (FOR SHARE on PostgreSQL; SQLite has one writer) while
// SetSchedulePaused takes it exclusively: a pause either committed before
// the claim and is seen here, or waits for it. The attempts of paused
// schedules are given back (unleased) and their calls refused.
func (s *Store) givePausedBack(ctx context.Context, tx *sql.Tx, ncs []store.NewCall, errs []error) error {
	idx := open(ncs, errs, scheduled)
	byAttempt := make(map[string]int, len(idx))
	for _, i := range idx {
		byAttempt[ncs[i].Call.AttemptID] = i
	}
	lock := ""
	if s.d.Name == "postgres" {
		lock = " FOR SHARE OF sc"
	}
	var paused []string
	for chunk := range slices.Chunk(idx, 500) {
		args := make([]any, len(chunk))
		for j, i := range chunk {
			args[j] = ncs[i].Call.AttemptID
		}
		rows, err := s.query(ctx, tx, `SELECT a.id, sc.paused_at FROM attempts a JOIN schedules sc ON sc.id = a.schedule_id
			WHERE a.id IN (`+placeholders(len(chunk))+`)`+lock, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			var at int64
			if err := rows.Scan(&id, &at); err != nil {
				rows.Close()
				return err
			}
			if at != 0 {
				paused = append(paused, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(paused, 500) {
		args := make([]any, len(chunk))
		for j, id := range chunk {
			args[j] = id
			errs[byAttempt[id]] = apperr.Conflictf("attempt %s: its schedule is paused; it was given back undialed", id)
		}
		if _, err := s.exec(ctx, tx, `UPDATE attempts SET leased_until = 0 WHERE state = 'pending' AND id IN (`+placeholders(len(chunk))+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// outbound is a call the do-not-call list applies to.
func outbound(c call.Call) bool {
	return c.Type == call.Phone && c.Direction != call.Inbound && c.To != ""
}

// suppressListed refuses the calls to numbers on their organization's
// do-not-call list: phone.Suppressed, and a scheduled call's attempt
// becomes suppressed with its events queued. The list is read under the
// lock AddDNC takes on each (organization, number) (lockNumbers; every
// key of the batch in one order), in a statement that starts once the
// locks are held: under READ COMMITTED a statement reads the snapshot
// taken when it starts, so an add that committed while this waited is
// seen.
func (s *Store) suppressListed(ctx context.Context, tx *sql.Tx, ncs []store.NewCall, errs []error) error {
	idx := open(ncs, errs, outbound)
	if len(idx) == 0 {
		return nil
	}
	byOrg := map[string][]int{}
	keys := make([]int32, 0, len(idx))
	for _, i := range idx {
		c := ncs[i].Call
		byOrg[c.OrgID] = append(byOrg[c.OrgID], i)
		keys = append(keys, dncLockKey(c.OrgID, c.To))
	}
	if err := s.lockKeys(ctx, tx, keys); err != nil {
		return err
	}
	for org, is := range byOrg {
		for chunk := range slices.Chunk(is, 500) {
			args := []any{org}
			for _, i := range chunk {
				args = append(args, ncs[i].Call.To)
			}
			listed, err := s.querySet(ctx, tx, `SELECT number FROM dnc WHERE org_id = ? AND number IN (`+placeholders(len(chunk))+`)`, args...)
			if err != nil {
				return err
			}
			for _, i := range chunk {
				c := ncs[i].Call
				if !listed[c.To] {
					continue
				}
				errs[i] = phone.Suppressed(c.To)
				if c.AttemptID == "" {
					continue
				}
				if ok, err := s.suppressAttempt(ctx, tx, c, ncs[i].Suppressed); err != nil {
					return err
				} else if !ok {
					errs[i] = apperr.Conflictf("attempt %s is no longer pending", c.AttemptID)
				}
			}
		}
	}
	return nil
}

// claimAttempts moves the calls' attempts from pending to dialed, linking
// each to its call, in one statement per 300: the attempts it did not
// move (dialed meanwhile, canceled) refuse their calls with a Conflict.
// This is the claim that makes an attempt dialed at most once.
func (s *Store) claimAttempts(ctx context.Context, tx *sql.Tx, ncs []store.NewCall, errs []error) error {
	idx := open(ncs, errs, scheduled)
	for chunk := range slices.Chunk(idx, 300) {
		rows, args := values(chunk, "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))", func(i int) []any {
			c := ncs[i].Call
			return []any{c.AttemptID, c.ID, ms(c.CreatedAt)}
		})
		claimed, err := s.querySet(ctx, tx, `WITH v (id, call_id, at) AS (VALUES `+rows+`)
			UPDATE attempts SET state = 'dialed', call_id = v.call_id, updated_at = v.at FROM v
			WHERE attempts.id = v.id AND attempts.state = 'pending' RETURNING attempts.id`, args...)
		if err != nil {
			return err
		}
		for _, i := range chunk {
			if a := ncs[i].Call.AttemptID; !claimed[a] {
				errs[i] = apperr.Conflictf("attempt %s is no longer pending", a)
			}
		}
	}
	return nil
}

// insertCalls inserts the calls no step refused, 100 to a statement, and
// adds them to their organizations' totals, all on the shard of the
// first: a batch locks one row of each total, not every shard's, so the
// calls' own changes (each on its call's shard) seldom wait for it. A
// shard's row may go below zero; the totals are sums over the shards.
func (s *Store) insertCalls(ctx context.Context, tx *sql.Tx, ncs []store.NewCall, errs []error) error {
	idx := open(ncs, errs, func(call.Call) bool { return true })
	if len(idx) == 0 {
		return nil
	}
	row := "(" + placeholders(strings.Count(callCols, ",")+1) + ")"
	shard := s.shard(ncs[idx[0]].Call.ID)
	var deltas []countDelta
	for chunk := range slices.Chunk(idx, 100) {
		rows, args := values(chunk, row, func(i int) []any {
			c := ncs[i].Call
			deltas = append(deltas, countDelta{org: c.OrgID, typ: c.Type, status: c.Status, shard: shard, n: 1})
			return []any{c.ID, c.OrgID, string(c.Type), int(c.Status), c.AssistantID, c.PurchaseID, c.From, c.To, c.Provider, c.AttemptID,
				string(c.Outcome), c.EndedReason, ms(c.CreatedAt), ms(c.UpdatedAt), ms(c.StartedAt), ms(c.EndedAt), resultJSON(c.Result),
				string(c.Direction), c.ProviderCallID, c.Recording, c.PublicKeyID, c.NodeID}
		})
		if _, err := s.exec(ctx, tx, `INSERT INTO calls (`+callCols+`) VALUES `+rows, args...); err != nil {
			return err
		}
	}
	return s.bumpCounts(ctx, tx, deltas)
}

// querySet runs a statement that returns one text column and collects
// the values.
func (s *Store) querySet(ctx context.Context, tx *sql.Tx, query string, args ...any) (map[string]bool, error) {
	rows, err := s.query(ctx, tx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		set[v] = true
	}
	return set, rows.Err()
}

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
