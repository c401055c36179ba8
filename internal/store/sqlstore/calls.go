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
	"switchboard/internal/event"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

const callCols = `id, org_id, type, status, assistant_id, purchase_id, from_number, to_number, provider, attempt_id, outcome, ended_reason, created_at, updated_at, started_at, ended_at, result, direction, provider_call_id, recording, public_key_id, node_id, variables, routing`

func scanCall(sc interface{ Scan(...any) error }) (call.Call, error) {
	var c call.Call
	var typ, outcome, result, direction, variables, routing string
	var status int
	var created, updated, started, ended int64
	err := sc.Scan(&c.ID, &c.OrgID, &typ, &status, &c.AssistantID, &c.PurchaseID, &c.From, &c.To, &c.Provider, &c.AttemptID,
		&outcome, &c.EndedReason, &created, &updated, &started, &ended, &result, &direction, &c.ProviderCallID, &c.Recording, &c.PublicKeyID, &c.NodeID, &variables, &routing)
	c.Direction = call.Direction(direction)
	if result != "" {
		_ = json.Unmarshal([]byte(result), &c.Result)
	}
	if variables != "" {
		c.Variables = json.RawMessage(variables)
	}
	if routing != "" {
		c.Routing = json.RawMessage(routing)
	}
	c.Type, c.Status, c.Outcome = call.Type(typ), call.Status(status), call.Outcome(outcome)
	c.CreatedAt, c.UpdatedAt, c.StartedAt, c.EndedAt = fromMS(created), fromMS(updated), fromMS(started), fromMS(ended)
	return c, err
}

// GetCall reads one of the organization's calls.
func (s *Store) GetCall(ctx context.Context, orgID, id string) (call.Call, error) {
	c, err := scanCall(s.row(ctx, s.r, `SELECT `+callCols+` FROM calls WHERE org_id = ? AND id = ?`, orgID, id))
	return c, wrap("GetCall", notFound(err, "call"))
}

// GetCallAnyOrg reads a call by id alone.
func (s *Store) GetCallAnyOrg(ctx context.Context, id string) (call.Call, error) {
	c, err := scanCall(s.row(ctx, s.r, `SELECT `+callCols+` FROM calls WHERE id = ?`, id))
	return c, wrap("GetCallAnyOrg", notFound(err, "call"))
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
			return nil, wrap("GetCallsAnyOrg", err)
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
		return nil, 0, wrap("ListCalls", err)
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
		return nil, 0, wrap("ListCalls", err)
	}
	if f.Number == "" {
		if out, err = s.listPage(ctx, cond, args, f, total); err != nil {
			return nil, 0, wrap("ListCalls", err)
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
func (s *Store) UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...event.Event) error {
	return wrap("UpdateCall", only(s.UpdateCalls(ctx, []store.CallUpdate{{Call: c, Prev: prev, Events: events}})))
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
		return nil, wrap("UpdateCalls", err)
	}
	return errs, nil
}

// updateCall is UpdateCall inside the caller's transaction, but for the
// totals: it returns their deltas, which the caller applies last
// (bumpCounts), so that the totals' rows are locked only from then until
// the commit.
func (s *Store) updateCall(ctx context.Context, tx *sql.Tx, c call.Call, prev call.Status, events []event.Event) ([]countDelta, error) {
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
		byOrg  = map[string][]event.Event{}
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
	return wrap("SetCallRecording", s.tx(ctx, func(tx *sql.Tx) error {
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
	}))
}

// StaleCalls lists live calls not updated since before.
func (s *Store) StaleCalls(ctx context.Context, before time.Time, limit int) ([]call.Call, error) {
	cs, err := s.queryCalls(ctx, `SELECT `+callCols+` FROM calls WHERE status IN (0, 1, 2) AND updated_at < ? ORDER BY updated_at LIMIT ?`, ms(before), limit)
	return cs, wrap("StaleCalls", err)
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

// CreateCall stores one call: CreateCalls of one.
func (s *Store) CreateCall(ctx context.Context, c call.Call, suppressed ...event.Event) error {
	return wrap("CreateCall", only(s.CreateCalls(ctx, []store.NewCall{{Call: c, Suppressed: suppressed}})))
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
		return nil, wrap("CreateCalls", err)
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
				string(c.Direction), c.ProviderCallID, c.Recording, c.PublicKeyID, c.NodeID, string(c.Variables), string(c.Routing)}
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
