package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/secret"
)

// TestServeSecretKey: the secret key comes from SWITCHBOARD_SECRET_KEY or
// --secret-key-file (one of them), is checked, and never written out; with
// neither, SQLite gets switchboard.key next to its database.
func TestServeSecretKey(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "serve.db")
	keyFile := filepath.Join(t.TempDir(), "given.key")
	key := secret.EncodeKey(secret.NewKey())
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fail := func(what string, want string, args ...string) {
		t.Helper()
		var sink bytes.Buffer
		err := run(context.Background(), append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db}, args...), &sink, &sink)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve with %s: err = %v, want a refusal naming %s", what, err, want)
		}
	}

	t.Setenv("SWITCHBOARD_SECRET_KEY", key)
	fail("both SWITCHBOARD_SECRET_KEY and --secret-key-file", "not both", "--secret-key-file", keyFile)
	out, logs := serveOnce(t, "--addr", "127.0.0.1:0", "--db", db)
	if strings.Contains(out+logs, key) {
		t.Errorf("serve writes the secret key out")
	}
	if _, err := os.Stat(filepath.Join(dir, "switchboard.key")); err == nil {
		t.Errorf("serve with SWITCHBOARD_SECRET_KEY made switchboard.key anyway")
	}
	t.Setenv("SWITCHBOARD_SECRET_KEY", "c2hvcnQ=")
	fail("a 5-byte SWITCHBOARD_SECRET_KEY", "SWITCHBOARD_SECRET_KEY")

	t.Setenv("SWITCHBOARD_SECRET_KEY", "")
	serveOnce(t, "--addr", "127.0.0.1:0", "--db", db, "--secret-key-file", keyFile)
	fail("a missing --secret-key-file", "--secret-key-file", "--secret-key-file", filepath.Join(dir, "missing.key"))
	serveOnce(t, "--addr", "127.0.0.1:0", "--db", db)
	if _, err := os.Stat(filepath.Join(dir, "switchboard.key")); err != nil {
		t.Errorf("serve on SQLite without a key: %v; want switchboard.key made next to the database", err)
	}
}
