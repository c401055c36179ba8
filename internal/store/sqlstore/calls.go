package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/store"
)

const callCols = `id, org_id, type, status, assistant_id, purchase_id, from_number, to_number, provider, attempt_id, outcome, ended_reason, created_at, updated_at, started_at, ended_at, result, direction, provider_call_id, recording, public_key_id, node_id`

func scanCall(sc interface{ Scan(...any) error }) (call.Call, error) {
	var c call.Call
	var typ, outcome, result, direction string
	var status int
	var created, updated, started, ended int64
	err := sc.Scan(&c.ID, &c.OrgID, &typ, &status, &c.AssistantID, &c.PurchaseID, &c.From, &c.To, &c.Provider, &c.AttemptID,
		&outcome, &c.EndedReason, &created, &updated, &started, &ended, &result, &direction, &c.ProviderCallID, &c.Recording, &c.PublicKeyID, &c.NodeID)
	c.Direction = call.Direction(direction)
	if result != "" {
		_ = json.Unmarshal([]byte(result), &c.Result)
	}
	c.Type, c.Status, c.Outcome = call.Type(typ), call.Status(status), call.Outcome(outcome)
	c.CreatedAt, c.UpdatedAt, c.StartedAt, c.EndedAt = fromMS(created), fromMS(updated), fromMS(started), fromMS(ended)
	return c, err
}

// GetCall reads one of the organization's calls.
func (s *Store) GetCall(ctx context.Context, orgID, id string) (call.Call, error) {
	c, err := scanCall(s.row(ctx, s.r, `SELECT `+callCols+` FROM calls WHERE org_id = ? AND id = ?`, orgID, id))
	return c, notFound(err, "call")
}

// GetCallAnyOrg reads a call by id alone.
func (s *Store) GetCallAnyOrg(ctx context.Context, id string) (call.Call, error) {
	c, err := scanCall(s.row(ctx, s.r, `SELECT `+callCols+` FROM calls WHERE id = ?`, id))
	return c, notFound(err, "call")
}

// GetCallsAnyOrg reads calls by id alone, 500 to a statement.
func (s *Store) GetCallsAnyOrg(ctx context.Context, ids []string) ([]call.Call, error) {
	var out []call.Call
	for chunk := range slices.Chunk(ids, 500) {
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		cs, err := s.queryCalls(ctx, `SELECT `+callCols+` FROM calls WHERE id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// ListCalls lists calls newest first. Totals come from call_counts unless a
// date, direction, outcome or search filter asks for a count (call_counts
// has none of them).
func (s *Store) ListCalls(ctx context.Context, orgID string, f store.CallFilter) ([]call.Call, int, error) {
	where := []string{"org_id = ?"}
	args := []any{orgID}
	if f.Type != "" {
		where = append(where, "type = ?")
		args = append(args, string(f.Type))
	}
	if f.Status != nil {
		where = append(where, "status = ?")
		args = append(args, int(*f.Status))
	}
	if f.Direction != "" {
		where = append(where, "direction = ?")
		args = append(args, string(f.Direction))
	}
	if f.Outcome != "" {
		where = append(where, "outcome = ?")
		args = append(args, string(f.Outcome))
	}
	if f.CallID != "" {
		where = append(where, "id = ?")
		args = append(args, f.CallID)
	}
	if !f.CreatedAfter.IsZero() {
		where = append(where, "created_at > ?")
		args = append(args, ms(f.CreatedAfter))
	}
	if !f.CreatedBefore.IsZero() {
		where = append(where, "created_at < ?")
		args = append(args, ms(f.CreatedBefore))
	}
	cond := strings.Join(where, " AND ")

	// The organization's per-(type, status) totals give the unfiltered
	// totals and a version of all its calls (see pageCache).
	counts, err := s.callCounts(ctx, orgID)
	if err != nil {
		return nil, 0, err
	}
	key := pageKey{org: orgID, cond: cond + " number " + f.Number, args: fmt.Sprint(args...), page: f.Page.Page, size: f.PageSize}
	if e, ok := s.pages.get(key, counts.version()); ok {
		return slices.Clone(e.calls), e.total, nil
	}
	var total int
	var out []call.Call
	switch {
	case f.Number != "":
		out, total, err = s.listByNumber(ctx, cond, args, f)
	case f.CreatedAfter.IsZero() && f.CreatedBefore.IsZero() && f.Direction == "" && f.Outcome == "" && f.CallID == "":
		total = counts.total(f.Type, f.Status)
	default:
		err = s.row(ctx, s.r, `SELECT COUNT(*) FROM calls WHERE `+cond, args...).Scan(&total)
	}
	if err != nil {
		return nil, 0, err
	}
	if f.Number == "" {
		if out, err = s.listPage(ctx, cond, args, f, total); err != nil {
			return nil, 0, err
		}
	}
	s.pages.put(key, counts.version(), pageEntry{calls: slices.Clone(out), total: total})
	return out, total, nil
}

// listPage reads one page of calls.
func (s *Store) listPage(ctx context.Context, cond string, args []any, f store.CallFilter, total int) ([]call.Call, error) {
	out := []call.Call{}
	if f.Offset() >= total {
		return out, nil
	}
	// Two steps: the page's ids from the covering index alone (a deep
	// OFFSET skips index entries, never table rows), then those rows by
	// primary key. (One statement with IN (subquery … LIMIT ? OFFSET ?) is
	// re-prepared by SQLite on every run.)
	idRows, err := s.query(ctx, s.r, `SELECT id FROM calls WHERE `+cond+` ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		append(args, f.PageSize, f.Offset())...)
	if err != nil {
		return nil, err
	}
	var ids []any
	for idRows.Next() {
		var id string
		if err := idRows.Scan(&id); err != nil {
			idRows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	idRows.Close()
	if err := idRows.Err(); err != nil || len(ids) == 0 {
		return out, err
	}
	return s.callsByID(ctx, ids)
}

// callsByID reads the calls of ids by primary key, in the order of ids.
func (s *Store) callsByID(ctx context.Context, ids []any) ([]call.Call, error) {
	out := []call.Call{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.query(ctx, s.r, `SELECT `+callCols+` FROM calls WHERE id IN (`+placeholders(len(ids))+`)`, ids...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := make(map[string]call.Call, len(ids))
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, err
		}
		byID[c.ID] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if c, ok := byID[id.(string)]; ok { // a row deleted in between is skipped
			out = append(out, c)
		}
	}
	return out, nil
}

// listByNumber is ListCalls' search by number: the calls to the number
// and those from it, each side read in order from its own partial index
// (calls_to, calls_from: (org, number, created_at, id)) as far as the
// page reaches, merged newest first; the total counts each side and takes
// away the calls with the number on both. (One statement with "to = ? OR
// from = ?" was planned by SQLite as a scan of the organization's calls.)
func (s *Store) listByNumber(ctx context.Context, cond string, args []any, f store.CallFilter) ([]call.Call, int, error) {
	sides := []string{"to_number = ? AND to_number <> ''", "from_number = ? AND from_number <> ''"}
	type hit struct {
		id string
		at int64
	}
	var hits []hit
	seen := map[string]bool{}
	total := 0
	for i, side := range sides {
		c, a := cond+" AND "+side, append(slices.Clone(args), f.Number)
		var n int
		if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM calls WHERE `+c, a...).Scan(&n); err != nil {
			return nil, 0, err
		}
		total += n
		if i == 1 && total > 0 {
			var both int
			if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM calls WHERE `+cond+" AND "+sides[0]+" AND "+side, append(a, f.Number)...).Scan(&both); err != nil {
				return nil, 0, err
			}
			total -= both
		}
		rows, err := s.query(ctx, s.r, `SELECT id, created_at FROM calls WHERE `+c+` ORDER BY created_at DESC, id DESC LIMIT ?`,
			append(a, f.Offset()+f.PageSize)...)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			var h hit
			if err := rows.Scan(&h.id, &h.at); err != nil {
				rows.Close()
				return nil, 0, err
			}
			if !seen[h.id] {
				seen[h.id] = true
				hits = append(hits, h)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Or(cmp.Compare(b.at, a.at), strings.Compare(b.id, a.id)) })
	var ids []any
	for _, h := range hits[min(f.Offset(), len(hits)):min(f.Offset()+f.PageSize, len(hits))] {
		ids = append(ids, h.id)
	}
	out, err := s.callsByID(ctx, ids)
	return out, total, err
}

// resultJSON is a call's conversation result as stored (” when empty).
func resultJSON(r call.Result) string {
	if r.FlowSuccess == nil && len(r.Vars) == 0 {
		return ""
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// UpdateCall saves one call: UpdateCalls of one.
func (s *Store) UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...store.Event) error {
	return only(s.UpdateCalls(ctx, []store.CallUpdate{{Call: c, Prev: prev, Events: events}}))
}

// UpdateCalls saves calls, each if its stored status is still its Prev, in
// one transaction and a few statements whatever their number (a batch of
// provider events): one UPDATE … FROM (VALUES …) per 200, one totals
// upsert, one analyses insert for those that just ended, and each
// organization's events.
func (s *Store) UpdateCalls(ctx context.Context, us []store.CallUpdate) ([]error, error) {
	errs := make([]error, len(us))
	err := s.tx(ctx, func(tx *sql.Tx) error {
		clear(errs)
		deltas, err := s.updateCalls(ctx, tx, us, errs)
		if err != nil {
			return err
		}
		return s.bumpCounts(ctx, tx, deltas)
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// updateCall is UpdateCall inside the caller's transaction, but for the
// totals: it returns their deltas, which the caller applies last
// (bumpCounts), so that the totals' rows are locked only from then until
// the commit.
func (s *Store) updateCall(ctx context.Context, tx *sql.Tx, c call.Call, prev call.Status, events []store.Event) ([]countDelta, error) {
	errs := make([]error, 1)
	deltas, err := s.updateCalls(ctx, tx, []store.CallUpdate{{Call: c, Prev: prev, Events: events}}, errs)
	if err != nil {
		return nil, err
	}
	return deltas, errs[0]
}

// updateCalls is UpdateCalls inside the caller's transaction, returning
// the totals' deltas for the caller to apply last; each call's outcome
// goes to errs at its index. A call named twice is a Conflict the second
// time (its Prev was read before the first was saved). The deltas of a
// batch are all on the shard of its first call, as insertCalls' are: a
// batch locks one row of each total it changes, not every shard's.
func (s *Store) updateCalls(ctx context.Context, tx *sql.Tx, us []store.CallUpdate, errs []error) ([]countDelta, error) {
	seen := make(map[string]bool, len(us))
	idx := make([]int, 0, len(us))
	for i, u := range us {
		if seen[u.Call.ID] {
			errs[i] = apperr.Conflictf("call %s changed concurrently", u.Call.ID)
			continue
		}
		seen[u.Call.ID] = true
		idx = append(idx, i)
	}
	var (
		deltas []countDelta
		ended  []int
		byOrg  = map[string][]store.Event{}
		orgs   []string
	)
	for chunk := range slices.Chunk(idx, 200) {
		rows, args := values(chunk, "(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), "+
			"CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT))", func(i int) []any {
			c := us[i].Call
			return []any{c.ID, c.OrgID, int(us[i].Prev), int(c.Status), string(c.Outcome), c.EndedReason,
				ms(c.UpdatedAt), ms(c.StartedAt), ms(c.EndedAt), resultJSON(c.Result), string(c.Direction), c.ProviderCallID, c.NodeID}
		})
		saved, err := s.querySet(ctx, tx, `WITH v (id, org_id, prev, status, outcome, ended_reason, updated_at, started_at, ended_at, result, direction, provider_call_id, node_id)
			AS (VALUES `+rows+`)
			UPDATE calls SET status = v.status, outcome = v.outcome, ended_reason = v.ended_reason, updated_at = v.updated_at,
				started_at = v.started_at, ended_at = v.ended_at, result = v.result, direction = v.direction,
				provider_call_id = v.provider_call_id, node_id = v.node_id
			FROM v WHERE calls.id = v.id AND calls.org_id = v.org_id AND calls.status = v.prev RETURNING calls.id`, args...)
		if err != nil {
			return nil, err
		}
		for _, i := range chunk {
			u := us[i]
			c := u.Call
			if !saved[c.ID] {
				errs[i] = apperr.Conflictf("call %s changed concurrently", c.ID)
				continue
			}
			// The totals follow the status, and every update moves the
			// organization's call version (see pageCache).
			if c.Status != u.Prev {
				deltas = append(deltas, s.delta(c, c.Status, 1, 1), s.delta(c, u.Prev, -1, 0))
			} else {
				deltas = append(deltas, s.delta(c, c.Status, 0, 1))
			}
			if c.Status == call.Ended && u.Prev != call.Ended {
				ended = append(ended, i)
			}
			if len(u.Events) > 0 {
				if _, ok := byOrg[c.OrgID]; !ok {
					orgs = append(orgs, c.OrgID)
				}
				byOrg[c.OrgID] = append(byOrg[c.OrgID], u.Events...)
			}
		}
	}
	for chunk := range slices.Chunk(ended, 200) {
		rows, args := values(chunk, "(?, ?, ?, ?, ?)", func(i int) []any {
			c := us[i].Call
			return []any{c.ID, c.OrgID, store.AnalysisPending, ms(c.UpdatedAt), ms(c.UpdatedAt)}
		})
		if _, err := s.exec(ctx, tx, `INSERT INTO analyses (call_id, org_id, state, created_at, updated_at) VALUES `+rows+`
			ON CONFLICT (call_id) DO NOTHING`, args...); err != nil {
			return nil, err
		}
	}
	for _, org := range orgs {
		if err := s.queueEvents(ctx, tx, org, byOrg[org]); err != nil {
			return nil, err
		}
	}
	if len(idx) > 0 {
		shard := s.shard(us[idx[0]].Call.ID)
		for i := range deltas {
			deltas[i].shard = shard
		}
	}
	return deltas, nil
}

// SetCallRecording records that the call has a recording at path.
func (s *Store) SetCallRecording(ctx context.Context, orgID, callID, path string) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var typ string
		var status int
		err := s.row(ctx, tx, `SELECT type, status FROM calls WHERE org_id = ? AND id = ?`, orgID, callID).Scan(&typ, &status)
		if err != nil {
			return notFound(err, "call")
		}
		if _, err := s.exec(ctx, tx, `UPDATE calls SET recording = ? WHERE org_id = ? AND id = ?`, path, orgID, callID); err != nil {
			return err
		}
		// The listing shows recordingUrl: move the organization's call version (see pageCache).
		return s.bumpCounts(ctx, tx, []countDelta{s.delta(call.Call{ID: callID, OrgID: orgID, Type: call.Type(typ)}, call.Status(status), 0, 1)})
	})
}

// StaleCalls lists live calls not updated since before.
func (s *Store) StaleCalls(ctx context.Context, before time.Time, limit int) ([]call.Call, error) {
	return s.queryCalls(ctx, `SELECT `+callCols+` FROM calls WHERE status IN (0, 1, 2) AND updated_at < ? ORDER BY updated_at LIMIT ?`, ms(before), limit)
}

// queryCalls reads the calls a query of callCols selects, on the readers.
func (s *Store) queryCalls(ctx context.Context, query string, args ...any) ([]call.Call, error) {
	rows, err := s.query(ctx, s.r, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []call.Call
	for rows.Next() {
		c, err := scanCall(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CallCounts totals calls by status across organizations.
func (s *Store) CallCounts(ctx context.Context) (map[call.Status]int64, error) {
	rows, err := s.query(ctx, s.r, `SELECT status, SUM(n) FROM call_counts GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[call.Status]int64{}
	for rows.Next() {
		var st int
		var n int64
		if err := rows.Scan(&st, &n); err != nil {
			return nil, err
		}
		out[call.Status(st)] = n
	}
	return out, rows.Err()
}
