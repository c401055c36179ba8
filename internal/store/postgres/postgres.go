// Package postgres opens the PostgreSQL store through pgx: one pgxpool that
// the job queue uses natively and the store uses through database/sql, and
// migrates it under a session advisory lock so several nodes can start at once.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"switchboard/internal/store/migrations"
	"switchboard/internal/store/sqlstore"
)

// DB is an open PostgreSQL database.
type DB struct {
	*sqlstore.Store
	// Pool is the pgx pool; the job queue uses it directly.
	Pool *pgxpool.Pool
	sql  *sql.DB
}

// Open connects to the database at url (postgres://…).
func Open(ctx context.Context, url string) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad database url: %w", err)
	}
	if cfg.MaxConns < 8 {
		cfg.MaxConns = 8
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	return &DB{Store: sqlstore.New(db, db, Dialect()), Pool: pool, sql: db}, nil
}

// Close closes the store and the pool.
func (db *DB) Close() error {
	err := db.Store.Close()
	db.Pool.Close()
	return err
}

// Migrate applies pending migrations, holding an advisory lock meanwhile.
func (db *DB) Migrate(ctx context.Context) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db.sql, migrations.FS,
		goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Dialect is PostgreSQL's: $n placeholders, SQLSTATE 23505, serialization retries.
func Dialect() sqlstore.Dialect {
	code := func(err error) string {
		var e *pgconn.PgError
		if errors.As(err, &e) {
			return e.Code
		}
		return ""
	}
	return sqlstore.Dialect{
		Name:   "postgres",
		Dollar: true,
		// One fixed advisory lock key for the bootstrap transaction.
		SerializeTx: "SELECT pg_advisory_xact_lock(727001)",
		// Concurrent calls of one organization, on every node, add to its
		// call totals: spread over 32 rows they rarely wait for each
		// other's row lock (bumpCount).
		CountShards: 32,
		IsUnique:    func(err error) bool { return code(err) == "23505" },
		IsBusy: func(err error) bool {
			c := code(err)
			return c == "40001" || c == "40P01"
		},
	}
}
