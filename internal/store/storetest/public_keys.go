package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

func newPublicKey(orgID, name string, assistants, origins []string, created time.Time) auth.PublicKey {
	k, _ := auth.NewPublicKey(orgID, name, assistants, origins, created)
	return k
}

func normPublicKey(k auth.PublicKey) auth.PublicKey {
	k.AssistantIDs, k.Origins, k.Hash = nilIfEmpty(k.AssistantIDs), nilIfEmpty(k.Origins), nilIfEmpty(k.Hash)
	k.CreatedAt, k.RevokedAt = msTime(k.CreatedAt), msTime(k.RevokedAt)
	return k
}

func publicKeyIDs(ks []auth.PublicKey) []string {
	return ids(ks, func(k auth.PublicKey) string { return k.ID })
}

func testPublicKeys(t *testing.T, open Opener) {
	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		a1, a2 := mustAssistant(t, s, o.ID, "one", t0), mustAssistant(t, s, o.ID, "two", t0)
		k := newPublicKey(o.ID, "shop", []string{a2.ID, a1.ID}, []string{"https://shop.example.com", "http://localhost:3000"}, at(1500*time.Microsecond))
		must(t, "CreatePublicKey", s.CreatePublicKey(ctx, k))
		got, err := s.GetPublicKey(ctx, k.ID)
		must(t, "GetPublicKey", err)
		equal(t, fmt.Sprintf("GetPublicKey(%s)", k.ID), normPublicKey(got), normPublicKey(k))
		if len(got.Hash) != 32 || got.Revoked() {
			t.Errorf("GetPublicKey(%s): hash %d bytes, revoked %v; want 32 bytes, not revoked", k.ID, len(got.Hash), got.Revoked())
		}
		_, err = s.GetPublicKey(ctx, id.New(id.PublicKey))
		wantKind(t, "GetPublicKey(unknown id)", err, apperr.NotFound)
	})

	t.Run("AssistantsMustExistInOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		mine, theirs := mustAssistant(t, s, o.ID, "mine", t0), mustAssistant(t, s, other.ID, "theirs", t0)
		k := newPublicKey(o.ID, "shop", []string{mine.ID, theirs.ID, id.New(id.Assistant)}, []string{"https://shop.example.com"}, t0)
		err := s.CreatePublicKey(ctx, k)
		if wantKind(t, "CreatePublicKey(another org's and an unknown assistant)", err, apperr.NotFound) {
			if got, want := fieldNames(err), []string{"assistantIds[1]", "assistantIds[2]"}; !slices.Equal(got, want) {
				t.Errorf("CreatePublicKey(another org's and an unknown assistant): fields %v; want %v", got, want)
			}
		}
		_, err = s.GetPublicKey(ctx, k.ID)
		wantKind(t, "GetPublicKey after a refused CreatePublicKey", err, apperr.NotFound)
		ok, err := s.PublicOriginAllowed(ctx, "https://shop.example.com")
		must(t, "PublicOriginAllowed", err)
		if ok {
			t.Errorf("PublicOriginAllowed(origin of a refused key) = true; want false")
		}
	})

	t.Run("ListPagedNewestFirstScopedToOrg", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a, b := mustAssistant(t, s, o.ID, "a", t0), mustAssistant(t, s, other.ID, "b", t0)
		var want []auth.PublicKey
		for i := range 5 {
			k := newPublicKey(o.ID, fmt.Sprint("k", i), []string{a.ID}, []string{fmt.Sprintf("https://s%d.example", i)}, at(time.Duration(i)*time.Second))
			must(t, "CreatePublicKey", s.CreatePublicKey(ctx, k))
			want = append([]auth.PublicKey{k}, want...)
		}
		must(t, "CreatePublicKey(other org)", s.CreatePublicKey(ctx, newPublicKey(other.ID, "x", []string{b.ID}, []string{"https://x.example"}, t0)))
		for _, tt := range []struct {
			p    store.Page
			want []auth.PublicKey
		}{
			{store.Page{Page: 1, PageSize: 2}, want[:2]},
			{store.Page{Page: 3, PageSize: 2}, want[4:]},
			{store.Page{Page: 4, PageSize: 2}, nil},
			{store.Page{Page: 1, PageSize: 100}, want},
		} {
			got, total, err := s.ListPublicKeys(ctx, o.ID, tt.p)
			must(t, "ListPublicKeys", err)
			if total != 5 {
				t.Errorf("ListPublicKeys(%s) total = %d; want 5", describePage(tt.p), total)
			}
			sameIDs(t, fmt.Sprintf("ListPublicKeys(%s)", describePage(tt.p)), publicKeyIDs(got), publicKeyIDs(tt.want))
			if len(got) > 0 {
				equal(t, "ListPublicKeys first", normPublicKey(got[0]), normPublicKey(tt.want[0]))
			}
		}
		got, total, err := s.ListPublicKeys(ctx, id.New(id.Org), store.Page{Page: 1, PageSize: 20})
		must(t, "ListPublicKeys(unknown org)", err)
		if len(got) != 0 || total != 0 {
			t.Errorf("ListPublicKeys(unknown org) = %d keys, total %d; want none", len(got), total)
		}
	})

	t.Run("RevokeAndOrigins", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a := mustAssistant(t, s, o.ID, "a", t0)
		k1 := newPublicKey(o.ID, "one", []string{a.ID}, []string{"https://shared.example", "https://one.example"}, t0)
		k2 := newPublicKey(o.ID, "two", []string{a.ID}, []string{"https://shared.example"}, t0)
		must(t, "CreatePublicKey", s.CreatePublicKey(ctx, k1))
		must(t, "CreatePublicKey", s.CreatePublicKey(ctx, k2))
		allowed := func(step, origin string, want bool) {
			t.Helper()
			got, err := s.PublicOriginAllowed(ctx, origin)
			must(t, "PublicOriginAllowed", err)
			if got != want {
				t.Errorf("%s: PublicOriginAllowed(%s) = %v; want %v", step, origin, got, want)
			}
		}
		allowed("two active keys", "https://shared.example", true)
		allowed("two active keys", "https://one.example", true)
		allowed("two active keys", "https://ONE.example", false)
		allowed("two active keys", "https://nobody.example", false)

		_, err := s.RevokePublicKey(ctx, other.ID, k1.ID, t0)
		wantKind(t, "RevokePublicKey(another org's key)", err, apperr.NotFound)
		allowed("after another org's revoke", "https://one.example", true)

		first := at(time.Minute + 250*time.Microsecond)
		got, err := s.RevokePublicKey(ctx, o.ID, k1.ID, first)
		must(t, "RevokePublicKey", err)
		if !got.RevokedAt.Equal(msTime(first)) || got.ID != k1.ID {
			t.Errorf("RevokePublicKey(%s, at %v) = %s revoked at %v; want %v", k1.ID, first, got.ID, got.RevokedAt, msTime(first))
		}
		got, err = s.RevokePublicKey(ctx, o.ID, k1.ID, at(time.Hour))
		must(t, "RevokePublicKey (again)", err)
		if !got.RevokedAt.Equal(msTime(first)) {
			t.Errorf("a second RevokePublicKey: RevokedAt = %v; want the first time %v", got.RevokedAt, msTime(first))
		}
		stored, err := s.GetPublicKey(ctx, k1.ID)
		must(t, "GetPublicKey", err)
		if !stored.Revoked() {
			t.Errorf("GetPublicKey(%s) after RevokePublicKey: not revoked", k1.ID)
		}
		allowed("one key revoked", "https://one.example", false)
		allowed("one key revoked", "https://shared.example", true)
		_, err = s.RevokePublicKey(ctx, o.ID, k2.ID, first)
		must(t, "RevokePublicKey(two)", err)
		allowed("both revoked", "https://shared.example", false)
		_, err = s.RevokePublicKey(ctx, o.ID, id.New(id.PublicKey), t0)
		wantKind(t, "RevokePublicKey(unknown id)", err, apperr.NotFound)
	})

	t.Run("CallRemembersItsKey", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		c := newCall(o.ID, call.Web, t0)
		c.PublicKeyID = id.New(id.PublicKey)
		mustCall(t, s, c)
		got, err := s.GetCallAnyOrg(ctx, c.ID)
		must(t, "GetCallAnyOrg", err)
		if got.PublicKeyID != c.PublicKeyID {
			t.Errorf("GetCallAnyOrg(%s).PublicKeyID = %q; want %q", c.ID, got.PublicKeyID, c.PublicKeyID)
		}
	})
}
