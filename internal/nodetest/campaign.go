package nodetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"switchboard/internal/store/sqlstore"
)

// Campaign is a schedule made for a multi-node run: N contacts on one
// sandbox number, one call each, all due at one instant.
type Campaign struct {
	ScheduleID string
	Due        time.Time
	Attempts   int
}

// ScheduleCampaign sets up a sandbox number with an outbound assistant and
// n contacts on the node at base, and schedules one call to each at due.
// extra is merged into the schedule-call body (calling hours, caps).
func ScheduleCampaign(ctx context.Context, base, key string, n int, due time.Time, extra map[string]any) (Campaign, error) {
	id, err := scheduleCallsWith(ctx, base, key, n, due, extra)
	return Campaign{ScheduleID: id, Due: due.UTC().Truncate(time.Millisecond), Attempts: n}, err
}

// Dialing is what the database says of a campaign's dials.
type Dialing struct {
	// Dialed attempts have a call; Pending ones do not yet.
	Dialed, Pending int
	// Doubled is how many attempts have more than one call.
	Doubled int
	// Lateness is, for each call, its creation time less its attempt's
	// due time, sorted.
	Lateness []time.Duration
	// ByNode counts calls per owning node id, when calls record one.
	ByNode map[string]int
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
func (p *Probe) WaitDialed(ctx context.Context, c Campaign, wait time.Duration) (Dialing, error) {
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
	return p.Dials(ctx, c)
}

// Dials reads a campaign's dials as they stand.
func (p *Probe) Dials(ctx context.Context, c Campaign) (Dialing, error) {
	var d Dialing
	pending, err := p.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state = 'pending'`, c.ScheduleID)
	if err != nil {
		return d, err
	}
	d.Pending = int(pending)
	doubled, err := p.Int(ctx, `SELECT COUNT(*) FROM (SELECT c.attempt_id FROM calls c JOIN attempts a ON a.id = c.attempt_id
		WHERE a.schedule_id = ? GROUP BY c.attempt_id HAVING COUNT(*) > 1) d`, c.ScheduleID)
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

func (p *Probe) rebind(q string) string {
	if p.dollar {
		return sqlstore.Rebind(q)
	}
	return q
}

// scheduleCallsWith sets up a number with an outbound assistant and n contacts
// and schedules one call to each at due (extra: more fields of the
// schedule-call body); it returns the schedule's id.
func scheduleCallsWith(ctx context.Context, base, key string, n int, due time.Time, extra map[string]any) (string, error) {
	var asst struct{ Data struct{ ID string } }
	if err := Do(ctx, base, key, "POST", "/v1/assistants", map[string]any{"name": "Reminder", "firstMessage": "Hello, this is a reminder."}, &asst); err != nil {
		return "", err
	}
	var numbers struct {
		Data []struct{ Number string }
	}
	if err := Do(ctx, base, key, "GET", "/v1/phone/numbers", nil, &numbers); err != nil {
		return "", err
	}
	if len(numbers.Data) == 0 {
		return "", errors.New("nodetest: the sandbox offers no number")
	}
	var pn struct{ Data struct{ ID string } }
	if err := Do(ctx, base, key, "POST", "/v1/phone/purchases", map[string]any{"number": numbers.Data[0].Number, "provider": "sandbox"}, &pn); err != nil {
		return "", err
	}
	if err := Do(ctx, base, key, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": pn.Data.ID, "outboundAssistantId": asst.Data.ID}, nil); err != nil {
		return "", err
	}
	var contactIDs []string
	for start := 0; start < n; start += 100 {
		var batch []map[string]any
		for i := start; i < min(start+100, n); i++ {
			batch = append(batch, map[string]any{"name": fmt.Sprintf("Contact %d", i), "phoneNumber": fmt.Sprintf("+1212555%04d", 1000+i)})
		}
		var added struct {
			Data struct{ Created []string }
		}
		if err := Do(ctx, base, key, "POST", "/v1/phone/contacts/"+pn.Data.ID, map[string]any{"contacts": batch}, &added); err != nil {
			return "", err
		}
		contactIDs = append(contactIDs, added.Data.Created...)
	}
	if len(contactIDs) != n {
		return "", fmt.Errorf("nodetest: added %d contacts; want %d", len(contactIDs), n)
	}
	var sc struct{ ID string }
	req := map[string]any{
		"name": "Crash recovery", "contacts_id": contactIDs, "phone_id": pn.Data.ID, "message": "Reminder",
		"dates": []string{due.UTC().Format("2006-01-02T15:04:05.000Z")}, "timezone": "UTC",
		// Any time of day: the runs happen at any hour (default hours are 08:00–21:00).
		"callingHours": map[string]any{"start": "00:00", "end": "24:00"},
	}
	maps.Copy(req, extra)
	err := Do(ctx, base, key, "POST", "/v1/phone/schedule-call", req, &sc)
	return sc.ID, err
}
