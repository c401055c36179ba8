// Package sqlite opens the SQLite store (modernc.org/sqlite, pure Go): WAL,
// a busy timeout, one writer connection and a small pool of read-only
// readers, and migrates it.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"switchboard/internal/store/migrations"
	"switchboard/internal/store/sqlstore"
)

// DB is an open SQLite database.
type DB struct {
	*sqlstore.Store
	// Writer is the single-connection pool every write (and the job queue) uses.
	Writer *sql.DB
}

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
		}
	}
	pragmas := "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)"
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + pragmas
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	// Readers map the file (no read syscall per page) and keep a larger
	// page cache: listings walk index pages of millions of rows.
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)&_pragma=mmap_size(1073741824)&_pragma=cache_size(-32000)")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	return &DB{Store: sqlstore.New(w, r, Dialect()), Writer: w}, nil
}

// Migrate applies the schema migrations that are not applied yet.
func (db *DB) Migrate(ctx context.Context) error {
	p, err := goose.NewProvider(goose.DialectSQLite3, db.Writer, migrations.FS, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// Dialect is SQLite's: "?" placeholders, SQLITE_CONSTRAINT_UNIQUE, SQLITE_BUSY.
func Dialect() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:              "sqlite",
		UncancelableReads: true,
		IsUnique: func(err error) bool {
			var e *sqlite.Error
			if errors.As(err, &e) {
				return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
			}
			return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed")
		},
		IsBusy: func(err error) bool {
			var e *sqlite.Error
			if errors.As(err, &e) {
				return e.Code()&0xff == sqlite3.SQLITE_BUSY || e.Code()&0xff == sqlite3.SQLITE_LOCKED
			}
			return false
		},
	}
}
