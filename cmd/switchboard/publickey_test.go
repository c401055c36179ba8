package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/app"
	"switchboard/internal/assistant"
	"switchboard/internal/id"
)

// TestCLIPublicKey: key create --public makes a publishable key for the
// organization's assistants and normalized origins, prints it alone on the
// last line, refuses bad input, and key list / key revoke cover it.
func TestCLIPublicKey(t *testing.T) {
	t.Parallel()
	db := "sqlite:" + filepath.Join(t.TempDir(), "cli.db")
	out, err := runCLI(t, "org", "create", "--name", "Acme", "--db", db)
	if err != nil {
		t.Fatalf("org create: %v", err)
	}
	org := lastLine(out)
	d, err := app.OpenMigrated(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	a := assistant.Assistant{ID: id.New(id.Assistant), OrgID: org, Name: "Ava", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := d.CreateAssistant(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	d.Close()

	out, err = runCLI(t, "key", "create", "--public", "--org", org, "--assistants", a.ID, "--origins", "HTTPS://Shop.Example.com:443, http://localhost:3000", "--name", "shop", "--db", db)
	if err != nil {
		t.Fatalf("key create --public: %v", err)
	}
	key := lastLine(out)
	if !strings.HasPrefix(key, "pk_") || strings.Contains(key, " ") {
		t.Fatalf("key create --public last line = %q, want the pk_ key alone", key)
	}
	list, err := runCLI(t, "key", "list", "--org", org, "--db", db)
	if err != nil || !strings.Contains(list, "publishable") || !strings.Contains(list, "https://shop.example.com,http://localhost:3000") {
		t.Fatalf("key list = %q, %v; want the publishable key with its normalized origins", list, err)
	}
	if strings.Contains(list, key) || strings.Contains(list, key[len(key)-10:]) {
		t.Errorf("key list shows the publishable key: %q", list)
	}
	var pkid string
	for _, line := range strings.Split(list, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "pkey_") {
			pkid = f[0]
		}
	}
	if _, err := runCLI(t, "key", "revoke", pkid, "--db", db); err != nil {
		t.Fatalf("key revoke %s: %v", pkid, err)
	}
	if list, _ := runCLI(t, "key", "list", "--org", org, "--db", db); !strings.Contains(list, pkid) || strings.HasSuffix(strings.TrimSpace(list), "-") {
		t.Errorf("after revoke, key list = %q, want a revoked time", list)
	}

	for _, args := range [][]string{
		{"--assistants", a.ID, "--origins", "https://*.example.com"},
		{"--assistants", a.ID, "--origins", "https://shop.example.com/path"},
		{"--assistants", a.ID},
		{"--origins", "https://shop.example.com"},
		{"--assistants", id.New(id.Assistant), "--origins", "https://shop.example.com"},
		{"--assistants", "nope", "--origins", "https://shop.example.com"},
		{"--assistants", a.ID, "--origins", "https://shop.example.com", "--scopes", "calls:write"},
	} {
		if _, err := runCLI(t, append([]string{"key", "create", "--public", "--org", org, "--db", db}, args...)...); err == nil {
			t.Errorf("key create --public %v succeeded, want an error", args)
		}
	}
	if _, err := runCLI(t, "key", "create", "--org", org, "--scopes", "calls:write", "--origins", "https://shop.example.com", "--db", db); err == nil {
		t.Errorf("key create (secret) with --origins succeeded, want an error")
	}
}
