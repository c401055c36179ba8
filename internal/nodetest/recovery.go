package nodetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"
)

// FailpointHoldDials is app.FailpointHoldDials: set in a node built with
// -tags failpoints, the dials its dialer claims hang until it is killed.
const FailpointHoldDials = "SWITCHBOARD_FAILPOINT_HOLD_DIALS"

// Recovery is one crash-recovery run: a node takes a schedule's due
// attempts into its dialer and is killed with SIGKILL before any is
// dialed; then either the same node restarts after RestartAfter, or (with
// Survivor) a second node that was running beside it carries on alone.
type Recovery struct {
	// Bin is a server built with -tags failpoints; DB a fresh database.
	Bin, DB, LogDir string
	// Attempts is how many calls the schedule makes, all due at once.
	Attempts     int
	Survivor     bool
	RestartAfter time.Duration
	// Wait bounds the wait for every attempt to be dialed (default 3 min).
	Wait time.Duration
	// Logf, when set, narrates the run.
	Logf func(format string, args ...any)
}

// RecoveryResult is what a run left in the database.
type RecoveryResult struct {
	Attempts int
	// Stranded is how many attempts the killed node's dialer held,
	// undialed, when it died.
	Stranded int
	// Dialed attempts (each has its call), Lost (never dialed), Doubled
	// (attempts with more than one call).
	Dialed, Lost, Doubled int
	// Recovery is the time from the restart (with a survivor: from the
	// kill) to the last attempt dialed.
	Recovery time.Duration
}

// RunRecovery runs r and reports what happened; an error means the run
// itself could not be carried out.
func RunRecovery(ctx context.Context, r Recovery) (RecoveryResult, error) {
	res := RecoveryResult{Attempts: r.Attempts}
	logf := r.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if r.Wait <= 0 {
		r.Wait = 3 * time.Minute
	}
	probe, err := OpenProbe(r.DB)
	if err != nil {
		return res, err
	}
	defer probe.Close()

	var nodes []*Node
	defer func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	}()
	a, err := Start(ctx, Options{Name: "a", Bin: r.Bin, DB: r.DB, LogDir: r.LogDir, Env: []string{FailpointHoldDials + "=1"}, FirstStart: true})
	if err != nil {
		return res, err
	}
	nodes = append(nodes, a)
	scheduleID, err := scheduleCalls(ctx, a.URL, a.Key, r.Attempts, time.Now().Add(2*time.Second))
	if err != nil {
		return res, err
	}
	logf("scheduled %d calls due in 2 s (schedule %s)", r.Attempts, scheduleID)

	// Wait until node a's dialer holds every attempt it will take (at
	// most its 50 workers' worth), none dialed.
	want := int64(min(r.Attempts, 50))
	var running int64
	for deadline := time.Now().Add(time.Minute); ; {
		running, err = probe.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state = 'pending' AND dial_until > ?`,
			scheduleID, time.Now().UnixMilli())
		if err != nil {
			return res, err
		}
		if running >= want {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("nodetest: node a's dialer holds %d attempts after a minute; want %d", running, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	dialed, err := probe.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state <> 'pending'`, scheduleID)
	if err != nil {
		return res, err
	}
	if dialed != 0 {
		return res, fmt.Errorf("nodetest: %d attempts already dialed (or failed) before the kill; want none (is the failpoint built in?)", dialed)
	}
	res.Stranded = int(running)

	if r.Survivor {
		b, err := Start(ctx, Options{Name: "b", Bin: r.Bin, DB: r.DB, LogDir: r.LogDir})
		if err != nil {
			return res, err
		}
		nodes = append(nodes, b)
	}
	a.Kill()
	nodes = nodes[1:]
	t0 := time.Now()
	logf("killed node a holding %d attempts in its dialer", running)
	if !r.Survivor {
		time.Sleep(r.RestartAfter)
		t0 = time.Now()
		a2, err := Start(ctx, Options{Name: "a-restarted", Bin: r.Bin, DB: r.DB, LogDir: r.LogDir})
		if err != nil {
			return res, err
		}
		nodes = append(nodes, a2)
		logf("restarted node a after %v", r.RestartAfter)
	}

	for deadline := t0.Add(r.Wait); ; {
		dialed, err = probe.Int(ctx, `SELECT COUNT(*) FROM attempts WHERE schedule_id = ? AND state = 'dialed'`, scheduleID)
		if err != nil {
			return res, err
		}
		if int(dialed) == r.Attempts || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	res.Dialed = int(dialed)
	res.Lost = r.Attempts - res.Dialed
	last, err := probe.Int(ctx, `SELECT MAX(updated_at) FROM attempts WHERE schedule_id = ? AND state = 'dialed'`, scheduleID)
	if err != nil {
		return res, err
	}
	if last > 0 {
		res.Recovery = time.UnixMilli(last).Sub(t0)
	}
	doubled, err := probe.Doubled(ctx, scheduleID)
	if err != nil {
		return res, err
	}
	res.Doubled = int(doubled)
	logf("dialed %d of %d, %d doubled, last %v after the %s", res.Dialed, r.Attempts, res.Doubled, res.Recovery, map[bool]string{true: "kill", false: "restart"}[r.Survivor])
	return res, nil
}

// scheduleCalls sets up a number with an outbound assistant and n contacts
// and schedules one call to each at due; it returns the schedule's id.
func scheduleCalls(ctx context.Context, base, key string, n int, due time.Time) (string, error) {
	c, err := NewCampaign(ctx, base, key, n)
	if err != nil {
		return "", err
	}
	return c.Schedule(ctx, base, key, due, nil)
}

// Campaign is a number with an outbound assistant and contacts to call.
type Campaign struct {
	PurchaseID string
	ContactIDs []string
}

// NewCampaign buys a sandbox number, gives it an outbound assistant and
// adds n contacts (+12125551000…, 9,000 per exchange: +12125561000… next).
func NewCampaign(ctx context.Context, base, key string, n int) (Campaign, error) {
	var asst struct{ Data struct{ ID string } }
	if err := Do(ctx, base, key, "POST", "/v1/assistants", map[string]any{"name": "Reminder", "firstMessage": "Hello, this is a reminder."}, &asst); err != nil {
		return Campaign{}, err
	}
	var numbers struct {
		Data []struct{ Number string }
	}
	if err := Do(ctx, base, key, "GET", "/v1/phone/numbers", nil, &numbers); err != nil {
		return Campaign{}, err
	}
	if len(numbers.Data) == 0 {
		return Campaign{}, errors.New("nodetest: the sandbox offers no number")
	}
	var pn struct{ Data struct{ ID string } }
	if err := Do(ctx, base, key, "POST", "/v1/phone/purchases", map[string]any{"number": numbers.Data[0].Number, "provider": "sandbox"}, &pn); err != nil {
		return Campaign{}, err
	}
	if err := Do(ctx, base, key, "POST", "/v1/phone/allocate-assistant", map[string]any{"id": pn.Data.ID, "outboundAssistantId": asst.Data.ID}, nil); err != nil {
		return Campaign{}, err
	}
	c := Campaign{PurchaseID: pn.Data.ID}
	for start := 0; start < n; start += 100 {
		var batch []map[string]any
		for i := start; i < min(start+100, n); i++ {
			batch = append(batch, map[string]any{"name": fmt.Sprintf("Contact %d", i), "phoneNumber": fmt.Sprintf("+1212%03d%04d", 555+i/9000, 1000+i%9000)})
		}
		var added struct {
			Data struct{ Created []string }
		}
		if err := Do(ctx, base, key, "POST", "/v1/phone/contacts/"+pn.Data.ID, map[string]any{"contacts": batch}, &added); err != nil {
			return Campaign{}, err
		}
		c.ContactIDs = append(c.ContactIDs, added.Data.Created...)
	}
	if len(c.ContactIDs) != n {
		return Campaign{}, fmt.Errorf("nodetest: added %d contacts; want %d", len(c.ContactIDs), n)
	}
	return c, nil
}

// Schedule schedules one call to each of the campaign's contacts at due,
// at any hour of the day (extra: more fields of the schedule-call body,
// which override these), and returns the schedule's id.
func (c Campaign) Schedule(ctx context.Context, base, key string, due time.Time, extra map[string]any) (string, error) {
	var sc struct{ ID string }
	req := map[string]any{
		"name": "Campaign", "contacts_id": c.ContactIDs, "phone_id": c.PurchaseID, "message": "Reminder",
		"dates": []string{due.UTC().Format("2006-01-02T15:04:05.000Z")}, "timezone": "UTC",
		// Any time of day: the runs happen at any hour (default hours are 08:00–21:00).
		"callingHours": map[string]any{"start": "00:00", "end": "24:00"},
	}
	maps.Copy(req, extra)
	err := Do(ctx, base, key, "POST", "/v1/phone/schedule-call", req, &sc)
	return sc.ID, err
}

// Dials counts a schedule's attempts by how many calls each has: dialed
// (at least one), lost (none) and doubled (more than one).
func (p *Probe) Dials(ctx context.Context, scheduleID string) (dialed, lost, doubled int64, err error) {
	if dialed, err = p.Int(ctx, `SELECT COUNT(*) FROM attempts a WHERE a.schedule_id = ? AND EXISTS (SELECT 1 FROM calls c WHERE c.attempt_id = a.id)`, scheduleID); err != nil {
		return
	}
	if lost, err = p.Int(ctx, `SELECT COUNT(*) FROM attempts a WHERE a.schedule_id = ? AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.attempt_id = a.id)`, scheduleID); err != nil {
		return
	}
	doubled, err = p.Doubled(ctx, scheduleID)
	return
}
