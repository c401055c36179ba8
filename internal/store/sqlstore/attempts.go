package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

const attemptCols = `a.id, a.org_id, a.schedule_id, a.contact_id, a.due_at, a.state, a.call_id, a.error, a.updated_at, a.leases, a.leased_until,
	COALESCE(c.status, -1), COALESCE(c.outcome, ''), a.requested_at, a.tries, a.lease_base, COALESCE(c.ended_reason, ''), COALESCE(c.created_at, 0)`

func scanAttempt(sc interface{ Scan(...any) error }) (schedule.Attempt, error) {
	var a schedule.Attempt
	var state, tries string
	var due, updated, leased, requested, callCreated int64
	err := sc.Scan(&a.ID, &a.OrgID, &a.ScheduleID, &a.ContactID, &due, &state, &a.CallID, &a.Error, &updated, &a.Leases, &leased,
		&a.CallStatus, &a.CallOutcome, &requested, &tries, &a.LeaseBase, &a.CallEndedReason, &callCreated)
	a.State, a.DueAt, a.UpdatedAt, a.LeasedUntil = schedule.AttemptState(state), fromMS(due), fromMS(updated), fromMS(leased)
	a.RequestedAt, a.Tries, a.CallCreatedAt = fromMS(requested), parseTries(tries), fromMS(callCreated)
	return a, err
}

func (s *Store) attempts(ctx context.Context, q querier, where string, args ...any) ([]schedule.Attempt, error) {
	rows, err := s.query(ctx, q, `SELECT `+attemptCols+` FROM attempts a LEFT JOIN calls c ON c.id = a.call_id AND a.call_id <> '' WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []schedule.Attempt{}
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// GetAttempt reads an attempt with its schedule.
func (s *Store) GetAttempt(ctx context.Context, id string) (schedule.Attempt, schedule.Schedule, error) {
	as, err := s.attempts(ctx, s.r, `a.id = ?`, id)
	if err != nil {
		return schedule.Attempt{}, schedule.Schedule{}, wrap("GetAttempt", err)
	}
	if len(as) == 0 {
		return schedule.Attempt{}, schedule.Schedule{}, apperr.NotFoundf("attempt not found")
	}
	sc, err := scanSchedule(s.row(ctx, s.r, `SELECT `+scheduleSettingsCols+` FROM schedules WHERE id = ?`, as[0].ScheduleID))
	return as[0], sc, wrap("GetAttempt", notFound(err, "schedule"))
}

// FailAttempt marks a pending attempt failed.
func (s *Store) FailAttempt(ctx context.Context, id, reason string, at time.Time) error {
	res, err := s.exec(ctx, s.w, `UPDATE attempts SET state = 'failed', error = ?, updated_at = ? WHERE id = ? AND state = 'pending'`, reason, ms(at), id)
	return wrap("FailAttempt", affected(res, err, "pending attempt"))
}

// LeasedAttempts counts pending attempts whose lease runs past now.
func (s *Store) LeasedAttempts(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.row(ctx, s.r, `SELECT COUNT(*) FROM attempts WHERE state = 'pending' AND leased_until > ?`, ms(now)).Scan(&n)
	return n, wrap("LeasedAttempts", err)
}

// ClaimDials holds handed-out attempts for a node's dialer, each with its
// schedule's number and its contact's phone number.
func (s *Store) ClaimDials(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]store.Dial, error) {
	// Every node asks every tenth of a second, mostly to hear "nothing":
	// a read on the reader pool answers that without a write transaction.
	const dialable = `a.state = 'pending' AND a.leased_until > ? AND a.dial_until <= ?`
	var one int
	err := s.row(ctx, s.r, `SELECT 1 FROM attempts a WHERE `+dialable+` LIMIT 1`, ms(now), ms(now)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("ClaimDials", err)
	}
	// The attempts are picked alone (up to MaxLeased are handed out; a
	// claim takes a few hundred), then joined to their number and phone.
	c := claim{Table: "attempts", Alias: "a", Key: "id", Lease: "dial_until",
		Select: `SELECT a.id FROM attempts a WHERE ` + dialable + ` ORDER BY a.due_at, a.id LIMIT ?`,
		Join: `SELECT a.id, a.org_id, a.schedule_id, a.contact_id, a.due_at, a.leases, a.leased_until, sc.purchase_id, COALESCE(ct.phone_number, ''),
			COALESCE(ct.id, ''), COALESCE(ct.name, ''), COALESCE(ct.timezone, ''), COALESCE(ct.metadata, ''), sc.message, sc.timezone
			FROM picked JOIN attempts a ON a.id = picked.id JOIN schedules sc ON sc.id = a.schedule_id
			LEFT JOIN contacts ct ON ct.id = a.contact_id AND ct.org_id = a.org_id ORDER BY a.due_at, a.id`}
	var out []store.Dial
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, hold, limit, func(rows *sql.Rows) (string, error) {
			d := store.Dial{Attempt: schedule.Attempt{State: schedule.Pending}}
			var due, until int64
			var meta string
			if err := rows.Scan(&d.ID, &d.OrgID, &d.ScheduleID, &d.ContactID, &due, &d.Leases, &until, &d.PurchaseID, &d.To,
				&d.Contact.ID, &d.Contact.Name, &d.Contact.Timezone, &meta, &d.Message, &d.Timezone); err != nil {
				return "", err
			}
			if d.Contact.ID != "" {
				d.Contact.OrgID, d.Contact.PhoneNumber, d.Contact.Metadata = d.OrgID, d.To, json.RawMessage(meta)
			}
			d.DueAt, d.LeasedUntil = fromMS(due), fromMS(until)
			out = append(out, d)
			return d.ID, nil
		}, ms(now), ms(now))
		return err
	})
	return out, wrap("ClaimDials", err)
}

// storedTry is a Try as stored in attempts.tries (times in Unix ms).
type storedTry struct {
	Due         int64  `json:"due"`
	DialedAt    int64  `json:"dialedAt"`
	CallID      string `json:"callId"`
	Outcome     string `json:"outcome"`
	EndedReason string `json:"endedReason"`
}

func parseTries(s string) []schedule.Try {
	if s == "" {
		return nil
	}
	var st []storedTry
	_ = json.Unmarshal([]byte(s), &st)
	out := make([]schedule.Try, len(st))
	for i, t := range st {
		out[i] = schedule.Try{Due: fromMS(t.Due), DialedAt: fromMS(t.DialedAt), CallID: t.CallID, Outcome: t.Outcome, EndedReason: t.EndedReason}
	}
	return out
}

func triesJSON(ts []schedule.Try) string {
	st := make([]storedTry, len(ts))
	for i, t := range ts {
		st[i] = storedTry{Due: ms(t.Due), DialedAt: ms(t.DialedAt), CallID: t.CallID, Outcome: t.Outcome, EndedReason: t.EndedReason}
	}
	b, _ := json.Marshal(st)
	return string(b)
}

// liveCounts are the live calls per schedule, number (purchase) and
// organization.
type liveCounts struct {
	sched, number, org map[string]int
}

func (l liveCounts) add(orgID, purchaseID, scheduleID string) {
	l.org[orgID]++
	l.number[purchaseID]++
	if scheduleID != "" {
		l.sched[scheduleID]++
	}
}

// countLive counts the live calls (phone calls not ended, on any node)
// and the attempts leased and not yet dialed.
func (s *Store) countLive(ctx context.Context, tx *sql.Tx, now time.Time) (liveCounts, error) {
	l := liveCounts{sched: map[string]int{}, number: map[string]int{}, org: map[string]int{}}
	rows, err := s.query(ctx, tx, `SELECT c.org_id, c.purchase_id, COALESCE(a.schedule_id, '') FROM calls c
			LEFT JOIN attempts a ON a.id = c.attempt_id AND c.attempt_id <> ''
			WHERE c.status < 3 AND c.type = 'phone'
		UNION ALL
		SELECT a.org_id, s.purchase_id, a.schedule_id FROM attempts a JOIN schedules s ON s.id = a.schedule_id
			WHERE a.state = 'pending' AND a.leased_until > ?`, ms(now))
	if err != nil {
		return l, err
	}
	defer rows.Close()
	for rows.Next() {
		var org, purchase, sched string
		if err := rows.Scan(&org, &purchase, &sched); err != nil {
			return l, err
		}
		l.add(org, purchase, sched)
	}
	return l, rows.Err()
}

// leaseCandidate is a due attempt with what deciding its lease needs.
type leaseCandidate struct {
	a          schedule.Attempt
	purchaseID string
	zone       string // the contact's timezone, else the schedule's
	schedTZ    string
	hours      string
	schedCap   int
	orgCaps    schedule.Caps
}

// leasePages bounds the pages of due attempts one LeaseAttempts
// reads: each page after the first excludes the schedules, numbers and
// organizations found full on the pages before.
const leasePages = 20

// LeaseAttempts leases due attempts inside their hours and under every cap.
func (s *Store) LeaseAttempts(ctx context.Context, now time.Time, lease time.Duration, limit int, caps schedule.Caps) ([]schedule.Attempt, error) {
	// Every promotion asks every fraction of a second, mostly to hear
	// "nothing": a read on the reader pool answers that without a write
	// transaction (on SQLite, the one writer every API write and the
	// queue share).
	var one int
	err := s.row(ctx, s.r, `SELECT 1 FROM attempts a WHERE a.state = 'pending' AND a.due_at <= ? AND a.leased_until <= ?
		AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = a.schedule_id AND s.paused_at <> 0) LIMIT 1`, ms(now), ms(now)).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap("LeaseAttempts", err)
	}
	var out []schedule.Attempt
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		capped, err := s.anyCaps(ctx, tx, caps)
		if err != nil {
			return err
		}
		var live liveCounts
		if capped {
			if live, err = s.countLive(ctx, tx, now); err != nil {
				return err
			}
		}
		full := map[string]map[string]bool{"a.schedule_id": {}, "s.purchase_id": {}, "a.org_id": {}}
		locs := map[string]*time.Location{}
		hours := map[string]schedule.CallingHours{}
		for page := 0; page < leasePages && len(out) < limit; page++ {
			want := limit - len(out)
			cands, err := s.dueCandidates(ctx, tx, now, want, full)
			if err != nil || len(cands) == 0 {
				return err
			}
			var leased []schedule.Attempt
			for _, c := range cands {
				h, ok := hours[c.a.ScheduleID]
				if !ok {
					h = parseHours(c.hours)
					hours[c.a.ScheduleID] = h
				}
				loc, ok := locs[c.zone]
				if !ok {
					loc = schedule.Zone(c.zone, c.schedTZ)
					locs[c.zone] = loc
				}
				if next := schedule.NextOpening(now, loc, h); next.After(now) {
					// Handed out late, past the window: wait for the next opening.
					if _, err := s.exec(ctx, tx, `UPDATE attempts SET due_at = ?, updated_at = ? WHERE id = ?`, ms(next), ms(now), c.a.ID); err != nil {
						return err
					}
					continue
				}
				if capped {
					oc := caps.Lower(c.orgCaps)
					over := func(key string, n, limit int) bool {
						if limit > 0 && n >= limit {
							full[key][keyOf(key, c)] = true
							return true
						}
						return false
					}
					if over("a.schedule_id", live.sched[c.a.ScheduleID], c.schedCap) ||
						over("s.purchase_id", live.number[c.purchaseID], oc.PerNumber) ||
						over("a.org_id", live.org[c.a.OrgID], oc.PerOrg) {
						continue
					}
					live.add(c.a.OrgID, c.purchaseID, c.a.ScheduleID)
				}
				a := c.a
				a.Leases, a.LeasedUntil = a.Leases+1, fromMS(ms(now.Add(lease)))
				leased = append(leased, a)
			}
			ids := make([]string, len(leased))
			for i, a := range leased {
				ids[i] = a.ID
			}
			if err := handOut.lease(ctx, s, tx, now, lease, ids); err != nil {
				return err
			}
			out = append(out, leased...)
			if len(cands) < want {
				return nil // every due attempt was seen
			}
		}
		return nil
	})
	return out, wrap("LeaseAttempts", err)
}

func keyOf(key string, c leaseCandidate) string {
	switch key {
	case "a.schedule_id":
		return c.a.ScheduleID
	case "s.purchase_id":
		return c.purchaseID
	}
	return c.a.OrgID
}

// anyCaps reports whether any cap may apply: the server's, an
// organization's or a running schedule's. Without one, leasing counts no
// live calls.
func (s *Store) anyCaps(ctx context.Context, tx *sql.Tx, caps schedule.Caps) (bool, error) {
	if caps != (schedule.Caps{}) {
		return true, nil
	}
	var one int
	err := s.row(ctx, tx, `SELECT 1 FROM orgs WHERE max_concurrent_calls > 0 OR max_concurrent_calls_per_number > 0
		UNION ALL SELECT 1 FROM schedules WHERE max_concurrent_calls > 0 AND canceled_at = 0 LIMIT 1`).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// dueCandidates reads up to limit due, unleased attempts of schedules
// not paused, earliest first, except those of the full keys, locking them
// (SKIP LOCKED on PostgreSQL: two promoters never lease the same one).
// The attempts are picked from attempts alone, in the order of its index
// attempts_due (state, due_at, id), which stops at the limit however many
// are due (a join in the ordered part let PostgreSQL read and sort every
// due attempt — 7,800 in a burst, 78 ms a promotion); only the picked rows
// are joined to their schedule, contact and organization.
func (s *Store) dueCandidates(ctx context.Context, tx *sql.Tx, now time.Time, limit int, full map[string]map[string]bool) ([]leaseCandidate, error) {
	var where strings.Builder
	args := []any{ms(now), ms(now)}
	for _, key := range []string{"a.schedule_id", "a.org_id"} {
		if ids := full[key]; len(ids) > 0 {
			where.WriteString(" AND " + key + " NOT IN (" + placeholders(len(ids)) + ")")
			for id := range ids {
				args = append(args, id)
			}
		}
	}
	// A paused schedule's attempts, and those of a full number, are left
	// out by one anti-join on the schedule.
	skip := "s.paused_at <> 0"
	if ids := full["s.purchase_id"]; len(ids) > 0 {
		skip = "(" + skip + " OR s.purchase_id IN (" + placeholders(len(ids)) + "))"
		for id := range ids {
			args = append(args, id)
		}
	}
	args = append(args, limit)
	rows, err := s.query(ctx, tx, `WITH picked AS (SELECT a.id FROM attempts a
			WHERE a.state = 'pending' AND a.due_at <= ? AND a.leased_until <= ?`+where.String()+`
			AND NOT EXISTS (SELECT 1 FROM schedules s WHERE s.id = a.schedule_id AND `+skip+`)
			ORDER BY a.state, a.due_at, a.id LIMIT ?`+s.skipLockedOf("a")+`)
		SELECT a.id, a.org_id, a.schedule_id, a.contact_id, a.due_at, a.leases, a.lease_base,
			s.purchase_id, s.timezone, s.calling_hours, s.max_concurrent_calls, COALESCE(ct.timezone, ''),
			COALESCE(o.max_concurrent_calls, 0), COALESCE(o.max_concurrent_calls_per_number, 0)
		FROM picked JOIN attempts a ON a.id = picked.id JOIN schedules s ON s.id = a.schedule_id
		LEFT JOIN contacts ct ON ct.id = a.contact_id LEFT JOIN orgs o ON o.id = a.org_id
		ORDER BY a.due_at, a.id`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []leaseCandidate
	for rows.Next() {
		c := leaseCandidate{a: schedule.Attempt{State: schedule.Pending}}
		var due int64
		if err := rows.Scan(&c.a.ID, &c.a.OrgID, &c.a.ScheduleID, &c.a.ContactID, &due, &c.a.Leases, &c.a.LeaseBase,
			&c.purchaseID, &c.schedTZ, &c.hours, &c.schedCap, &c.zone, &c.orgCaps.PerOrg, &c.orgCaps.PerNumber); err != nil {
			return nil, err
		}
		c.a.DueAt = fromMS(due)
		if c.zone == "" {
			c.zone = c.schedTZ
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// handOut is the promoter's lease on attempts (LeaseAttempts).
var handOut = claim{Table: "attempts", Key: "id", Lease: "leased_until", Count: "leases"}

// EndAttemptCall saves the call and, when it has just ended, does end to its attempt.
func (s *Store) EndAttemptCall(ctx context.Context, c call.Call, prev call.Status, end store.AttemptEnd, events ...event.Event) error {
	return wrap("EndAttemptCall", s.tx(ctx, func(tx *sql.Tx) error {
		deltas, err := s.updateCall(ctx, tx, c, prev, events)
		if err != nil {
			return err
		}
		if err := s.retryAttempt(ctx, tx, c, prev, end); err != nil {
			return err
		}
		return s.bumpCounts(ctx, tx, deltas) // last: see updateCall
	}))
}

// retryAttempt does end to the attempt of a call that has just ended: a
// retry sends it back to pending, its try recorded.
func (s *Store) retryAttempt(ctx context.Context, tx *sql.Tx, c call.Call, prev call.Status, end store.AttemptEnd) error {
	if !end.Retry || c.AttemptID == "" || c.Status != call.Ended || prev == call.Ended {
		return nil
	}
	// A shared lock on the schedule's row orders the retry with a
	// cancel, which locks it first (CancelSchedule): the cancel either
	// sees the attempt pending again and cancels it, or is seen here.
	// The ends of one schedule's calls do not wait for each other.
	var canceled int64
	err := s.row(ctx, tx, `SELECT s.canceled_at FROM schedules s WHERE s.id = (SELECT a.schedule_id FROM attempts a WHERE a.id = ?)`+s.forShare(),
		c.AttemptID).Scan(&canceled)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && canceled != 0) {
		return nil
	}
	if err != nil {
		return err
	}
	var tries string
	var due int64
	err = s.row(ctx, tx, `SELECT tries, due_at FROM attempts WHERE id = ? AND state = 'dialed' AND call_id = ?`, c.AttemptID, c.ID).Scan(&tries, &due)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // not the attempt's current try
	}
	if err != nil {
		return err
	}
	ts := append(parseTries(tries), schedule.Try{Due: fromMS(due), DialedAt: c.CreatedAt, CallID: c.ID, Outcome: string(c.Outcome), EndedReason: c.EndedReason})
	if _, err := s.exec(ctx, tx, `UPDATE attempts SET state = 'pending', call_id = '', tries = ?, requested_at = ?, due_at = ?,
			leased_until = 0, lease_base = leases, updated_at = ? WHERE id = ?`,
		triesJSON(ts), ms(end.RequestedAt), ms(end.DueAt), ms(c.UpdatedAt), c.AttemptID); err != nil {
		return err
	}
	return s.queueEvents(ctx, tx, c.OrgID, []event.Event{end.Retrying})
}
