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

// TestStore runs the store conformance suite with a fresh database per
// subtest (CREATE DATABASE sbtest_<random>, dropped afterwards).
func TestStore(t *testing.T) {
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

	storetest.Run(t, func(t *testing.T) store.Store {
		name := "sbtest_" + id.Random(8)
		if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name); err != nil {
			t.Fatalf("CREATE DATABASE %s: %v", name, err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				t.Errorf("DROP DATABASE %s: %v", name, err)
			}
		})
		u := *base
		u.Path = "/" + name
		u.RawPath = ""
		db, err := postgres.Open(t.Context(), u.String())
		if err != nil {
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
	})
}
