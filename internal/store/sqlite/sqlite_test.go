package sqlite_test

import (
	"path/filepath"
	"testing"

	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/store/storetest"
)

// TestStore runs the store conformance suite on a fresh database file per subtest.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "s.db")
		db, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatalf("sqlite.Open(%s): %v", path, err)
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
