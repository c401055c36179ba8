package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/event"
	"switchboard/internal/store"
)

const analysisCols = `call_id, org_id, state, result, error, attempts, created_at, updated_at`

func scanAnalysis(sc interface{ Scan(...any) error }) (store.Analysis, error) {
	var a store.Analysis
	var result string
	var created, updated int64
	err := sc.Scan(&a.CallID, &a.OrgID, &a.State, &result, &a.Error, &a.Attempts, &created, &updated)
	a.Result, a.CreatedAt, a.UpdatedAt = []byte(result), fromMS(created), fromMS(updated)
	return a, err
}

// GetAnalysis reads a call's analysis.
func (s *Store) GetAnalysis(ctx context.Context, orgID, callID string) (store.Analysis, error) {
	a, err := scanAnalysis(s.row(ctx, s.r, `SELECT `+analysisCols+` FROM analyses WHERE org_id = ? AND call_id = ?`, orgID, callID))
	return a, wrap("GetAnalysis", notFound(err, "analysis"))
}

// ClaimAnalyses leases pending analyses whose lease expired.
func (s *Store) ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Analysis, error) {
	c := claim{Table: "analyses", Alias: "analyses", Key: "call_id", Lease: "locked_until", Count: "attempts",
		Select: `SELECT ` + analysisCols + ` FROM analyses WHERE state = ? AND locked_until < ? ORDER BY created_at LIMIT ?`}
	var out []store.Analysis
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, lease, limit, func(rows *sql.Rows) (string, error) {
			a, err := scanAnalysis(rows)
			a.Attempts++
			out = append(out, a)
			return a.CallID, err
		}, store.AnalysisPending, ms(now))
		return err
	})
	return out, wrap("ClaimAnalyses", err)
}

// FinishAnalysis stores a claimed analysis's outcome. It filters by the
// organization too: the events are queued for a.OrgID's endpoints.
func (s *Store) FinishAnalysis(ctx context.Context, a store.Analysis, events ...event.Event) error {
	return wrap("FinishAnalysis", s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE analyses SET state = ?, result = ?, error = ?, locked_until = 0, updated_at = ? WHERE call_id = ? AND org_id = ? AND state = ?`,
			a.State, string(a.Result), a.Error, ms(a.UpdatedAt), a.CallID, a.OrgID, store.AnalysisPending)
		if err := affected(res, err, "pending analysis"); err != nil {
			return err
		}
		if err := s.rollUpAnalysis(ctx, tx, a); err != nil {
			return err
		}
		return s.queueEvents(ctx, tx, a.OrgID, events)
	}))
}
