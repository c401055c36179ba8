package nodetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Burst is a schedule made for a multi-node run: N contacts on one
// sandbox number, one call each, all due at one instant.
type Burst struct {
	ScheduleID string
	Due        time.Time
	Attempts   int
}

// ScheduleBurst sets up a campaign of n contacts (NewCampaign) on the node
// at base and schedules one call to each at due (extra: more fields of the
// schedule-call body, such as caps).
func ScheduleBurst(ctx context.Context, base, key string, n int, due time.Time, extra map[string]any) (Burst, error) {
	c, err := NewCampaign(ctx, base, key, n)
	if err != nil {
		return Burst{}, err
	}
	id, err := c.Schedule(ctx, base, key, due, extra)
	return Burst{ScheduleID: id, Due: due.UTC().Truncate(time.Millisecond), Attempts: n}, err
}

// Dialing is what the database says of a burst's dials.
type Dialing struct {
	// Dialed attempts have a call; Pending ones do not yet.
	Dialed, Pending int
	// Doubled is how many attempts have more than one call.
	Doubled int
	// Lateness is, for each call, its creation time less its attempt's
	// due time, sorted.
	Lateness []time.Duration
}

// Quantile of sorted durations (nearest rank).
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// WaitDialed polls until every attempt of the campaign has left pending, or
// wait runs out, and reads the dials.
func (p *Probe) WaitDialed(ctx context.Context, c Burst, wait time.Duration) (Dialing, error) {
	var d Dialing
	deadline := time.Now().Add(wait)
	for {
		pending, err := p.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state = 'pending'`, c.ScheduleID)
		if err != nil {
			return d, err
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return p.Dialing(ctx, c)
}

// Dialing reads a burst's dials as they stand.
func (p *Probe) Dialing(ctx context.Context, c Burst) (Dialing, error) {
	var d Dialing
	pending, err := p.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state = 'pending'`, c.ScheduleID)
	if err != nil {
		return d, err
	}
	d.Pending = int(pending)
	doubled, err := p.Doubled(ctx, c.ScheduleID)
	if err != nil {
		return d, err
	}
	d.Doubled = int(doubled)
	rows, err := p.db.QueryContext(ctx, p.rebind(`SELECT c.created_at - a.due_at FROM calls c JOIN attempts a ON a.id = c.attempt_id WHERE a.schedule_id = ?`), c.ScheduleID)
	if err != nil {
		return d, err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var ms int64
		if err := rows.Scan(&ms); err != nil {
			return d, err
		}
		d.Lateness = append(d.Lateness, time.Duration(ms)*time.Millisecond)
		seen++
	}
	if err := rows.Err(); err != nil {
		return d, err
	}
	slices.Sort(d.Lateness)
	dialed, err := p.Int(ctx, `SELECT COUNT(DISTINCT c.attempt_id) FROM calls c JOIN attempts a ON a.id = c.attempt_id WHERE a.schedule_id = ?`, c.ScheduleID)
	if err != nil {
		return d, err
	}
	d.Dialed = int(dialed)
	if seen == 0 && d.Dialed > 0 {
		return d, errors.New("nodetest: calls counted but none read")
	}
	return d, nil
}

// String summarizes the dials.
func (d Dialing) String() string {
	return fmt.Sprintf("dialed %d (pending %d, doubled %d), lateness p50 %v p99 %v max %v", d.Dialed, d.Pending, d.Doubled,
		Quantile(d.Lateness, 0.5), Quantile(d.Lateness, 0.99), Quantile(d.Lateness, 1))
}

// Doubled counts the schedule's attempts that have more than one call.
func (p *Probe) Doubled(ctx context.Context, scheduleID string) (int64, error) {
	return p.Int(ctx, `SELECT COUNT(*) FROM (SELECT c.attempt_id FROM calls c JOIN attempts a ON a.id = c.attempt_id
		WHERE a.schedule_id = ? GROUP BY c.attempt_id HAVING COUNT(*) > 1) d`, scheduleID)
}
