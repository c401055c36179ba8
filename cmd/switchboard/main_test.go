package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, &out, &errb)
	return out.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// TestCLI: every command works on a brand-new database, in any order, and
// org/key create print their result alone on the last line.
func TestCLI(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	if _, err := runCLI(t, "key", "list", "--org", "org_none", "--db", db); err != nil {
		t.Fatalf("key list on a new database: %v", err)
	}
	out, err := runCLI(t, "org", "create", "--name", "Acme", "--db", db)
	if err != nil {
		t.Fatalf("org create: %v", err)
	}
	org := lastLine(out)
	if !strings.HasPrefix(org, "org_") || strings.Contains(org, " ") {
		t.Fatalf("org create last line = %q, want the id alone", org)
	}
	out, err = runCLI(t, "key", "create", "--org", org, "--scopes", "calls:read,phone:write", "--name", "ci", "--db", db)
	if err != nil {
		t.Fatalf("key create: %v", err)
	}
	key := lastLine(out)
	if !strings.HasPrefix(key, "sbk_") || strings.Contains(key, " ") {
		t.Fatalf("key create last line = %q, want the key alone", key)
	}
	list, err := runCLI(t, "key", "list", "--org", org, "--db", db)
	if err != nil || !strings.Contains(list, "calls:read,phone:write") {
		t.Fatalf("key list = %q, %v", list, err)
	}
	if strings.Contains(list, key) || strings.Contains(list, key[len(key)-10:]) {
		t.Errorf("key list shows the secret: %q", list)
	}
	kid := strings.Fields(strings.Split(list, "\n")[1])[0]
	if _, err := runCLI(t, "key", "revoke", kid, "--db", db); err != nil {
		t.Fatalf("key revoke %s: %v", kid, err)
	}
	if list, _ := runCLI(t, "key", "list", "--org", org, "--db", db); strings.Count(list, "\n") != 2 || strings.HasSuffix(strings.TrimSpace(list), "-") {
		t.Errorf("after revoke, key list = %q, want a revoked time", list)
	}
	if _, err := runCLI(t, "key", "create", "--org", org, "--scopes", "calls:read,admin", "--db", db); err == nil {
		t.Errorf("key create with an unknown scope succeeded")
	}
	if _, err := runCLI(t, "key", "create", "--org", "org_missing", "--scopes", "calls:read", "--db", db); err == nil {
		t.Errorf("key create for a missing org succeeded")
	}
	if _, err := runCLI(t, "migrate", "--db", "sqlite:"+filepath.Join(t.TempDir(), "m.db")); err != nil {
		t.Errorf("migrate on a new database: %v", err)
	}
	if out, err := runCLI(t, "version"); err != nil || !strings.HasPrefix(out, "switchboard ") {
		t.Errorf("version = %q, %v", out, err)
	}
	if _, err := runCLI(t, "frobnicate"); err == nil {
		t.Errorf("unknown command succeeded")
	}
}
