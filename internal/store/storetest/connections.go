package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

func newConnection(orgID string, created time.Time, numbers ...string) phone.Connection {
	return phone.Connection{
		ID: id.New(id.Connection), OrgID: orgID, Provider: phone.ProviderSIP, Name: "Trunk " + strings.Join(numbers, ","),
		SIP: phone.SIPConnection{
			Address: "sip.example.com:5060", Transport: "tls", Username: "acme",
			// Any bytes: what internal/secret sealed.
			SealedPassword: []byte{1, 0, 0xff, 0x80, 'x'},
			Numbers:        numbers, InboundSources: []string{"203.0.113.0/24", "2001:db8::/32"},
		},
		CreatedAt: created, UpdatedAt: created,
	}
}

func newTwilioConnection(orgID string, created time.Time) phone.Connection {
	return phone.Connection{
		ID: id.New(id.Connection), OrgID: orgID, Provider: phone.ProviderTwilio, Name: "Twilio",
		Twilio:    phone.TwilioConnection{AccountSID: "AC0123456789abcdef0123456789abcdef", SealedAuthToken: []byte{9, 0, 0xfe, 'y'}},
		CreatedAt: created, UpdatedAt: created,
	}
}

func mustConnection(t *testing.T, s store.Store, orgID string, created time.Time, numbers ...string) phone.Connection {
	t.Helper()
	c := newConnection(orgID, created, numbers...)
	must(t, fmt.Sprintf("CreateConnection(%s, %v)", c.ID, numbers), s.CreateConnection(t.Context(), c))
	return c
}

func normConnection(c phone.Connection) phone.Connection {
	c.CreatedAt, c.UpdatedAt = msTime(c.CreatedAt), msTime(c.UpdatedAt)
	c.SIP.SealedPassword = nilIfEmpty(c.SIP.SealedPassword)
	c.SIP.Numbers = nilIfEmpty(c.SIP.Numbers)
	c.SIP.InboundSources = nilIfEmpty(c.SIP.InboundSources)
	return c
}

// connectionNumbers checks ConnectionNumbers against want.
func connectionNumbers(t *testing.T, s store.Store, orgID, provider string, want []phone.ConnectionNumber) {
	t.Helper()
	got, err := s.ConnectionNumbers(t.Context(), orgID, provider)
	must(t, "ConnectionNumbers", err)
	equal(t, fmt.Sprintf("ConnectionNumbers(%s, %s)", orgID, provider), nilIfEmpty(got), nilIfEmpty(want))
}

func testConnections(t *testing.T, open Opener) {
	t.Run("CreateGetListDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c1 := mustConnection(t, s, o.ID, at(time.Second), number(1), number(2))
		c3 := newConnection(o.ID, at(3*time.Second), number(5))
		c3.SIP.SealedPassword, c3.SIP.Username, c3.SIP.InboundSources = nil, "", nil // no password, no sources
		must(t, "CreateConnection(no password, no sources)", s.CreateConnection(ctx, c3))
		c2 := mustConnection(t, s, o.ID, at(2*time.Second+300*time.Microsecond), number(3), number(4))
		foreign := mustConnection(t, s, other.ID, at(4*time.Second), number(9))

		for _, c := range []phone.Connection{c1, c2, c3} {
			got, err := s.GetConnection(ctx, o.ID, c.ID)
			must(t, "GetConnection", err)
			equal(t, fmt.Sprintf("GetConnection(%s)", c.ID), normConnection(got), normConnection(c))
			_, err = s.GetConnection(ctx, other.ID, c.ID)
			wantKind(t, "GetConnection(other org, id)", err, apperr.NotFound)
		}
		_, err := s.GetConnection(ctx, o.ID, id.New(id.Connection))
		wantKind(t, "GetConnection(unknown id)", err, apperr.NotFound)

		for _, tc := range []struct {
			p    store.Page
			want []phone.Connection
		}{
			{page(1, 10), []phone.Connection{c3, c2, c1}},
			{page(1, 2), []phone.Connection{c3, c2}},
			{page(2, 2), []phone.Connection{c1}},
			{page(3, 2), nil},
		} {
			list, total, err := s.ListConnections(ctx, o.ID, tc.p)
			call := fmt.Sprintf("ListConnections(org, %s)", describePage(tc.p))
			must(t, call, err)
			equal(t, call, norm(list, normConnection), norm(tc.want, normConnection))
			if total != 3 {
				t.Errorf("%s: total = %d; want 3", call, total)
			}
		}
		list, total, err := s.ListConnections(ctx, other.ID, page(1, 10))
		must(t, "ListConnections(other org)", err)
		equal(t, "ListConnections(other org)", norm(list, normConnection), norm([]phone.Connection{foreign}, normConnection))
		if total != 1 {
			t.Errorf("ListConnections(other org): total = %d; want 1", total)
		}

		connectionNumbers(t, s, o.ID, phone.ProviderSIP, []phone.ConnectionNumber{
			{Number: number(1), ConnectionID: c1.ID}, {Number: number(2), ConnectionID: c1.ID},
			{Number: number(3), ConnectionID: c2.ID}, {Number: number(4), ConnectionID: c2.ID},
			{Number: number(5), ConnectionID: c3.ID},
		})
		connectionNumbers(t, s, o.ID, "another-provider", nil)

		wantKind(t, "DeleteConnection(other org, id)", s.DeleteConnection(ctx, other.ID, c1.ID), apperr.NotFound)
		must(t, "DeleteConnection", s.DeleteConnection(ctx, o.ID, c1.ID))
		_, err = s.GetConnection(ctx, o.ID, c1.ID)
		wantKind(t, "GetConnection after DeleteConnection", err, apperr.NotFound)
		wantKind(t, "DeleteConnection twice", s.DeleteConnection(ctx, o.ID, c1.ID), apperr.NotFound)
		wantKind(t, "DeleteConnection(unknown id)", s.DeleteConnection(ctx, o.ID, id.New(id.Connection)), apperr.NotFound)
		list, total, err = s.ListConnections(ctx, o.ID, page(1, 10))
		must(t, "ListConnections", err)
		equal(t, "ListConnections after DeleteConnection", norm(list, normConnection), norm([]phone.Connection{c3, c2}, normConnection))
		if total != 2 {
			t.Errorf("ListConnections after DeleteConnection: total = %d; want 2", total)
		}
		connectionNumbers(t, s, o.ID, phone.ProviderSIP, []phone.ConnectionNumber{
			{Number: number(3), ConnectionID: c2.ID}, {Number: number(4), ConnectionID: c2.ID}, {Number: number(5), ConnectionID: c3.ID},
		})
		got, err := s.GetConnection(ctx, other.ID, foreign.ID)
		must(t, "GetConnection(other org's own)", err)
		equal(t, "GetConnection(other org's own) after the first org's deletes", normConnection(got), normConnection(foreign))
	})

	t.Run("NumbersOnOneConnection", func(t *testing.T) {
		// A number is on one connection of a provider at most, across
		// organizations; a refused connection stores nothing, and a
		// deleted one frees its numbers.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		mine := mustConnection(t, s, o.ID, at(time.Second), number(1), number(2))

		for _, tc := range []struct {
			org     string
			numbers []string
			fields  []string
		}{
			{other.ID, []string{number(2), number(3), number(1)}, []string{"sip.numbers[0]", "sip.numbers[2]"}},
			{o.ID, []string{number(3), number(1)}, []string{"sip.numbers[1]"}},
		} {
			c := newConnection(tc.org, at(time.Minute), tc.numbers...)
			err := s.CreateConnection(ctx, c)
			call := fmt.Sprintf("CreateConnection(org %s, %v) with %s and %s taken", tc.org, tc.numbers, number(1), number(2))
			if wantKind(t, call, err, apperr.Conflict) {
				if f := fieldNames(err); !slices.Equal(f, tc.fields) {
					t.Errorf("%s: error fields = %v; want %v", call, f, tc.fields)
				}
			}
			_, err = s.GetConnection(ctx, tc.org, c.ID)
			wantKind(t, "GetConnection of a refused connection", err, apperr.NotFound)
		}
		connectionNumbers(t, s, other.ID, phone.ProviderSIP, nil)
		// number(3) was not kept by the refused connections.
		theirs := mustConnection(t, s, other.ID, at(2*time.Minute), number(3))
		// Another provider's connection may have the same number.
		twin := newConnection(other.ID, at(3*time.Minute), number(1))
		twin.Provider = "another-provider"
		must(t, "CreateConnection(another provider, a number taken on sip)", s.CreateConnection(ctx, twin))

		must(t, "DeleteConnection", s.DeleteConnection(ctx, o.ID, mine.ID))
		again := mustConnection(t, s, other.ID, at(4*time.Minute), number(1), number(2))
		connectionNumbers(t, s, other.ID, phone.ProviderSIP, []phone.ConnectionNumber{
			{Number: number(3), ConnectionID: theirs.ID}, {Number: number(1), ConnectionID: again.ID}, {Number: number(2), ConnectionID: again.ID},
		})
		connectionNumbers(t, s, other.ID, "another-provider", []phone.ConnectionNumber{{Number: number(1), ConnectionID: twin.ID}})
	})

	t.Run("PurchasesOnConnections", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := mustConnection(t, s, o.ID, at(time.Second), number(1), number(2))
		theirs := mustConnection(t, s, other.ID, at(time.Second), number(3))
		sip := func(org, num, conn string) phone.Purchase {
			p := newPurchase(org, num, at(time.Minute))
			p.Provider, p.ConnectionID = phone.ProviderSIP, conn
			return p
		}

		p := sip(o.ID, number(1), c.ID)
		must(t, "CreatePurchase(on a connection)", s.CreatePurchase(ctx, p))
		got, err := s.GetPurchase(ctx, o.ID, p.ID)
		must(t, "GetPurchase", err)
		equal(t, "GetPurchase(on a connection)", normPurchase(got), normPurchase(p))
		wantKind(t, "CreatePurchase(the same number again)", s.CreatePurchase(ctx, sip(o.ID, number(1), c.ID)), apperr.Conflict)
		for _, tc := range []struct {
			name string
			p    phone.Purchase
		}{
			{"a number not on the connection", sip(o.ID, number(3), c.ID)},
			{"another org's connection", sip(o.ID, number(3), theirs.ID)},
			{"for another org", sip(other.ID, number(2), c.ID)},
			{"an unknown connection", sip(o.ID, number(2), id.New(id.Connection))},
			{"another provider", func() phone.Purchase { p := sip(o.ID, number(2), c.ID); p.Provider = "another-provider"; return p }()},
		} {
			wantKind(t, "CreatePurchase("+tc.name+")", s.CreatePurchase(ctx, tc.p), apperr.NotFound)
			_, err := s.GetPurchase(ctx, tc.p.OrgID, tc.p.ID)
			wantKind(t, "GetPurchase of a refused purchase ("+tc.name+")", err, apperr.NotFound)
		}
		connectionNumbers(t, s, o.ID, phone.ProviderSIP, []phone.ConnectionNumber{
			{Number: number(1), ConnectionID: c.ID, PurchaseID: p.ID}, {Number: number(2), ConnectionID: c.ID},
		})

		gotP, gotC, err := s.FindInboundNumber(ctx, phone.ProviderSIP, number(1))
		must(t, "FindInboundNumber", err)
		equal(t, "FindInboundNumber: purchase", normPurchase(gotP), normPurchase(p))
		equal(t, "FindInboundNumber: connection", normConnection(gotC), normConnection(c))
		for _, tc := range []struct{ name, provider, number string }{
			{"a connection's number not purchased", phone.ProviderSIP, number(2)},
			{"another org's number not purchased", phone.ProviderSIP, number(3)},
			{"another provider", "another-provider", number(1)},
			{"an unknown number", phone.ProviderSIP, number(99)},
		} {
			_, _, err := s.FindInboundNumber(ctx, tc.provider, tc.number)
			wantKind(t, fmt.Sprintf("FindInboundNumber(%s: %s, %s)", tc.name, tc.provider, tc.number), err, apperr.NotFound)
		}
		// A number bought from an inventory (no connection) takes no inbound call here.
		inv := mustPurchase(t, s, o.ID, number(4))
		_, _, err = s.FindInboundNumber(ctx, provider, number(4))
		wantKind(t, "FindInboundNumber(an inventory number)", err, apperr.NotFound)
		// It takes one its organization simulates (the sandbox's call in).
		gotInv, err := s.FindInventoryNumber(ctx, o.ID, provider, number(4))
		must(t, "FindInventoryNumber", err)
		equal(t, "FindInventoryNumber", normPurchase(gotInv), normPurchase(inv))
		_, err = s.FindInventoryNumber(ctx, other.ID, provider, number(4))
		wantKind(t, "FindInventoryNumber(another org)", err, apperr.NotFound)
		_, err = s.FindInventoryNumber(ctx, o.ID, phone.ProviderSIP, number(1))
		wantKind(t, "FindInventoryNumber(a connection's number)", err, apperr.NotFound)

		err = s.DeleteConnection(ctx, o.ID, c.ID)
		if wantKind(t, "DeleteConnection while a number is purchased", err, apperr.Conflict) && !strings.Contains(err.Error(), p.ID) {
			t.Errorf("DeleteConnection while purchased: error %q does not name the purchase %s", err, p.ID)
		}
		_, err = s.GetConnection(ctx, o.ID, c.ID)
		must(t, "GetConnection after a refused delete", err)
		connectionNumbers(t, s, o.ID, phone.ProviderSIP, []phone.ConnectionNumber{
			{Number: number(1), ConnectionID: c.ID, PurchaseID: p.ID}, {Number: number(2), ConnectionID: c.ID},
		})

		must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		_, _, err = s.FindInboundNumber(ctx, phone.ProviderSIP, number(1))
		wantKind(t, "FindInboundNumber of a released number", err, apperr.NotFound)
		must(t, "DeleteConnection after the release", s.DeleteConnection(ctx, o.ID, c.ID))
		connectionNumbers(t, s, o.ID, phone.ProviderSIP, nil)
		wantKind(t, "CreatePurchase(on a deleted connection)", s.CreatePurchase(ctx, sip(o.ID, number(2), c.ID)), apperr.NotFound)
	})

	t.Run("Twilio", func(t *testing.T) {
		// A Twilio connection keeps its account (SID, sealed token) and
		// lists no numbers; a purchase through it (bought or imported)
		// needs the connection to be the organization's, is found by
		// inbound calls, and holds the connection against deletion.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		c := newTwilioConnection(o.ID, t0)
		must(t, "CreateConnection", s.CreateConnection(ctx, c))
		got, err := s.GetConnection(ctx, o.ID, c.ID)
		must(t, "GetConnection", err)
		equal(t, "GetConnection(twilio)", normConnection(got), normConnection(c))
		byID, err := s.GetConnectionAnyOrg(ctx, c.ID)
		must(t, "GetConnectionAnyOrg", err)
		equal(t, "GetConnectionAnyOrg(twilio)", normConnection(byID), normConnection(c))
		_, err = s.GetConnectionAnyOrg(ctx, id.New(id.Connection))
		wantKind(t, "GetConnectionAnyOrg(unknown)", err, apperr.NotFound)
		connectionNumbers(t, s, o.ID, phone.ProviderTwilio, nil)

		p := newPurchase(o.ID, number(1), t0)
		p.Provider, p.ConnectionID, p.Imported = phone.ProviderTwilio, c.ID, true
		must(t, "CreatePurchase(twilio)", s.CreatePurchase(ctx, p))
		gp, err := s.GetPurchase(ctx, o.ID, p.ID)
		must(t, "GetPurchase", err)
		equal(t, "GetPurchase(imported twilio number)", normPurchase(gp), normPurchase(p))
		fp, fc, err := s.FindInboundNumber(ctx, phone.ProviderTwilio, number(1))
		must(t, "FindInboundNumber(twilio)", err)
		equal(t, "FindInboundNumber purchase", normPurchase(fp), normPurchase(p))
		equal(t, "FindInboundNumber connection", normConnection(fc), normConnection(c))

		q := newPurchase(other.ID, number(2), t0)
		q.Provider, q.ConnectionID = phone.ProviderTwilio, c.ID
		wantKind(t, "CreatePurchase on another organization's Twilio connection", s.CreatePurchase(ctx, q), apperr.NotFound)
		wantKind(t, "DeleteConnection with a held number", s.DeleteConnection(ctx, o.ID, c.ID), apperr.Conflict)
		must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		must(t, "DeleteConnection", s.DeleteConnection(ctx, o.ID, c.ID))
	})

	t.Run("RacePurchaseDelete", func(t *testing.T) {
		// A purchase on a connection and the connection's deletion, at
		// once: exactly one wins, so no held number is left on a deleted
		// connection.
		t.Parallel()
		racePurchaseDelete(t, open(t), phone.ProviderSIP, func(s store.Store, orgID string, r int) phone.Connection {
			return mustConnection(t, s, orgID, t0, number(r))
		})
	})

	t.Run("RaceTwilioPurchaseDelete", func(t *testing.T) {
		// The same for a connection without number rows (Twilio): the
		// connection row orders the two.
		t.Parallel()
		racePurchaseDelete(t, open(t), phone.ProviderTwilio, func(s store.Store, orgID string, _ int) phone.Connection {
			c := newTwilioConnection(orgID, t0)
			must(t, "CreateConnection", s.CreateConnection(t.Context(), c))
			return c
		})
	})

	t.Run("RaceSameNumber", func(t *testing.T) {
		// Two organizations add the same number at once: one gets it.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		const rounds = 20
		for r := range rounds {
			a, b := newConnection(o.ID, t0, number(r)), newConnection(other.ID, t0, number(1000+r), number(r))
			var errA, errB error
			race(func() { errA = s.CreateConnection(ctx, a) }, func() { errB = s.CreateConnection(ctx, b) })
			switch {
			case errA == nil && errB == nil:
				t.Fatalf("round %d: both organizations' CreateConnection with %s succeeded", r, number(r))
			case errA == nil:
				wantKind(t, fmt.Sprintf("round %d: CreateConnection racing another org's with the same number", r), errB, apperr.Conflict)
			case errB == nil:
				wantKind(t, fmt.Sprintf("round %d: CreateConnection racing another org's with the same number", r), errA, apperr.Conflict)
			default:
				t.Fatalf("round %d: CreateConnection = %v and %v; want exactly one to succeed", r, errA, errB)
			}
		}
	})
}

// racePurchaseDelete races, 20 times on s, a purchase of a number on a
// connection of provider (made by conn for round r) with the connection's
// deletion: exactly one must win.
func racePurchaseDelete(t *testing.T, s store.Store, provider string, conn func(s store.Store, orgID string, r int) phone.Connection) {
	t.Helper()
	ctx := t.Context()
	o := mustOrg(t, s, "Acme")
	for r := range 20 {
		c := conn(s, o.ID, r)
		p := newPurchase(o.ID, number(r), t0)
		p.Provider, p.ConnectionID = provider, c.ID
		var buyErr, delErr error
		race(func() { buyErr = s.CreatePurchase(ctx, p) }, func() { delErr = s.DeleteConnection(ctx, o.ID, c.ID) })
		switch {
		case buyErr == nil && delErr == nil:
			t.Fatalf("round %d: CreatePurchase and DeleteConnection both succeeded; purchase %s is on a deleted connection", r, p.ID)
		case buyErr == nil:
			wantKind(t, fmt.Sprintf("round %d: DeleteConnection racing a successful CreatePurchase", r), delErr, apperr.Conflict)
			must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		case delErr == nil:
			wantKind(t, fmt.Sprintf("round %d: CreatePurchase racing a successful DeleteConnection", r), buyErr, apperr.NotFound)
		default:
			t.Fatalf("round %d: CreatePurchase = %v and DeleteConnection = %v; want exactly one to succeed", r, buyErr, delErr)
		}
	}
}
