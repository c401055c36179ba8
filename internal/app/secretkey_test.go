package app

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/secret"
)

// TestOpenSealer: where the secret key comes from, and that PostgreSQL
// without one refuses to start with a message saying what to give.
func TestOpenSealer(t *testing.T) {
	t.Parallel()
	log := discardLogger()
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "data", "sb.db")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := openSealer(Config{DB: db}, log)
	if err != nil {
		t.Fatalf("openSealer(SQLite, no key) = %v; want a key file made next to the database", err)
	}
	path := filepath.Join(dir, "data", SecretKeyFileName)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %s: %v, mode %v; want it created 0600", path, err, fi.Mode())
	}
	sealed := s.Seal([]byte("pw"), []byte("conn_x"))
	again, err := openSealer(Config{DB: db}, log)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := again.Open(sealed, []byte("conn_x")); err != nil || string(plain) != "pw" {
		t.Errorf("a second start did not reuse the key file: Open = %q, %v", plain, err)
	}
	fromFile, err := openSealer(Config{DB: "postgres://db.example/sb", SecretKeyFile: path}, log)
	if err != nil {
		t.Fatalf("openSealer(PostgreSQL, SecretKeyFile) = %v", err)
	}
	if _, err := fromFile.Open(sealed, []byte("conn_x")); err != nil {
		t.Errorf("the key given as SecretKeyFile is not the file's: %v", err)
	}
	raw, _ := os.ReadFile(path)
	key, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	given, err := openSealer(Config{DB: "postgres://db.example/sb", SecretKey: key}, log)
	if err != nil {
		t.Fatalf("openSealer(PostgreSQL, SecretKey) = %v", err)
	}
	if _, err := given.Open(sealed, []byte("conn_x")); err != nil {
		t.Errorf("the key given as SecretKey is not used: %v", err)
	}

	for name, cfg := range map[string]Config{
		"PostgreSQL without a key": {DB: "postgres://db.example/sb"},
		"a missing key file":       {DB: db, SecretKeyFile: filepath.Join(dir, "nope.key")},
		"a short key":              {DB: db, SecretKey: []byte("short")},
	} {
		if _, err := openSealer(cfg, log); err == nil {
			t.Errorf("openSealer(%s) = nil error; want one", name)
		} else if name == "PostgreSQL without a key" && (!strings.Contains(err.Error(), "--secret-key-file") || !strings.Contains(err.Error(), "SWITCHBOARD_SECRET_KEY")) {
			t.Errorf("openSealer(%s) = %q; want it to name --secret-key-file and SWITCHBOARD_SECRET_KEY", name, err)
		}
	}
}

// TestSecretKeySurvivesRestart: with SQLite and no key given, the server
// makes switchboard.key next to the database, and after a restart the
// password of a connection still opens with it.
func TestSecretKeySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig("sqlite:" + filepath.Join(dir, "sb.db"))
	cfg.SecretKey = nil
	b := start(t, cfg)
	id := b.must(201, "POST", "/v1/phone/connections", trunk("T", "s3cret-pass", "+16175550100")).data()["id"].(string)
	b.restart()
	if got := b.must(200, "GET", "/v1/phone/connections/"+id, nil).data()["sip"].(map[string]any)["hasPassword"]; got != true {
		t.Errorf("after a restart hasPassword = %v, want true", got)
	}
	key, created, err := secret.LoadKeyFile(filepath.Join(dir, SecretKeyFileName), false)
	if err != nil || created {
		t.Fatalf("switchboard.key next to the database: %v", err)
	}
	s, _ := secret.New(key)
	raw, _ := base64.StdEncoding.DecodeString(b.sealedPassword(id))
	if plain, err := s.Open(raw, []byte(id)); err != nil || string(plain) != "s3cret-pass" {
		t.Errorf("the stored password does not open with switchboard.key: %q, %v", plain, err)
	}
}
