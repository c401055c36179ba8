package sqlite_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/store/storetest"
)

func openMigrated(t *testing.T) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// TestOverviewBackfill checks that migration 00020 backfills the rollups
// as the store writes them.
func TestOverviewBackfill(t *testing.T) {
	db := openMigrated(t)
	storetest.Backfill(t, db, storetest.Remigrate(goose.DialectSQLite3, db.Writer))
}

// TestLatencyBuckets checks that the migration's latency_buckets are
// store.LatencyBuckets.
func TestLatencyBuckets(t *testing.T) {
	db := openMigrated(t)
	rows, err := db.Writer.QueryContext(t.Context(), `SELECT bucket, lo_us, hi_us FROM latency_buckets ORDER BY bucket`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lo []int64
	for rows.Next() {
		var b int
		var l, h int64
		if err := rows.Scan(&b, &l, &h); err != nil {
			t.Fatal(err)
		}
		if b != len(lo) {
			t.Fatalf("latency_buckets: bucket %d after %d rows", b, len(lo))
		}
		if b+1 < len(store.LatencyBuckets) && h != store.LatencyBuckets[b+1] {
			t.Errorf("latency_buckets bucket %d: hi_us %d; want %d", b, h, store.LatencyBuckets[b+1])
		}
		lo = append(lo, l)
	}
	if !slices.Equal(lo, store.LatencyBuckets) {
		t.Errorf("latency_buckets lo_us = %v; want store.LatencyBuckets %v", lo, store.LatencyBuckets)
	}
	for _, tc := range []struct {
		us   int64
		want int
	}{{0, 0}, {9, 0}, {10, 1}, {11, 1}, {12, 2}, {store.LatencyBuckets[50], 50}, {store.LatencyBuckets[50] - 1, 49}, {1 << 62, len(store.LatencyBuckets) - 1}} {
		if got := store.LatencyBucket(tc.us); got != tc.want {
			t.Errorf("LatencyBucket(%d) = %d; want %d", tc.us, got, tc.want)
		}
	}
}
