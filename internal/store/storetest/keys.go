package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/id"
)

func testBootstrap(t *testing.T, open Opener) {
	t.Run("FirstCallCreatesSecondDoesNot", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()

		org1 := newOrg("First", t0)
		key1 := newKey(org1.ID, "bootstrap", t0)
		created, err := s.Bootstrap(ctx, org1, key1)
		if err != nil || !created {
			t.Fatalf("Bootstrap(%s, %s) on an empty store = %v, %v; want true, nil", org1.ID, key1.ID, created, err)
		}
		gotOrg, err := s.GetOrg(ctx, org1.ID)
		must(t, "GetOrg(bootstrapped org)", err)
		equal(t, fmt.Sprintf("GetOrg(%s)", org1.ID), normOrg(gotOrg), normOrg(org1))
		gotKey, err := s.GetKey(ctx, key1.ID)
		must(t, "GetKey(bootstrapped key)", err)
		equal(t, fmt.Sprintf("GetKey(%s)", key1.ID), normKey(gotKey), normKey(key1))

		org2 := newOrg("Second", at(time.Hour))
		key2 := newKey(org2.ID, "bootstrap", at(time.Hour))
		created, err = s.Bootstrap(ctx, org2, key2)
		if err != nil || created {
			t.Fatalf("Bootstrap(%s, %s) after a first bootstrap = %v, %v; want false, nil", org2.ID, key2.ID, created, err)
		}
		_, err = s.GetOrg(ctx, org2.ID)
		wantKind(t, fmt.Sprintf("GetOrg(%s) of the org of a refused Bootstrap", org2.ID), err, apperr.NotFound)
		_, err = s.GetKey(ctx, key2.ID)
		wantKind(t, fmt.Sprintf("GetKey(%s) of the key of a refused Bootstrap", key2.ID), err, apperr.NotFound)
		keys, err := s.ListKeys(ctx, org1.ID)
		must(t, "ListKeys", err)
		equal(t, fmt.Sprintf("ListKeys(%s)", org1.ID), norm(keys, normKey), norm([]auth.Key{key1}, normKey))
	})

	t.Run("NotAfterCreateOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		mustOrg(t, s, "Existing")
		org := newOrg("Late", t0)
		key := newKey(org.ID, "bootstrap", t0)
		created, err := s.Bootstrap(ctx, org, key)
		if err != nil || created {
			t.Fatalf("Bootstrap(%s) when an org already exists = %v, %v; want false, nil", org.ID, created, err)
		}
		_, err = s.GetOrg(ctx, org.ID)
		wantKind(t, fmt.Sprintf("GetOrg(%s)", org.ID), err, apperr.NotFound)
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		const n = 8
		orgs := make([]auth.Org, n)
		keys := make([]auth.Key, n)
		created := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			orgs[i] = newOrg(fmt.Sprintf("Racer %d", i), t0)
			keys[i] = newKey(orgs[i].ID, "bootstrap", t0)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				created[i], errs[i] = s.Bootstrap(ctx, orgs[i], keys[i])
			})
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := range n {
			if errs[i] != nil {
				t.Errorf("Bootstrap(racer %d) = %v; want no error", i, errs[i])
			}
			if created[i] {
				winners++
			}
		}
		if winners != 1 {
			t.Errorf("Bootstrap from %d goroutines: %d reported true; want exactly 1", n, winners)
		}
		stored := 0
		for i := range n {
			_, err := s.GetOrg(ctx, orgs[i].ID)
			_, kerr := s.GetKey(ctx, keys[i].ID)
			switch {
			case err == nil && kerr == nil:
				stored++
				if !created[i] {
					t.Errorf("racer %d: its org and key are stored but its Bootstrap reported false", i)
				}
			case apperr.Is(err, apperr.NotFound) && apperr.Is(kerr, apperr.NotFound):
				if created[i] {
					t.Errorf("racer %d: Bootstrap reported true but GetOrg = %v, GetKey = %v", i, err, kerr)
				}
			default:
				t.Errorf("racer %d: GetOrg = %v, GetKey = %v; want both found or both NotFound", i, err, kerr)
			}
		}
		if stored != 1 {
			t.Errorf("after concurrent Bootstrap, %d organizations are stored; want exactly 1", stored)
		}
	})
}

func testKeys(t *testing.T, open Opener) {
	t.Run("OrgRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := newOrg("Acme", t0)
		must(t, "CreateOrg", s.CreateOrg(ctx, o))
		got, err := s.GetOrg(ctx, o.ID)
		must(t, "GetOrg", err)
		equal(t, fmt.Sprintf("GetOrg(%s)", o.ID), normOrg(got), normOrg(o))
		_, err = s.GetOrg(ctx, id.New(id.Org))
		wantKind(t, "GetOrg(unknown id)", err, apperr.NotFound)
	})

	t.Run("CreateKeyMissingOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		k := newKey(id.New(id.Org), "orphan", t0)
		err := s.CreateKey(ctx, k)
		wantKind(t, fmt.Sprintf("CreateKey(key of missing org %s)", k.OrgID), err, apperr.NotFound)
		_, err = s.GetKey(ctx, k.ID)
		wantKind(t, fmt.Sprintf("GetKey(%s) after a refused CreateKey", k.ID), err, apperr.NotFound)
	})

	t.Run("GetKeyRoundTrip", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		k := newKey(o.ID, "ci", at(1500*time.Microsecond))
		must(t, "CreateKey", s.CreateKey(ctx, k))
		got, err := s.GetKey(ctx, k.ID)
		must(t, "GetKey", err)
		equal(t, fmt.Sprintf("GetKey(%s)", k.ID), normKey(got), normKey(k))
		if len(got.Scopes) != 3 || len(got.Hash) != 32 || got.Last4 != k.Last4 {
			t.Errorf("GetKey(%s) = scopes %v, hash %d bytes, last4 %q; want %v, 32 bytes, %q", k.ID, got.Scopes, len(got.Hash), got.Last4, k.Scopes, k.Last4)
		}
		if !got.LastUsedAt.IsZero() || !got.RevokedAt.IsZero() {
			t.Errorf("GetKey(%s) of a new key: LastUsedAt %v, RevokedAt %v; want both zero", k.ID, got.LastUsedAt, got.RevokedAt)
		}
		_, err = s.GetKey(ctx, id.New(id.Key))
		wantKind(t, "GetKey(unknown id)", err, apperr.NotFound)
	})

	t.Run("ListKeysScopedToOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a, b := mustOrg(t, s, "A"), mustOrg(t, s, "B")
		ka1, ka2 := newKey(a.ID, "one", at(time.Second)), newKey(a.ID, "two", at(2*time.Second))
		kb := newKey(b.ID, "b", at(time.Second))
		for _, k := range []auth.Key{ka2, kb, ka1} {
			must(t, "CreateKey("+k.Name+")", s.CreateKey(ctx, k))
		}
		got, err := s.ListKeys(ctx, a.ID)
		must(t, "ListKeys(A)", err)
		equal(t, "ListKeys(A)", norm(got, normKey), norm([]auth.Key{ka1, ka2}, normKey))
		got, err = s.ListKeys(ctx, b.ID)
		must(t, "ListKeys(B)", err)
		equal(t, "ListKeys(B)", norm(got, normKey), norm([]auth.Key{kb}, normKey))
		got, err = s.ListKeys(ctx, id.New(id.Org))
		must(t, "ListKeys(unknown org)", err)
		if len(got) != 0 {
			t.Errorf("ListKeys(unknown org) = %d keys; want none", len(got))
		}
	})

	t.Run("RevokeKey", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		k, other := newKey(o.ID, "k", t0), newKey(o.ID, "other", t0)
		must(t, "CreateKey", s.CreateKey(ctx, k))
		must(t, "CreateKey", s.CreateKey(ctx, other))

		first := at(time.Minute + 250*time.Microsecond)
		must(t, "RevokeKey", s.RevokeKey(ctx, k.ID, first))
		got, err := s.GetKey(ctx, k.ID)
		must(t, "GetKey", err)
		if !got.RevokedAt.Equal(msTime(first)) || !got.Revoked() {
			t.Errorf("GetKey(%s) after RevokeKey(at %v): RevokedAt = %v; want %v", k.ID, first, got.RevokedAt, msTime(first))
		}
		must(t, "RevokeKey (again)", s.RevokeKey(ctx, k.ID, at(time.Hour)))
		got, err = s.GetKey(ctx, k.ID)
		must(t, "GetKey", err)
		if !got.RevokedAt.Equal(msTime(first)) {
			t.Errorf("GetKey(%s) after a second RevokeKey(at %v): RevokedAt = %v; want the first time %v", k.ID, at(time.Hour), got.RevokedAt, msTime(first))
		}
		got, err = s.GetKey(ctx, other.ID)
		must(t, "GetKey(other)", err)
		if got.Revoked() {
			t.Errorf("GetKey(%s) of a key never revoked: RevokedAt = %v; want zero", other.ID, got.RevokedAt)
		}
		err = s.RevokeKey(ctx, id.New(id.Key), t0)
		wantKind(t, "RevokeKey(unknown id)", err, apperr.NotFound)
	})

	t.Run("TouchKeys", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		k1, k2 := newKey(o.ID, "one", t0), newKey(o.ID, "two", t0)
		must(t, "CreateKey", s.CreateKey(ctx, k1))
		must(t, "CreateKey", s.CreateKey(ctx, k2))
		check := func(step string, k auth.Key, want time.Time) {
			t.Helper()
			got, err := s.GetKey(ctx, k.ID)
			must(t, "GetKey", err)
			if !got.LastUsedAt.Equal(msTime(want)) {
				t.Errorf("%s: GetKey(%s).LastUsedAt = %v; want %v", step, k.Name, got.LastUsedAt, msTime(want))
			}
		}
		must(t, "TouchKeys(empty)", s.TouchKeys(ctx, nil))
		t5, t3 := at(5*time.Second+700*time.Microsecond), at(3*time.Second)
		must(t, "TouchKeys", s.TouchKeys(ctx, map[string]time.Time{k1.ID: t5, k2.ID: t3}))
		check("TouchKeys{one: t5, two: t3}", k1, t5)
		check("TouchKeys{one: t5, two: t3}", k2, t3)
		must(t, "TouchKeys", s.TouchKeys(ctx, map[string]time.Time{k1.ID: at(4 * time.Second), k2.ID: at(6 * time.Second)}))
		check("TouchKeys{one: t4 (older), two: t6}", k1, t5)
		check("TouchKeys{one: t4 (older), two: t6}", k2, at(6*time.Second))
		must(t, "TouchKeys", s.TouchKeys(ctx, map[string]time.Time{k1.ID: at(9 * time.Second)}))
		check("TouchKeys{one: t9}", k1, at(9*time.Second))
		check("TouchKeys{one: t9}", k2, at(6*time.Second))
	})
}
