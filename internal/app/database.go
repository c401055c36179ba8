package app

import (
	"context"
	"fmt"
	"strings"

	"switchboard/internal/cluster"
	"switchboard/internal/cluster/pgbus"
	"switchboard/internal/store"
	"switchboard/internal/store/postgres"
	"switchboard/internal/store/sqlite"
)

// Database is an open store of either kind, with what the cluster bus needs.
type Database struct {
	store.Store
	// Kind is "sqlite" or "postgres".
	Kind string
	lite *sqlite.DB
	pg   *postgres.DB
}

// OpenDatabase opens the database named by url: "sqlite:PATH" (or a path
// ending in .db) or "postgres://…"/"postgresql://…".
func OpenDatabase(ctx context.Context, url string) (*Database, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		db, err := postgres.Open(ctx, url)
		if err != nil {
			return nil, err
		}
		return &Database{Store: db, Kind: "postgres", pg: db}, nil
	case strings.HasPrefix(url, "sqlite:"):
		db, err := sqlite.Open(ctx, strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//"))
		if err != nil {
			return nil, err
		}
		return &Database{Store: db, Kind: "sqlite", lite: db}, nil
	}
	return nil, fmt.Errorf("--db %q: want sqlite:PATH or postgres://…", url)
}

// Migrate brings the schema up to date.
func (d *Database) Migrate(ctx context.Context) error {
	var err error
	if d.pg != nil {
		err = d.pg.Migrate(ctx)
	} else {
		err = d.lite.Migrate(ctx)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// bus is the cluster's command bus over this database: PostgreSQL's
// LISTEN/NOTIFY; none on SQLite, whose one node runs every call.
func (d *Database) bus() cluster.Bus {
	if d.pg != nil {
		return pgbus.New(d.pg.Pool)
	}
	return nil
}

// OpenMigrated opens and migrates; the CLI's commands all start here.
func OpenMigrated(ctx context.Context, url string) (*Database, error) {
	db, err := OpenDatabase(ctx, url)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
