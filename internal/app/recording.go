package app

import (
	"path/filepath"
	"strings"
)

// DefaultPostgresDataDir is the data directory with PostgreSQL when none is
// given.
const DefaultPostgresDataDir = "data"

// dataDir is where the server keeps its files (the call recordings, under
// recordings/<orgID>/<callID>.wav): Config.DataDir; else the directory of
// the SQLite database; else, with PostgreSQL, ./data. Nodes that share a
// PostgreSQL database serve only the recordings on their own disk unless
// the directory is shared (docs/api.md, "Recordings").
func dataDir(cfg Config) string {
	switch {
	case cfg.DataDir != "":
		return cfg.DataDir
	case strings.HasPrefix(cfg.DB, "sqlite:"):
		return filepath.Dir(strings.TrimPrefix(strings.TrimPrefix(cfg.DB, "sqlite:"), "//"))
	default:
		return DefaultPostgresDataDir
	}
}
