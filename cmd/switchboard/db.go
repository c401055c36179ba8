package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"switchboard/internal/app"
)

// dbUse says what a command does with its database when the SQLite file
// is not there.
type dbUse int

const (
	// dbExisting commands read or change what is already in a database
	// (keys, operators, an organization's records): a missing SQLite file
	// is refused, since a new, empty database would only answer "not
	// found" about records that are in another one.
	dbExisting dbUse = iota
	// dbMayCreate commands (org create, migrate) may start a new database,
	// and say so.
	dbMayCreate
)

// openDB opens and migrates the database a command uses, after naming it
// on stderr: every admin command works on the database of the directory
// it runs in (./data by default), which is not the server's when run from
// elsewhere.
func openDB(ctx context.Context, dbURL string, use dbUse, stderr io.Writer) (*app.Database, error) {
	name, missing, err := describeDB(dbURL)
	if err != nil {
		return nil, err
	}
	switch {
	case missing && use == dbExisting:
		return nil, fmt.Errorf("no database at %s: run this command from the directory that holds ./data (where `switchboard serve` runs), "+
			"or pass --db (env SWITCHBOARD_DB) naming the server's database, e.g. --db sqlite:/srv/switchboard/data/switchboard.db", name)
	case missing:
		fmt.Fprintf(stderr, "switchboard: database %s does not exist: creating a new, empty one\n", name)
	default:
		fmt.Fprintf(stderr, "switchboard: database %s\n", name)
	}
	return app.OpenMigrated(ctx, dbURL)
}

// describeDB names a database for people: a SQLite file by its absolute
// path (missing says whether it exists), PostgreSQL by its URL without
// the password.
func describeDB(dbURL string) (name string, missing bool, err error) {
	path, ok := sqlitePath(dbURL)
	if !ok {
		u, err := url.Parse(dbURL)
		if err != nil || u.Scheme == "" {
			return "", false, fmt.Errorf("--db %q: want sqlite:PATH or postgres://…", dbURL)
		}
		return u.Redacted(), false, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	_, err = os.Stat(path)
	return "sqlite:" + abs, errors.Is(err, fs.ErrNotExist), nil
}

// sqlitePath is the file of a sqlite: URL (as app.OpenDatabase reads it).
func sqlitePath(dbURL string) (string, bool) {
	p, ok := strings.CutPrefix(dbURL, "sqlite:")
	return strings.TrimPrefix(p, "//"), ok
}
