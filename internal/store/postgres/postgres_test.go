package postgres_test

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/store/postgres"
	"switchboard/internal/store/storetest"
)

// envURL names the variable holding the URL of a PostgreSQL server the
// tests may create and drop databases on.
const envURL = "SWITCHBOARD_TEST_POSTGRES"

// server is the PostgreSQL server of envURL: its URL and an admin pool.
type server struct {
	base  *url.URL
	admin *pgxpool.Pool
}

// newServer connects to the server of envURL, or skips the test when the
// variable is not set.
func newServer(t *testing.T) server {
	t.Helper()
	raw := os.Getenv(envURL)
	if raw == "" {
		t.Skip(envURL + " is not set; set it to a PostgreSQL URL whose user may create databases " +
			"(e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) to run the store suite on PostgreSQL")
	}
	base, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: bad URL: %v", envURL, err)
	}
	admin, err := pgxpool.New(t.Context(), raw)
	if err != nil {
		t.Fatalf("connect to %s: %v", envURL, err)
	}
	t.Cleanup(admin.Close)
	if err := admin.Ping(t.Context()); err != nil {
		t.Fatalf("connect to %s: %v", envURL, err)
	}
	return server{base: base, admin: admin}
}

// database creates a fresh database (sbtest_<random>), dropped after the
// test, and returns its URL.
func (srv server) database(t *testing.T) string {
	t.Helper()
	name := "sbtest_" + id.Random(8)
	if _, err := srv.admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("CREATE DATABASE %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := srv.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("DROP DATABASE %s: %v", name, err)
		}
	})
	u := *srv.base
	u.Path = "/" + name
	u.RawPath = ""
	return u.String()
}

// open opens and migrates the store at dbURL, closed after the test.
func open(t *testing.T, dbURL string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), dbURL)
	if err != nil {
		u, _ := url.Parse(dbURL)
		t.Fatalf("postgres.Open(%s): %v", u.Redacted(), err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if err := db.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

// TestStore runs the store conformance suite with a fresh database per
// subtest (CREATE DATABASE sbtest_<random>, dropped afterwards).
func TestStore(t *testing.T) {
	srv := newServer(t)
	storetest.Run(t, func(t *testing.T) store.Store { return open(t, srv.database(t)) })
}

// TestTwoNodes runs the lease tests with two stores on one database, each
// with its own pool, as two nodes of a cluster.
func TestTwoNodes(t *testing.T) {
	srv := newServer(t)
	storetest.RunTwoNodes(t, func(t *testing.T) (store.Store, store.Store) {
		dbURL := srv.database(t)
		return open(t, dbURL), open(t, dbURL)
	})
}
