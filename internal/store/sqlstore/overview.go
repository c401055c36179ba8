package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/store"
)

// dayDelta is an ended call's share of its call_days row: the
// organization, UTC day of creation, assistant, outcome, reason and
// shard are the key; calls and durMS are added.
type dayDelta struct {
	org       string
	day       int64
	assistant string
	outcome   string
	reason    string
	shard     int
	calls     int64
	durMS     int64
}

// dayOf is c's call_days delta: one ended call and its duration (as
// call.DurationSeconds counts it, in milliseconds).
func dayOf(c call.Call) *dayDelta {
	return &dayDelta{org: c.OrgID, day: ms(c.CreatedAt) / store.Day, assistant: c.AssistantID, outcome: string(c.Outcome),
		reason: c.EndedReason, calls: 1, durMS: int64(c.DurationSeconds()*1000 + 0.5)}
}

// bumpDays adds the ended calls to call_days, the deltas of one row
// summed, one statement per 200 rows, in key order (as bumpCounts, and
// after it: these rows too are locked from then until the commit).
func (s *Store) bumpDays(ctx context.Context, tx *sql.Tx, ds []dayDelta) error {
	if len(ds) == 0 {
		return nil
	}
	key := func(d dayDelta) dayDelta { d.calls, d.durMS = 0, 0; return d }
	slices.SortFunc(ds, func(a, b dayDelta) int {
		return cmp.Or(strings.Compare(a.org, b.org), cmp.Compare(a.day, b.day), strings.Compare(a.assistant, b.assistant),
			strings.Compare(a.outcome, b.outcome), strings.Compare(a.reason, b.reason), cmp.Compare(a.shard, b.shard))
	})
	var merged []dayDelta
	for _, d := range ds {
		if k := len(merged) - 1; k >= 0 && key(merged[k]) == key(d) {
			merged[k].calls += d.calls
			merged[k].durMS += d.durMS
			continue
		}
		merged = append(merged, d)
	}
	for chunk := range slices.Chunk(merged, 200) {
		rows, args := values(chunk, "(?, ?, ?, ?, ?, ?, ?, ?)", func(d dayDelta) []any {
			return []any{d.org, d.day, d.assistant, d.outcome, d.reason, d.shard, d.calls, d.durMS}
		})
		if _, err := s.exec(ctx, tx, `INSERT INTO call_days (org_id, day, assistant_id, outcome, ended_reason, shard, calls, duration_ms) VALUES `+rows+`
			ON CONFLICT (org_id, day, assistant_id, outcome, ended_reason, shard)
			DO UPDATE SET calls = call_days.calls + excluded.calls, duration_ms = call_days.duration_ms + excluded.duration_ms`, args...); err != nil {
			return err
		}
	}
	return nil
}

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

// latencyOfCall is the turn_latency upsert of one call's assistant
// turns, bucketed by joining latency_buckets (migration 00019 backfills
// with the same shape).
const latencyOfCall = `INSERT INTO turn_latency (org_id, day, assistant_id, stage, bucket, n)
	SELECT t.org_id, t.day, t.assistant_id, t.stage, b.bucket, COUNT(*)
	FROM (
		SELECT c.org_id, c.created_at / 86400000 AS day, c.assistant_id, s.stage,
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
	ON CONFLICT (org_id, day, assistant_id, stage, bucket) DO UPDATE SET n = turn_latency.n + excluded.n`

// rollUpAnalysis adds a finished analysis to the rollups, inside
// FinishAnalysis's transaction (once per call: it moves the analysis
// from pending): the call's turns to turn_latency and, when the result
// evaluates success, the call to its call_days row's evaluated and
// succeeded.
func (s *Store) rollUpAnalysis(ctx context.Context, tx *sql.Tx, a store.Analysis) error {
	if _, err := s.exec(ctx, tx, latencyOfCall, a.CallID, a.OrgID); err != nil {
		return err
	}
	ok := successOf(a.Result)
	if a.State != store.AnalysisReady || ok == nil {
		return nil
	}
	var c call.Call
	var created int64
	var outcome string
	err := s.row(ctx, tx, `SELECT assistant_id, outcome, ended_reason, created_at FROM calls WHERE id = ? AND org_id = ?`, a.CallID, a.OrgID).
		Scan(&c.AssistantID, &outcome, &c.EndedReason, &created)
	if err != nil {
		return notFound(err, "call")
	}
	succeeded := 0
	if *ok {
		succeeded = 1
	}
	_, err = s.exec(ctx, tx, `INSERT INTO call_days (org_id, day, assistant_id, outcome, ended_reason, shard, evaluated, succeeded) VALUES (?, ?, ?, ?, ?, ?, 1, ?)
		ON CONFLICT (org_id, day, assistant_id, outcome, ended_reason, shard)
		DO UPDATE SET evaluated = call_days.evaluated + 1, succeeded = call_days.succeeded + excluded.succeeded`,
		a.OrgID, created/store.Day, c.AssistantID, outcome, c.EndedReason, s.shard(a.CallID), succeeded)
	return err
}

// Overview sums the rollups of the organization's calls created on f's
// days: two range scans of the rollups' primary keys, grouped.
func (s *Store) Overview(ctx context.Context, orgID string, f store.OverviewFilter) (store.Overview, error) {
	from, to := ms(f.From.UTC().Truncate(24*time.Hour))/store.Day, ms(f.To.UTC().Truncate(24*time.Hour))/store.Day
	cond, args := "org_id = ? AND day >= ? AND day <= ?", []any{orgID, from, to}
	if f.AssistantID != "" {
		cond += " AND assistant_id = ?"
		args = append(args, f.AssistantID)
	}
	out := store.Overview{Days: []store.DayCount{}, Latency: map[string]store.Histogram{}}
	rows, err := s.query(ctx, s.r, `SELECT day, outcome, ended_reason, SUM(calls), SUM(duration_ms), SUM(evaluated), SUM(succeeded)
		FROM call_days WHERE `+cond+` GROUP BY day, outcome, ended_reason ORDER BY day, outcome, ended_reason`, args...)
	if err != nil {
		return out, err
	}
	for rows.Next() {
		var d store.DayCount
		var day, durMS int64
		var outcome string
		if err := rows.Scan(&day, &outcome, &d.EndedReason, &d.Calls, &durMS, &d.Evaluated, &d.Succeeded); err != nil {
			rows.Close()
			return out, err
		}
		d.Day, d.Outcome, d.Duration = fromMS(day*store.Day), call.Outcome(outcome), time.Duration(durMS)*time.Millisecond
		if d.Calls == 0 && d.Evaluated == 0 {
			continue
		}
		out.Days = append(out.Days, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	rows, err = s.query(ctx, s.r, `SELECT stage, bucket, SUM(n) FROM turn_latency WHERE `+cond+` GROUP BY stage, bucket`, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var stage string
		var b int
		var n int64
		if err := rows.Scan(&stage, &b, &n); err != nil {
			return out, err
		}
		h := out.Latency[stage]
		h.Add(b, n)
		out.Latency[stage] = h
	}
	return out, rows.Err()
}

// AssistantNames reads the names of the organization's assistants among
// ids, 500 to a statement.
func (s *Store) AssistantNames(ctx context.Context, orgID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for chunk := range slices.Chunk(ids, 500) {
		args := []any{orgID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.query(ctx, s.r, `SELECT id, name FROM assistants WHERE org_id = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return nil, err
			}
			out[id] = name
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
