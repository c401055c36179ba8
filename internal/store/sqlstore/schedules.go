package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// CreateSchedule stores a schedule and its attempts in one transaction.
func (s *Store) CreateSchedule(ctx context.Context, sc schedule.Schedule, attempts []schedule.Attempt) error {
	dates := make([]string, len(sc.Dates))
	for i, d := range sc.Dates {
		dates[i] = d.UTC().Format(schedule.DateLayout)
	}
	datesJSON, _ := json.Marshal(dates)
	contactsJSON, _ := json.Marshal(sc.ContactIDs)
	hours, retry := settingsJSON(sc)
	return s.tx(ctx, func(tx *sql.Tx) error {
		// The number must still be held; the row lock makes a concurrent
		// ReleasePurchase wait and then see these pending attempts.
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM purchases WHERE org_id = ? AND id = ? AND released_at = 0`+s.forShare(), sc.OrgID, sc.PurchaseID).Scan(&one); err != nil {
			return notFound(err, "phone purchase")
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO schedules (id, org_id, name, purchase_id, message, timezone, dates, contact_ids, created_at,
			calling_hours, retry, max_concurrent_calls, paused_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			sc.ID, sc.OrgID, sc.Name, sc.PurchaseID, sc.Message, sc.Timezone, string(datesJSON), string(contactsJSON), ms(sc.CreatedAt),
			hours, retry, sc.MaxConcurrentCalls, ms(sc.PausedAt)); err != nil {
			return err
		}
		// Multi-row inserts: one statement per 100 attempts.
		const batch = 100
		for start := 0; start < len(attempts); start += batch {
			chunk := attempts[start:min(start+batch, len(attempts))]
			args := make([]any, 0, len(chunk)*9)
			vals := make([]byte, 0, len(chunk)*28)
			for i, a := range chunk {
				if i > 0 {
					vals = append(vals, ", "...)
				}
				vals = append(vals, "(?, ?, ?, ?, ?, ?, ?, ?, ?)"...)
				requested := a.RequestedAt
				if requested.IsZero() {
					requested = a.DueAt
				}
				args = append(args, a.ID, sc.OrgID, sc.ID, a.ContactID, ms(requested), ms(a.DueAt), string(schedule.Pending), ms(sc.CreatedAt), ms(sc.CreatedAt))
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO attempts (id, org_id, schedule_id, contact_id, requested_at, due_at, state, created_at, updated_at) VALUES `+string(vals), args...); err != nil {
				return err
			}
		}
		return nil
	})
}

const scheduleCols = `id, org_id, name, purchase_id, message, timezone, dates, contact_ids, created_at, canceled_at,
	calling_hours, retry, max_concurrent_calls, paused_at`

// scheduleSettingsCols are scheduleCols without the dates and contacts
// (read as ”: scanSchedule leaves them nil): a campaign's contact list
// holds every contact's id, which a dial and a call's end, one per
// attempt, must not read and parse each time.
const scheduleSettingsCols = `id, org_id, name, purchase_id, message, timezone, '', '', created_at, canceled_at,
	calling_hours, retry, max_concurrent_calls, paused_at`

func scanSchedule(sc interface{ Scan(...any) error }) (schedule.Schedule, error) {
	var s schedule.Schedule
	var dates, contacts, hours, retry string
	var created, canceled, paused int64
	if err := sc.Scan(&s.ID, &s.OrgID, &s.Name, &s.PurchaseID, &s.Message, &s.Timezone, &dates, &contacts, &created, &canceled,
		&hours, &retry, &s.MaxConcurrentCalls, &paused); err != nil {
		return s, err
	}
	s.Hours, s.Retry, s.PausedAt = parseHours(hours), parseRetry(retry), fromMS(paused)
	var ds []string
	_ = json.Unmarshal([]byte(dates), &ds) // '' (scheduleSettingsCols): none
	for _, d := range ds {
		t, _ := schedule.ParseDate(d)
		s.Dates = append(s.Dates, t)
	}
	_ = json.Unmarshal([]byte(contacts), &s.ContactIDs)
	s.CreatedAt, s.CanceledAt = fromMS(created), fromMS(canceled)
	return s, nil
}

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

// GetSchedule reads a schedule and its attempts in due order.
func (s *Store) GetSchedule(ctx context.Context, orgID, id string) (schedule.Schedule, []schedule.Attempt, error) {
	sc, err := scanSchedule(s.row(ctx, s.r, `SELECT `+scheduleCols+` FROM schedules WHERE org_id = ? AND id = ?`, orgID, id))
	if err != nil {
		return sc, nil, notFound(err, "schedule")
	}
	as, err := s.attempts(ctx, s.r, `a.schedule_id = ? ORDER BY a.due_at, a.id`, id)
	return sc, as, err
}

// ListSchedules lists schedules newest first with attempt counts.
func (s *Store) ListSchedules(ctx context.Context, orgID string, p store.Page) ([]store.ScheduleSummary, int, error) {
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM schedules WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.query(ctx, s.r, `SELECT `+scheduleCols+` FROM schedules WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		orgID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, err
	}
	out := []store.ScheduleSummary{}
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			rows.Close()
			return nil, 0, err
		}
		out = append(out, store.ScheduleSummary{Schedule: sc})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	now := time.Now()
	for i := range out {
		if err := s.summarize(ctx, &out[i], now); err != nil {
			return nil, 0, err
		}
	}
	return out, total, nil
}

// summarize counts sum's attempts by progress (Attempts) and into its
// campaign counters (Progress), as read at now, with one grouped query.
func (s *Store) summarize(ctx context.Context, sum *store.ScheduleSummary, now time.Time) error {
	sum.Attempts, sum.Progress = map[string]int{}, schedule.Counters{Completed: map[string]int{}}
	rows, err := s.query(ctx, s.r, `SELECT a.state, CASE WHEN c.status = 3 THEN 1 ELSE 0 END, COALESCE(c.outcome, ''),
		CASE WHEN a.state = 'pending' AND a.leased_until > ? THEN 1 ELSE 0 END, COUNT(*)
		FROM attempts a LEFT JOIN calls c ON c.id = a.call_id AND a.call_id <> ''
		WHERE a.schedule_id = ? GROUP BY 1, 2, 3, 4`, ms(now), sum.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var st, outcome string
		var ended, leased, n int
		if err := rows.Scan(&st, &ended, &outcome, &leased, &n); err != nil {
			return err
		}
		sum.Attempts[schedule.Progress(schedule.AttemptState(st), ended == 1)] += n
		sum.Progress.Add(schedule.AttemptState(st), leased == 1, ended == 1, outcome, n)
	}
	return rows.Err()
}

// CancelSchedule cancels a schedule's pending attempts.
func (s *Store) CancelSchedule(ctx context.Context, orgID, id string, at time.Time) (store.ScheduleChange, error) {
	var out store.ScheduleChange
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = store.ScheduleChange{}
		// The schedule's row lock, taken first, orders the cancel with
		// the retry of a call's end (EndAttemptCall shares it).
		var sc schedule.Schedule
		var paused, canceled int64
		if err := s.row(ctx, tx, `SELECT paused_at, canceled_at FROM schedules WHERE org_id = ? AND id = ?`+s.forUpdate(), orgID, id).Scan(&paused, &canceled); err != nil {
			return notFound(err, "schedule")
		}
		res, err := s.exec(ctx, tx, `UPDATE attempts SET state = 'canceled', updated_at = ? WHERE schedule_id = ? AND state = 'pending'`, ms(at), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		out.CanceledAttempts = int(n)
		// None pending: canceled all the same while a call of it is live,
		// so that its end does not retry it.
		live, err := s.liveAttempts(ctx, tx, id)
		if err != nil {
			return err
		}
		if canceled == 0 && (n > 0 || live > 0) {
			canceled = ms(at)
			if _, err := s.exec(ctx, tx, `UPDATE schedules SET canceled_at = ? WHERE id = ?`, canceled, id); err != nil {
				return err
			}
			out.Changed = true
		}
		out.Changed = out.Changed || n > 0
		sc.PausedAt, sc.CanceledAt = fromMS(paused), fromMS(canceled)
		out.Paused, out.Canceled, out.State = paused != 0, canceled != 0, sc.State(live)
		return nil
	})
	return out, err
}

// liveAttempts counts a schedule's attempts that may still produce a
// call: pending, or dialed with a call not ended (schedule.Live).
func (s *Store) liveAttempts(ctx context.Context, q querier, scheduleID string) (int, error) {
	var n int
	err := s.row(ctx, q, `SELECT COUNT(*) FROM attempts a LEFT JOIN calls c ON c.id = a.call_id
		WHERE a.schedule_id = ? AND (a.state = 'pending' OR (a.state = 'dialed' AND COALESCE(c.status, 0) < 3))`, scheduleID).Scan(&n)
	return n, err
}

// GetAttempt reads an attempt with its schedule.
func (s *Store) GetAttempt(ctx context.Context, id string) (schedule.Attempt, schedule.Schedule, error) {
	as, err := s.attempts(ctx, s.r, `a.id = ?`, id)
	if err != nil {
		return schedule.Attempt{}, schedule.Schedule{}, err
	}
	if len(as) == 0 {
		return schedule.Attempt{}, schedule.Schedule{}, apperr.NotFoundf("attempt not found")
	}
	sc, err := scanSchedule(s.row(ctx, s.r, `SELECT `+scheduleSettingsCols+` FROM schedules WHERE id = ?`, as[0].ScheduleID))
	return as[0], sc, notFound(err, "schedule")
}

// FailAttempt marks a pending attempt failed.
func (s *Store) FailAttempt(ctx context.Context, id, reason string, at time.Time) error {
	res, err := s.exec(ctx, s.w, `UPDATE attempts SET state = 'failed', error = ?, updated_at = ? WHERE id = ? AND state = 'pending'`, reason, ms(at), id)
	return affected(res, err, "pending attempt")
}

// LeaseAttempts leases pending attempts that are due and unleased, under
// no server caps (LeaseAttemptsUnder).
func (s *Store) LeaseAttempts(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]schedule.Attempt, error) {
	return s.LeaseAttemptsUnder(ctx, now, lease, limit, schedule.Caps{})
}

// LeasedAttempts counts pending attempts whose lease runs past now.
func (s *Store) LeasedAttempts(ctx context.Context, now time.Time) (int, error) {
	var n int
	err := s.row(ctx, s.r, `SELECT COUNT(*) FROM attempts WHERE state = 'pending' AND leased_until > ?`, ms(now)).Scan(&n)
	return n, err
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
		return nil, err
	}
	// The attempts are picked alone (up to MaxLeased are handed out; a
	// claim takes a few hundred), then joined to their number and phone.
	c := claim{Table: "attempts", Alias: "a", Key: "id", Lease: "dial_until",
		Select: `SELECT a.id FROM attempts a WHERE ` + dialable + ` ORDER BY a.due_at, a.id LIMIT ?`,
		Join: `SELECT a.id, a.org_id, a.schedule_id, a.contact_id, a.due_at, a.leases, a.leased_until, sc.purchase_id, COALESCE(ct.phone_number, '')
			FROM picked JOIN attempts a ON a.id = picked.id JOIN schedules sc ON sc.id = a.schedule_id
			LEFT JOIN contacts ct ON ct.id = a.contact_id AND ct.org_id = a.org_id ORDER BY a.due_at, a.id`}
	var out []store.Dial
	err = s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, hold, limit, func(rows *sql.Rows) (string, error) {
			d := store.Dial{Attempt: schedule.Attempt{State: schedule.Pending}}
			var due, until int64
			if err := rows.Scan(&d.ID, &d.OrgID, &d.ScheduleID, &d.ContactID, &due, &d.Leases, &until, &d.PurchaseID, &d.To); err != nil {
				return "", err
			}
			d.DueAt, d.LeasedUntil = fromMS(due), fromMS(until)
			out = append(out, d)
			return d.ID, nil
		}, ms(now), ms(now))
		return err
	})
	return out, err
}
