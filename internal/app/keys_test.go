package app

import (
	"context"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/id"
)

func createKey(t *testing.T, db *Database, org string, scopes ...string) string {
	t.Helper()
	k, secret := auth.NewKey(org, "test", scopes, time.Now())
	if err := db.CreateKey(context.Background(), k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	return secret
}

func createOrg(t *testing.T, db *Database, name string) string {
	t.Helper()
	o := auth.Org{ID: id.New(id.Org), Name: name, CreatedAt: time.Now()}
	if err := db.CreateOrg(context.Background(), o); err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	return o.ID
}
