package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"switchboard/internal/event"
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
	return wrap("CreateSchedule", s.tx(ctx, func(tx *sql.Tx) error {
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
	}))
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

// GetSchedule reads a schedule and its attempts in due order.
func (s *Store) GetSchedule(ctx context.Context, orgID, id string) (schedule.Schedule, []schedule.Attempt, error) {
	sc, err := scanSchedule(s.row(ctx, s.r, `SELECT `+scheduleCols+` FROM schedules WHERE org_id = ? AND id = ?`, orgID, id))
	if err != nil {
		return sc, nil, wrap("GetSchedule", notFound(err, "schedule"))
	}
	as, err := s.attempts(ctx, s.r, `a.schedule_id = ? ORDER BY a.due_at, a.id`, id)
	return sc, as, wrap("GetSchedule", err)
}

// ListSchedules lists schedules newest first with attempt counts.
func (s *Store) ListSchedules(ctx context.Context, orgID string, p store.Page) ([]store.ScheduleSummary, int, error) {
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM schedules WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, wrap("ListSchedules", err)
	}
	rows, err := s.query(ctx, s.r, `SELECT `+scheduleCols+` FROM schedules WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		orgID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListSchedules", err)
	}
	out := []store.ScheduleSummary{}
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			rows.Close()
			return nil, 0, wrap("ListSchedules", err)
		}
		out = append(out, store.ScheduleSummary{Schedule: sc})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, wrap("ListSchedules", err)
	}
	now := time.Now()
	for i := range out {
		if err := s.summarize(ctx, &out[i], now); err != nil {
			return nil, 0, wrap("ListSchedules", err)
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
	return out, wrap("CancelSchedule", err)
}

// liveAttempts counts a schedule's attempts that may still produce a
// call: pending, or dialed with a call not ended (schedule.Live).
func (s *Store) liveAttempts(ctx context.Context, q querier, scheduleID string) (int, error) {
	var n int
	err := s.row(ctx, q, `SELECT COUNT(*) FROM attempts a LEFT JOIN calls c ON c.id = a.call_id
		WHERE a.schedule_id = ? AND (a.state = 'pending' OR (a.state = 'dialed' AND COALESCE(c.status, 0) < 3))`, scheduleID).Scan(&n)
	return n, err
}

// Campaign settings of schedules (docs/ARCHITECTURE.md, "Campaign
// settings"): calling hours, retries, caps, pause.

// settingsJSON is how a schedule's hours and retry policy are stored: ""
// for the zero value (any time; no retry), the rows' meaning before they
// existed.
func settingsJSON(sc schedule.Schedule) (hours, retry string) {
	if !sc.Hours.AnyTime() {
		b, _ := json.Marshal(sc.Hours)
		hours = string(b)
	}
	if sc.Retry != (schedule.RetryPolicy{}) {
		b, _ := json.Marshal(sc.Retry)
		retry = string(b)
	}
	return hours, retry
}

func parseHours(s string) schedule.CallingHours {
	var h schedule.CallingHours
	if s != "" {
		_ = json.Unmarshal([]byte(s), &h)
	}
	return h
}

func parseRetry(s string) schedule.RetryPolicy {
	var p schedule.RetryPolicy
	if s != "" {
		_ = json.Unmarshal([]byte(s), &p)
	}
	return p
}

// allFinal is true of a schedule (alias sched) none of whose attempts is
// pending or has a live call.
const allFinal = `NOT EXISTS (SELECT 1 FROM attempts a WHERE a.schedule_id = sched.id AND a.state = 'pending')
	AND NOT EXISTS (SELECT 1 FROM attempts a JOIN calls c ON c.id = a.call_id
		WHERE a.schedule_id = sched.id AND a.state = 'dialed' AND c.status < 3)`

// DoneSchedules lists schedules whose attempts are all final and that are
// not marked completed, with their counts.
func (s *Store) DoneSchedules(ctx context.Context, limit int) ([]store.ScheduleSummary, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+scheduleSettingsCols+` FROM schedules sched WHERE sched.completed_at = 0 AND `+allFinal+`
		ORDER BY sched.created_at LIMIT ?`, limit)
	if err != nil {
		return nil, wrap("DoneSchedules", err)
	}
	var out []store.ScheduleSummary
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			rows.Close()
			return nil, wrap("DoneSchedules", err)
		}
		out = append(out, store.ScheduleSummary{Schedule: sc})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, wrap("DoneSchedules", err)
	}
	now := time.Now()
	for i := range out {
		if err := s.summarize(ctx, &out[i], now); err != nil {
			return nil, wrap("DoneSchedules", err)
		}
	}
	return out, nil
}

// CompleteSchedule marks a done schedule completed, once.
func (s *Store) CompleteSchedule(ctx context.Context, orgID, id string, at time.Time, ev event.Event) (bool, error) {
	marked := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		marked = false
		res, err := s.exec(ctx, tx, `UPDATE schedules AS sched SET completed_at = ? WHERE sched.org_id = ? AND sched.id = ? AND sched.completed_at = 0 AND `+allFinal,
			max(ms(at), 1), orgID, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		marked = true
		return s.queueEvents(ctx, tx, orgID, []event.Event{ev})
	})
	return marked, wrap("CompleteSchedule", err)
}

// SetSchedulePaused pauses or resumes a schedule.
func (s *Store) SetSchedulePaused(ctx context.Context, orgID, id string, paused bool, at time.Time, ev event.Event) (store.ScheduleChange, error) {
	var out store.ScheduleChange
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = store.ScheduleChange{}
		var was, canceled int64
		if err := s.row(ctx, tx, `SELECT paused_at, canceled_at FROM schedules WHERE org_id = ? AND id = ?`+s.forUpdate(), orgID, id).Scan(&was, &canceled); err != nil {
			return notFound(err, "schedule")
		}
		live, err := s.liveAttempts(ctx, tx, id)
		if err != nil {
			return err
		}
		state := func(pausedAt int64) {
			sc := schedule.Schedule{PausedAt: fromMS(pausedAt), CanceledAt: fromMS(canceled)}
			out.Paused, out.Canceled, out.State = pausedAt != 0, canceled != 0, sc.State(live)
		}
		// Over (canceled, or nothing left to dial), or so already:
		// nothing to change.
		if canceled != 0 || live == 0 || (was != 0) == paused {
			state(was)
			return nil
		}
		to := int64(0)
		if paused {
			to = max(ms(at), 1)
		}
		if _, err := s.exec(ctx, tx, `UPDATE schedules SET paused_at = ? WHERE id = ?`, to, id); err != nil {
			return err
		}
		out.Changed = true
		state(to)
		return s.queueEvents(ctx, tx, orgID, []event.Event{ev})
	})
	return out, wrap("SetSchedulePaused", err)
}
