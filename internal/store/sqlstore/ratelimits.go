package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"time"
)

// rateSpendChunk is how many keys one statement of AddRateSpend adds to.
const rateSpendChunk = 100

// AddRateSpend implements store.Store. Keys are written in sorted order,
// so two nodes adding to the same keys at once lock their rows in the same
// order and never deadlock.
func (s *Store) AddRateSpend(ctx context.Context, spent map[string]int64, at time.Time) error {
	keys := make([]string, 0, len(spent))
	for k, n := range spent {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	return wrap("AddRateSpend", s.tx(ctx, func(tx *sql.Tx) error {
		for chunk := range slices.Chunk(keys, rateSpendChunk) {
			var q strings.Builder
			q.WriteString(`INSERT INTO rate_limits (key_id, spent, updated_at) VALUES `)
			args := make([]any, 0, 3*len(chunk))
			for i, k := range chunk {
				if i > 0 {
					q.WriteString(", ")
				}
				q.WriteString("(?, ?, ?)")
				args = append(args, k, spent[k], ms(at))
			}
			q.WriteString(` ON CONFLICT (key_id) DO UPDATE SET spent = rate_limits.spent + excluded.spent,
				updated_at = CASE WHEN excluded.updated_at > rate_limits.updated_at THEN excluded.updated_at ELSE rate_limits.updated_at END`)
			if _, err := s.exec(ctx, tx, q.String(), args...); err != nil {
				return err
			}
		}
		return nil
	}))
}

// RateSpend implements store.Store.
func (s *Store) RateSpend(ctx context.Context, since time.Time) (map[string]int64, error) {
	rows, err := s.query(ctx, s.r, `SELECT key_id, spent FROM rate_limits WHERE updated_at >= ?`, ms(since))
	if err != nil {
		return nil, wrap("RateSpend", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var k string
		var n int64
		if err := rows.Scan(&k, &n); err != nil {
			return nil, wrap("RateSpend", err)
		}
		out[k] = n
	}
	return out, wrap("RateSpend", rows.Err())
}

// PurgeRateSpend implements store.Store.
func (s *Store) PurgeRateSpend(ctx context.Context, before time.Time) error {
	_, err := s.exec(ctx, s.w, `DELETE FROM rate_limits WHERE updated_at < ?`, ms(before))
	return wrap("PurgeRateSpend", err)
}
