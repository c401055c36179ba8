package app

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"switchboard/internal/secret"
)

// SecretKeyFileName is the key file kept next to a SQLite database when no
// key is given.
const SecretKeyFileName = "switchboard.key"

// openSealer makes the Sealer of the server's secret key, which seals the
// passwords of phone connections (internal/secret). The key is, in order:
// Config.SecretKey; the file Config.SecretKeyFile; with SQLite,
// switchboard.key next to the database file, created (0600, 32 random
// bytes) when missing. With PostgreSQL there is no default: every node must
// use the same key, so one must be given.
func openSealer(cfg Config, log *slog.Logger) (*secret.Sealer, error) {
	key := cfg.SecretKey
	switch {
	case len(key) > 0:
	case cfg.SecretKeyFile != "":
		k, _, err := secret.LoadKeyFile(cfg.SecretKeyFile, false)
		if err != nil {
			return nil, fmt.Errorf("--secret-key-file: %w", err)
		}
		key = k
	case strings.HasPrefix(cfg.DB, "sqlite:"):
		path := filepath.Join(filepath.Dir(strings.TrimPrefix(strings.TrimPrefix(cfg.DB, "sqlite:"), "//")), SecretKeyFileName)
		k, created, err := secret.LoadKeyFile(path, true)
		if err != nil {
			return nil, fmt.Errorf("secret key: %w", err)
		}
		if created {
			log.Warn("created the secret key that seals phone connection passwords; back it up with the database (without it they cannot be read)", "file", path)
		}
		key = k
	default:
		return nil, errors.New("with PostgreSQL, give the secret key that seals phone connection passwords, the same on every node: " +
			"--secret-key-file FILE (env SWITCHBOARD_SECRET_KEY_FILE) or SWITCHBOARD_SECRET_KEY (base64 of 32 random bytes, e.g. `openssl rand -base64 32`)")
	}
	s, err := secret.New(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return s, nil
}
