package nodetest

import (
	"context"
	"fmt"
	"time"
)

// FailpointHoldDials is app.FailpointHoldDials: set in a node built with
// -tags failpoints, its dial jobs hang as running until it is killed.
const FailpointHoldDials = "SWITCHBOARD_FAILPOINT_HOLD_DIALS"

// Recovery is one crash-recovery run: a node takes a schedule's due
// attempts into running dial jobs and is killed with SIGKILL before any is
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
	// Stranded is how many dial jobs were running on the killed node,
	// their attempts undialed, when it died.
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

	// Wait until node a holds every dial job it will take (River hands a
	// node at most its 50 workers' worth), none dialed.
	want := int64(min(r.Attempts, 50))
	var running int64
	for deadline := time.Now().Add(time.Minute); ; {
		running, err = probe.Int(ctx, `SELECT COUNT(*) FROM river_job WHERE kind = 'dial_attempt' AND state = 'running'`)
		if err != nil {
			return res, err
		}
		if running >= want {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("nodetest: node a runs %d dial jobs after a minute; want %d", running, want)
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
	logf("killed node a holding %d running dial jobs", running)
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
	doubled, err := probe.Int(ctx, `SELECT COUNT(*) FROM (SELECT c.attempt_id FROM calls c JOIN attempts a ON a.id = c.attempt_id
		WHERE a.schedule_id = ? GROUP BY c.attempt_id HAVING COUNT(*) > 1) d`, scheduleID)
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
	return scheduleCallsWith(ctx, base, key, n, due, nil)
}
