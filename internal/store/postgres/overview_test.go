package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"switchboard/internal/store/migrations"
	"switchboard/internal/store/storetest"
)

// TestOverviewBackfill checks that migration 00019 backfills the rollups
// as the store writes them.
func TestOverviewBackfill(t *testing.T) {
	srv := newServer(t)
	db := open(t, srv.database(t))
	storetest.Backfill(t, db, func(t *testing.T) {
		sdb := stdlib.OpenDBFromPool(db.Pool)
		defer sdb.Close()
		p, err := goose.NewProvider(goose.DialectPostgres, sdb, migrations.FS, goose.WithDisableGlobalRegistry(true))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(t.Context(), 18); err != nil {
			t.Fatalf("migrate down to 18: %v", err)
		}
		if _, err := p.Up(t.Context()); err != nil {
			t.Fatalf("migrate up: %v", err)
		}
	})
}
