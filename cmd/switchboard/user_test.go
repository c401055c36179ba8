package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestUserCLI: an operator is created with a password from stdin or the
// environment (never a flag), listed, refused twice or with a short
// password, and deleted.
func TestUserCLI(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "users.db")
	out, err := runCLI(t, "org", "create", "--name", "Acme", "--db", db)
	if err != nil {
		t.Fatalf("org create: %v", err)
	}
	org := lastLine(out)

	var stdout, stderr bytes.Buffer
	err = userCreate(context.Background(), []string{"--org", org, "--email", " Ops@Example.com ", "--name", "Ops", "--db", db},
		strings.NewReader("a long enough password\n"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("user create (password on stdin): %v", err)
	}
	opID := lastLine(stdout.String())
	if !strings.HasPrefix(opID, "op_") {
		t.Fatalf("user create printed %q last; want the operator id", opID)
	}

	t.Setenv("SWITCHBOARD_USER_PASSWORD", "another long password")
	if _, err := runCLI(t, "user", "create", "--org", org, "--email", "second@example.com", "--db", db); err != nil {
		t.Fatalf("user create (SWITCHBOARD_USER_PASSWORD): %v", err)
	}
	if _, err := runCLI(t, "user", "create", "--org", org, "--email", "OPS@example.com", "--db", db); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("user create with a taken email (other case) = %v; want an 'already exists' error", err)
	}
	t.Setenv("SWITCHBOARD_USER_PASSWORD", "short")
	if _, err := runCLI(t, "user", "create", "--org", org, "--email", "third@example.com", "--db", db); err == nil || !strings.Contains(err.Error(), "at least 12") {
		t.Errorf("user create with a 5-character password = %v; want 'at least 12 characters'", err)
	}
	if _, err := runCLI(t, "user", "create", "--org", org, "--email", "x@example.com", "--password", "flags are not read", "--db", db); err == nil {
		t.Errorf("user create --password: accepted; want the flag refused")
	}

	out, err = runCLI(t, "user", "list", "--org", org, "--db", db)
	if err != nil {
		t.Fatalf("user list: %v", err)
	}
	if !strings.Contains(out, "ops@example.com") || !strings.Contains(out, "second@example.com") || strings.Contains(out, "third@") || strings.Contains(out, "$2") {
		t.Errorf("user list =\n%s\nwant ops@ and second@ (normalized), not third@, and no password hash", out)
	}
	if _, err := runCLI(t, "user", "delete", opID, "--db", db); err != nil {
		t.Fatalf("user delete: %v", err)
	}
	out, _ = runCLI(t, "user", "list", "--org", org, "--db", db)
	if strings.Contains(out, "ops@example.com") {
		t.Errorf("user list after delete still shows ops@example.com:\n%s", out)
	}
	if _, err := runCLI(t, "user", "delete", opID, "--db", db); err == nil {
		t.Errorf("user delete of a deleted operator: no error")
	}
}
