package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/store"
)

// successOf reads successEvaluation from an analysis result as the
// worker writes it: nil when the result does not evaluate success.
func successOf(result []byte) *bool {
	var r struct {
		SuccessEvaluation *bool `json:"successEvaluation"`
	}
	if len(result) == 0 || json.Unmarshal(result, &r) != nil {
		return nil
	}
	return r.SuccessEvaluation
}

// latencyOf is the turn_latency upsert of one call's assistant turns,
// bucketed by joining latency_buckets, on the rows of its assistant (a
// the assistant's id) or of all the organization's assistants (a
// the empty string). Migration 00020 backfills with the same shape.
func latencyOf(a string) string {
	return `INSERT INTO turn_latency (org_id, day, assistant_id, stage, bucket, n)
	SELECT t.org_id, t.day, t.assistant_id, t.stage, b.bucket, COUNT(*)
	FROM (
		SELECT c.org_id, c.created_at / 86400000 AS day, ` + a + ` AS assistant_id, s.stage,
			CASE s.stage
				WHEN 'endpointing' THEN tu.endpointing_us WHEN 'transcriber' THEN tu.transcriber_us
				WHEN 'model' THEN tu.model_us WHEN 'voice' THEN tu.voice_us WHEN 'platform' THEN tu.platform_us
				ELSE CASE WHEN tu.has_breakdown THEN tu.total_us ELSE tu.latency_us END END AS us
		FROM turns tu
		JOIN calls c ON c.id = tu.call_id
		JOIN (SELECT 'endpointing' AS stage UNION ALL SELECT 'transcriber' UNION ALL SELECT 'model'
			UNION ALL SELECT 'voice' UNION ALL SELECT 'platform' UNION ALL SELECT 'total') s
			ON s.stage = 'total' OR tu.has_breakdown
		WHERE tu.call_id = ? AND c.org_id = ? AND tu.role = 'assistant'
	) t
	JOIN latency_buckets b ON t.us >= b.lo_us AND t.us < b.hi_us
	WHERE t.stage <> 'total' OR t.us > 0
	GROUP BY t.org_id, t.day, t.assistant_id, t.stage, b.bucket
	ORDER BY t.stage, b.bucket
	ON CONFLICT (org_id, assistant_id, day, stage, bucket) DO UPDATE SET n = turn_latency.n + excluded.n`
}

var (
	latencyOfAssistant = latencyOf("c.assistant_id")
	latencyOfOrg       = latencyOf("''")
)

// callOf is the call_days upsert of an analysed call, on the row of its
// assistant (a the assistant's id) or of all the organization's
// assistants (a the empty string): one call, its duration (as call.DurationSeconds
// counts it) and, when the analysis evaluated success, evaluated and
// succeeded.
func callOf(a string) string {
	return `INSERT INTO call_days (org_id, day, assistant_id, outcome, ended_reason, calls, duration_ms, evaluated, succeeded)
	SELECT org_id, created_at / 86400000, ` + a + `, outcome, ended_reason, 1,
		CASE WHEN started_at > 0 AND ended_at > started_at THEN ended_at - started_at ELSE 0 END, ?, ?
	FROM calls WHERE id = ? AND org_id = ? AND status = 3
	ON CONFLICT (org_id, assistant_id, day, outcome, ended_reason) DO UPDATE SET calls = call_days.calls + 1,
		duration_ms = call_days.duration_ms + excluded.duration_ms,
		evaluated = call_days.evaluated + excluded.evaluated, succeeded = call_days.succeeded + excluded.succeeded`
}

var (
	callOfAssistant = callOf("assistant_id")
	callOfOrg       = callOf("''")
)

// rollUpAnalysis adds the call of a finished analysis (ready or failed)
// to the overview's rollups, inside FinishAnalysis's transaction: once
// per call, since it moves the analysis from pending, and off the call's
// own path (docs/ARCHITECTURE.md, "The overview and the calls console").
func (s *Store) rollUpAnalysis(ctx context.Context, tx *sql.Tx, a store.Analysis) error {
	evaluated, succeeded := 0, 0
	if ok := successOf(a.Result); a.State == store.AnalysisReady && ok != nil {
		evaluated = 1
		if *ok {
			succeeded = 1
		}
	}
	for _, q := range []string{callOfAssistant, callOfOrg} {
		if _, err := s.exec(ctx, tx, q, evaluated, succeeded, a.CallID, a.OrgID); err != nil {
			return err
		}
	}
	for _, q := range []string{latencyOfAssistant, latencyOfOrg} {
		if _, err := s.exec(ctx, tx, q, a.CallID, a.OrgID); err != nil {
			return err
		}
	}
	return nil
}

// Overview sums the rollups of the organization's calls created on f's
// days, of f's assistant or (none named) all of them: two range scans of the
// rollups' primary keys, grouped.
func (s *Store) Overview(ctx context.Context, orgID string, f store.OverviewFilter) (store.Overview, error) {
	from, to := ms(f.From.UTC().Truncate(24*time.Hour))/store.Day, ms(f.To.UTC().Truncate(24*time.Hour))/store.Day
	// Both rollups keep the organization's calls under assistant '' too
	// (rollUpAnalysis): a period is one range of either key, (org,
	// assistant, day …), whichever assistant is asked.
	args := []any{orgID, f.AssistantID, from, to}
	out := store.Overview{Days: []store.DayCount{}, Latency: map[string]store.Histogram{}}
	rows, err := s.query(ctx, s.r, `SELECT day, outcome, ended_reason, SUM(calls), SUM(duration_ms), SUM(evaluated), SUM(succeeded)
		FROM call_days WHERE org_id = ? AND assistant_id = ? AND day >= ? AND day <= ?
		GROUP BY day, outcome, ended_reason ORDER BY day, outcome, ended_reason`, args...)
	if err != nil {
		return out, wrap("Overview", err)
	}
	for rows.Next() {
		var d store.DayCount
		var day, durMS int64
		var outcome string
		if err := rows.Scan(&day, &outcome, &d.EndedReason, &d.Calls, &durMS, &d.Evaluated, &d.Succeeded); err != nil {
			rows.Close()
			return out, wrap("Overview", err)
		}
		d.Day, d.Outcome, d.Duration = fromMS(day*store.Day), call.Outcome(outcome), time.Duration(durMS)*time.Millisecond
		if d.Calls == 0 && d.Evaluated == 0 {
			continue
		}
		out.Days = append(out.Days, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, wrap("Overview", err)
	}
	rows, err = s.query(ctx, s.r, `SELECT stage, bucket, SUM(n) FROM turn_latency
		WHERE org_id = ? AND assistant_id = ? AND day >= ? AND day <= ? GROUP BY stage, bucket`, args...)
	if err != nil {
		return out, wrap("Overview", err)
	}
	defer rows.Close()
	for rows.Next() {
		var stage string
		var b int
		var n int64
		if err := rows.Scan(&stage, &b, &n); err != nil {
			return out, wrap("Overview", err)
		}
		h := out.Latency[stage]
		h.Add(b, n)
		out.Latency[stage] = h
	}
	return out, wrap("Overview", rows.Err())
}
