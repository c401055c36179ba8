package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"switchboard/internal/store/storetest"
)

// TestOverviewBackfill checks that migration 00020 backfills the rollups
// as the store writes them.
func TestOverviewBackfill(t *testing.T) {
	srv := newServer(t)
	db := open(t, srv.database(t))
	sdb := stdlib.OpenDBFromPool(db.Pool)
	defer sdb.Close()
	storetest.Backfill(t, db, storetest.Remigrate(goose.DialectPostgres, sdb))
}
