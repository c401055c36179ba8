package sqlstore

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
)

// turnCols are the columns of a turn, in scanTurn's order.
const turnCols = `id, org_id, call_id, seq, role, text, started_at, ended_at, interrupted, latency_us,
	has_breakdown, endpointing_us, transcriber_us, model_us, voice_us, platform_us, total_us`

// AppendTurn stores one transcript turn, with its breakdown when it has
// one. The turns of a node's concurrent calls are stored in groups
// (groupcommit, insertTurns): a turn that arrives while a group is being
// stored waits and is stored with the next, in one statement and one
// commit; AppendTurn returns once its own turn is stored.
func (s *Store) AppendTurn(ctx context.Context, t call.Turn) error {
	if err := ctx.Err(); err != nil {
		return wrap("AppendTurn", err)
	}
	return wrap("AppendTurn", s.turns.Do(t))
}

// turnTimeout bounds the storing of one group of turns.
const turnTimeout = 10 * time.Second

// insertTurns stores a group of turns in one INSERT per 100 (one
// transaction): a turn whose (call, seq) is taken, by an earlier turn or
// one before it in the group, is a Conflict; the others are stored.
func (s *Store) insertTurns(ts []call.Turn) []error {
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	errs := make([]error, len(ts))
	row := "(" + placeholders(strings.Count(turnCols, ",")+1) + ")"
	stored := map[string]bool{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		clear(stored)
		for chunk := range slices.Chunk(ts, 100) {
			rows, args := values(chunk, row, func(t call.Turn) []any {
				var b call.Breakdown
				if t.Breakdown != nil {
					b = *t.Breakdown
				}
				return []any{t.ID, t.OrgID, t.CallID, t.Seq, t.Role, t.Text, ms(t.StartedAt), ms(t.EndedAt), t.Interrupted, t.Latency.Microseconds(),
					t.Breakdown != nil, b.Endpointing.Microseconds(), b.Transcriber.Microseconds(), b.Model.Microseconds(),
					b.Voice.Microseconds(), b.Platform.Microseconds(), b.Total.Microseconds()}
			})
			ids, err := s.querySet(ctx, tx, `INSERT INTO turns (`+turnCols+`) VALUES `+rows+`
				ON CONFLICT DO NOTHING RETURNING id`, args...)
			if err != nil {
				return err
			}
			maps.Copy(stored, ids)
		}
		return nil
	})
	for i, t := range ts {
		switch {
		case err != nil:
			errs[i] = err
		case !stored[t.ID]:
			errs[i] = apperr.Conflictf("turn %d of call %s already stored", t.Seq, t.CallID)
		}
	}
	return errs
}

// ListTurns returns a call's turns in order.
func (s *Store) ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+turnCols+` FROM turns WHERE org_id = ? AND call_id = ? ORDER BY seq`, orgID, callID)
	if err != nil {
		return nil, wrap("ListTurns", err)
	}
	defer rows.Close()
	out := []call.Turn{}
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, wrap("ListTurns", err)
		}
		out = append(out, t)
	}
	return out, wrap("ListTurns", rows.Err())
}

func scanTurn(sc interface{ Scan(...any) error }) (call.Turn, error) {
	var t call.Turn
	var started, ended, lat int64
	var has bool
	var us [6]int64
	if err := sc.Scan(&t.ID, &t.OrgID, &t.CallID, &t.Seq, &t.Role, &t.Text, &started, &ended, &t.Interrupted, &lat,
		&has, &us[0], &us[1], &us[2], &us[3], &us[4], &us[5]); err != nil {
		return t, err
	}
	t.StartedAt, t.EndedAt, t.Latency = fromMS(started), fromMS(ended), micros(lat)
	if has {
		t.Breakdown = &call.Breakdown{
			Endpointing: micros(us[0]), Transcriber: micros(us[1]), Model: micros(us[2]),
			Voice: micros(us[3]), Platform: micros(us[4]), Total: micros(us[5]),
		}
	}
	return t, nil
}

func micros(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
