package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

func testAssistants(t *testing.T, open Opener) {
	t.Run("CreateGetListUpdateDelete", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a1 := mustAssistant(t, s, o.ID, "one", at(time.Second))
		a3 := mustAssistant(t, s, o.ID, "three", at(3*time.Second))
		a2 := mustAssistant(t, s, o.ID, "two", at(2*time.Second))
		mustAssistant(t, s, other.ID, "foreign", at(4*time.Second))

		got, err := s.GetAssistant(ctx, o.ID, a1.ID)
		must(t, "GetAssistant", err)
		equal(t, fmt.Sprintf("GetAssistant(%s)", a1.ID), normAssistant(got), normAssistant(a1))
		_, err = s.GetAssistant(ctx, o.ID, id.New(id.Assistant))
		wantKind(t, "GetAssistant(unknown id)", err, apperr.NotFound)

		for _, tc := range []struct {
			p    store.Page
			want []assistant.Assistant
		}{
			{store.Page{Page: 1, PageSize: 10}, []assistant.Assistant{a3, a2, a1}},
			{store.Page{Page: 1, PageSize: 2}, []assistant.Assistant{a3, a2}},
			{store.Page{Page: 2, PageSize: 2}, []assistant.Assistant{a1}},
			{store.Page{Page: 3, PageSize: 2}, nil},
		} {
			list, total, err := s.ListAssistants(ctx, o.ID, tc.p)
			call := fmt.Sprintf("ListAssistants(org, %s)", describePage(tc.p))
			must(t, call, err)
			equal(t, call, norm(list, normAssistant), norm(tc.want, normAssistant))
			if total != 3 {
				t.Errorf("%s: total = %d; want 3", call, total)
			}
		}

		upd := a2
		upd.Name, upd.SystemPrompt, upd.MaxDurationSeconds = "two v2", "Be thorough.", 900
		upd.EndCallPhrases = []string{"farewell"}
		upd.UpdatedAt = at(time.Hour)
		must(t, "UpdateAssistant", s.UpdateAssistant(ctx, upd))
		got, err = s.GetAssistant(ctx, o.ID, a2.ID)
		must(t, "GetAssistant", err)
		equal(t, fmt.Sprintf("GetAssistant(%s) after UpdateAssistant", a2.ID), normAssistant(got), normAssistant(upd))
		list, _, err := s.ListAssistants(ctx, o.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListAssistants", err)
		equal(t, "ListAssistants after UpdateAssistant (order is by creation)", norm(list, normAssistant), norm([]assistant.Assistant{a3, upd, a1}, normAssistant))

		unknown := newAssistant(o.ID, "ghost", t0)
		wantKind(t, "UpdateAssistant(unknown id)", s.UpdateAssistant(ctx, unknown), apperr.NotFound)

		must(t, "DeleteAssistant", s.DeleteAssistant(ctx, o.ID, a1.ID))
		_, err = s.GetAssistant(ctx, o.ID, a1.ID)
		wantKind(t, "GetAssistant after DeleteAssistant", err, apperr.NotFound)
		wantKind(t, "DeleteAssistant twice", s.DeleteAssistant(ctx, o.ID, a1.ID), apperr.NotFound)
		list, total, err := s.ListAssistants(ctx, o.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListAssistants", err)
		equal(t, "ListAssistants after DeleteAssistant", norm(list, normAssistant), norm([]assistant.Assistant{a3, upd}, normAssistant))
		if total != 2 {
			t.Errorf("ListAssistants after DeleteAssistant: total = %d; want 2", total)
		}
		_, total, err = s.ListAssistants(ctx, other.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListAssistants(other org)", err)
		if total != 1 {
			t.Errorf("ListAssistants(other org): total = %d; want 1", total)
		}
	})

	t.Run("OtherOrgIsNotFound", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		a := mustAssistant(t, s, o.ID, "mine", t0)

		_, err := s.GetAssistant(ctx, other.ID, a.ID)
		wantKind(t, "GetAssistant(other org, id)", err, apperr.NotFound)
		hijack := a
		hijack.OrgID, hijack.Name, hijack.UpdatedAt = other.ID, "hijacked", at(time.Hour)
		wantKind(t, "UpdateAssistant(other org's id)", s.UpdateAssistant(ctx, hijack), apperr.NotFound)
		wantKind(t, "DeleteAssistant(other org, id)", s.DeleteAssistant(ctx, other.ID, a.ID), apperr.NotFound)

		got, err := s.GetAssistant(ctx, o.ID, a.ID)
		must(t, "GetAssistant(owner)", err)
		equal(t, "GetAssistant(owner) after the other org's update and delete", normAssistant(got), normAssistant(a))
	})

	t.Run("VoiceSettingsRoundTrip", func(t *testing.T) {
		// Endpointing, barge-in and the provider fallbacks are stored and
		// read back as they were, including a fallback that is cleared.
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		a := newAssistant(o.ID, "voice", t0)
		a.Voice = assistant.Voice{Provider: "deepgram", VoiceID: "aura-asteria-en",
			Fallback: &assistant.VoiceFallback{Provider: "local", VoiceID: "en-us"}}
		a.Transcriber = assistant.Transcriber{Provider: "deepgram", Model: "nova-3", Language: "en",
			Fallback: &assistant.TranscriberFallback{Provider: "local", Language: "en-US"}}
		a.Endpointing = assistant.Endpointing{SilenceMs: 600, MinSpeechMs: 100, MaxWaitMs: 3000, FastSilenceMs: 200}
		a.BargeIn = assistant.BargeIn{Disabled: true, MinSpeechMs: 400}
		must(t, "CreateAssistant(with voice settings)", s.CreateAssistant(ctx, a))
		got, err := s.GetAssistant(ctx, o.ID, a.ID)
		must(t, "GetAssistant", err)
		equal(t, fmt.Sprintf("GetAssistant(%s) with voice settings", a.ID), normAssistant(got), normAssistant(a))

		upd := a
		upd.Voice.Fallback, upd.Transcriber.Fallback = nil, nil
		upd.Endpointing, upd.BargeIn = assistant.Endpointing{}, assistant.BargeIn{MinSpeechMs: 250}
		upd.UpdatedAt = at(time.Hour)
		must(t, "UpdateAssistant(fallbacks cleared)", s.UpdateAssistant(ctx, upd))
		list, _, err := s.ListAssistants(ctx, o.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListAssistants", err)
		equal(t, "ListAssistants after clearing the fallbacks", norm(list, normAssistant), norm([]assistant.Assistant{upd}, normAssistant))
	})

	t.Run("RaceWithAllocate", func(t *testing.T) { raceAllocateDelete(t, open) })

	t.Run("DeleteWhileAllocated", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		in := mustAssistant(t, s, o.ID, "in", t0)
		out := mustAssistant(t, s, o.ID, "out", t0)
		p := mustPurchase(t, s, o.ID, number(1))
		_, err := s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, InboundID: in.ID, OutboundID: out.ID, Message: "hi", At: at(time.Minute)})
		must(t, "AllocateAssistants", err)

		for _, a := range []assistant.Assistant{in, out} {
			err := s.DeleteAssistant(ctx, o.ID, a.ID)
			wantKind(t, fmt.Sprintf("DeleteAssistant(%s) while allocated to a held purchase", a.Name), err, apperr.Conflict)
			_, err = s.GetAssistant(ctx, o.ID, a.ID)
			must(t, fmt.Sprintf("GetAssistant(%s) after a refused delete", a.Name), err)
		}

		// Moving the allocation frees the inbound assistant only.
		_, err = s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, OutboundID: out.ID, Message: "hi", At: at(2 * time.Minute)})
		must(t, "AllocateAssistants(no inbound)", err)
		must(t, "DeleteAssistant(in) after it was unallocated", s.DeleteAssistant(ctx, o.ID, in.ID))
		wantKind(t, "DeleteAssistant(out) still allocated", s.DeleteAssistant(ctx, o.ID, out.ID), apperr.Conflict)

		must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		must(t, "DeleteAssistant(out) after ReleasePurchase", s.DeleteAssistant(ctx, o.ID, out.ID))
		_, err = s.GetAssistant(ctx, o.ID, out.ID)
		wantKind(t, "GetAssistant after DeleteAssistant", err, apperr.NotFound)
	})
}

// raceAllocateDelete races AllocateAssistants and DeleteAssistant on the
// same assistant, rounds times: exactly one of them may win each round,
// otherwise a held number is left pointing at a deleted assistant.
func raceAllocateDelete(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	o := mustOrg(t, s, "Acme")
	p := mustPurchase(t, s, o.ID, number(1))
	const rounds = 25
	for r := range rounds {
		a := mustAssistant(t, s, o.ID, fmt.Sprintf("a%d", r), t0)
		var allocErr, delErr error
		var wg sync.WaitGroup
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			_, allocErr = s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, InboundID: a.ID, At: at(time.Minute)})
		})
		wg.Go(func() {
			<-start
			delErr = s.DeleteAssistant(ctx, o.ID, a.ID)
		})
		close(start)
		wg.Wait()
		switch {
		case allocErr == nil && delErr == nil:
			t.Fatalf("round %d: AllocateAssistants(in=%s) and DeleteAssistant(%s) both succeeded; the held number now uses a deleted assistant", r, a.ID, a.ID)
		case allocErr == nil:
			wantKind(t, fmt.Sprintf("round %d: DeleteAssistant racing a successful AllocateAssistants", r), delErr, apperr.Conflict)
		case delErr == nil:
			wantKind(t, fmt.Sprintf("round %d: AllocateAssistants racing a successful DeleteAssistant", r), allocErr, apperr.NotFound)
		default:
			t.Fatalf("round %d: AllocateAssistants = %v and DeleteAssistant = %v; want exactly one to succeed", r, allocErr, delErr)
		}
		_, err := s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, At: at(time.Minute)})
		must(t, "AllocateAssistants(clear)", err)
	}
}

func testPurchases(t *testing.T, open Opener) {
	t.Run("CreateGetList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		p1 := newPurchase(o.ID, number(1), at(time.Second))
		p2 := newPurchase(o.ID, number(2), at(2*time.Second))
		p1.Message = "welcome"
		for _, p := range []phone.Purchase{p2, p1} {
			must(t, "CreatePurchase", s.CreatePurchase(ctx, p))
		}
		got, err := s.GetPurchase(ctx, o.ID, p1.ID)
		must(t, "GetPurchase", err)
		equal(t, fmt.Sprintf("GetPurchase(%s)", p1.ID), normPurchase(got), normPurchase(p1))
		_, err = s.GetPurchase(ctx, other.ID, p1.ID)
		wantKind(t, "GetPurchase(other org, id)", err, apperr.NotFound)
		_, err = s.GetPurchase(ctx, o.ID, id.New(id.Purchase))
		wantKind(t, "GetPurchase(unknown id)", err, apperr.NotFound)

		list, err := s.ListPurchases(ctx, o.ID)
		must(t, "ListPurchases", err)
		equal(t, "ListPurchases(org)", norm(list, normPurchase), norm([]phone.Purchase{p1, p2}, normPurchase))
		list, err = s.ListPurchases(ctx, other.ID)
		must(t, "ListPurchases(other org)", err)
		if len(list) != 0 {
			t.Errorf("ListPurchases(other org) = %d purchases; want none", len(list))
		}
	})

	t.Run("NumberHeldIsConflict", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		p := mustPurchase(t, s, o.ID, number(1))
		mustPurchase(t, s, other.ID, number(2))

		for _, org := range []string{o.ID, other.ID} {
			again := newPurchase(org, number(1), at(time.Minute))
			err := s.CreatePurchase(ctx, again)
			wantKind(t, fmt.Sprintf("CreatePurchase(%s) held by org %s, by org %s", number(1), o.ID, org), err, apperr.Conflict)
			_, err = s.GetPurchase(ctx, org, again.ID)
			wantKind(t, "GetPurchase of a refused purchase", err, apperr.NotFound)
		}
		held, err := s.HeldNumbers(ctx, provider)
		must(t, "HeldNumbers", err)
		equal(t, "HeldNumbers", held, map[string]bool{number(1): true, number(2): true})
		held, err = s.HeldNumbers(ctx, "another-provider")
		must(t, "HeldNumbers(another provider)", err)
		if len(held) != 0 {
			t.Errorf("HeldNumbers(another provider) = %v; want empty", held)
		}

		must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		_, err = s.GetPurchase(ctx, o.ID, p.ID)
		wantKind(t, "GetPurchase of a released purchase", err, apperr.NotFound)
		list, err := s.ListPurchases(ctx, o.ID)
		must(t, "ListPurchases", err)
		if len(list) != 0 {
			t.Errorf("ListPurchases after ReleasePurchase = %v; want none", list)
		}
		held, err = s.HeldNumbers(ctx, provider)
		must(t, "HeldNumbers", err)
		equal(t, "HeldNumbers after ReleasePurchase", held, map[string]bool{number(2): true})
		wantKind(t, "ReleasePurchase twice", s.ReleasePurchase(ctx, o.ID, p.ID, at(2*time.Hour)), apperr.NotFound)

		rebuy := newPurchase(other.ID, number(1), at(3*time.Hour))
		must(t, "CreatePurchase of a released number", s.CreatePurchase(ctx, rebuy))
		got, err := s.GetPurchase(ctx, other.ID, rebuy.ID)
		must(t, "GetPurchase(rebought)", err)
		equal(t, "GetPurchase(rebought)", normPurchase(got), normPurchase(rebuy))
		held, err = s.HeldNumbers(ctx, provider)
		must(t, "HeldNumbers", err)
		equal(t, "HeldNumbers after buying the number again", held, map[string]bool{number(1): true, number(2): true})
	})

	t.Run("ReleaseOtherOrgIsNotFound", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		p := mustPurchase(t, s, o.ID, number(1))
		wantKind(t, "ReleasePurchase(other org, id)", s.ReleasePurchase(ctx, other.ID, p.ID, t0), apperr.NotFound)
		wantKind(t, "ReleasePurchase(unknown id)", s.ReleasePurchase(ctx, o.ID, id.New(id.Purchase), t0), apperr.NotFound)
		got, err := s.GetPurchase(ctx, o.ID, p.ID)
		must(t, "GetPurchase after the other org's release", err)
		equal(t, "GetPurchase", normPurchase(got), normPurchase(p))
	})

	t.Run("AllocateAssistants", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		in := mustAssistant(t, s, o.ID, "in", t0)
		out := mustAssistant(t, s, o.ID, "out", t0)
		foreign := mustAssistant(t, s, other.ID, "foreign", t0)
		p := mustPurchase(t, s, o.ID, number(1))

		when := at(time.Minute + 300*time.Microsecond)
		got, err := s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, InboundID: in.ID, OutboundID: out.ID, Message: "Hello!", At: when})
		must(t, "AllocateAssistants", err)
		want := p
		want.InboundAssistantID, want.OutboundAssistantID, want.Message, want.UpdatedAt = in.ID, out.ID, "Hello!", when
		equal(t, "AllocateAssistants(in, out, Hello!) result", normPurchase(got), normPurchase(want))
		stored, err := s.GetPurchase(ctx, o.ID, p.ID)
		must(t, "GetPurchase", err)
		equal(t, "GetPurchase after AllocateAssistants", normPurchase(stored), normPurchase(want))

		for _, tc := range []struct {
			name      string
			in, out   string
			badFields []string
		}{
			{"unknown inbound", id.New(id.Assistant), out.ID, []string{"inboundAssistantId"}},
			{"other org's outbound", in.ID, foreign.ID, []string{"outboundAssistantId"}},
			{"both bad", foreign.ID, id.New(id.Assistant), []string{"inboundAssistantId", "outboundAssistantId"}},
		} {
			_, err := s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, InboundID: tc.in, OutboundID: tc.out, Message: "changed", At: at(time.Hour)})
			call := fmt.Sprintf("AllocateAssistants(%s: in=%s, out=%s)", tc.name, tc.in, tc.out)
			if wantKind(t, call, err, apperr.NotFound) {
				if f := fieldNames(err); !slices.Equal(f, tc.badFields) {
					t.Errorf("%s: error fields = %v; want %v", call, f, tc.badFields)
				}
			}
			stored, err := s.GetPurchase(ctx, o.ID, p.ID)
			must(t, "GetPurchase", err)
			equal(t, call+" then GetPurchase (must be unchanged)", normPurchase(stored), normPurchase(want))
		}

		_, err = s.AllocateAssistants(ctx, store.Allocation{OrgID: other.ID, PurchaseID: p.ID, At: at(time.Hour)})
		wantKind(t, "AllocateAssistants(other org's purchase)", err, apperr.NotFound)

		got, err = s.AllocateAssistants(ctx, store.Allocation{OrgID: o.ID, PurchaseID: p.ID, At: at(2 * time.Hour)})
		must(t, "AllocateAssistants(clear)", err)
		want.InboundAssistantID, want.OutboundAssistantID, want.Message, want.UpdatedAt = "", "", "", at(2*time.Hour)
		equal(t, "AllocateAssistants(\"\", \"\", \"\") result", normPurchase(got), normPurchase(want))
	})
}

func testContacts(t *testing.T, open Opener) {
	t.Run("AddAndList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		p := mustPurchase(t, s, o.ID, number(1))
		q := mustPurchase(t, s, o.ID, number(2))

		// Numbers out of lexical order, so the listing order can only be
		// the insertion order.
		batch1 := []phone.Contact{
			newContact("+33600000009", t0),
			newContact("+33600000001", t0),
			newContact("+33600000009", t0), // duplicate within the batch
			newContact("+33600000005", t0),
		}
		created, dups, err := s.AddContacts(ctx, o.ID, p.ID, batch1)
		must(t, "AddContacts(batch 1)", err)
		want1 := []phone.Contact{batch1[0], batch1[1], batch1[3]}
		for i := range want1 {
			want1[i].OrgID, want1[i].PurchaseID = o.ID, p.ID
		}
		equal(t, "AddContacts(batch 1) created", norm(created, normContact), norm(want1, normContact))
		equal(t, "AddContacts(batch 1) duplicates", dups, []int{2})

		batch2 := []phone.Contact{
			newContact("+33600000001", at(time.Second)), // already on the purchase
			newContact("+33600000003", at(time.Second)),
			newContact("+33600000005", at(time.Second)), // already on the purchase
		}
		created, dups, err = s.AddContacts(ctx, o.ID, p.ID, batch2)
		must(t, "AddContacts(batch 2)", err)
		c4 := batch2[1]
		c4.OrgID, c4.PurchaseID = o.ID, p.ID
		equal(t, "AddContacts(batch 2) created", norm(created, normContact), norm([]phone.Contact{c4}, normContact))
		equal(t, "AddContacts(batch 2) duplicates", dups, []int{0, 2})

		all := append(slices.Clone(want1), c4)
		for _, tc := range []struct {
			p    store.Page
			want []phone.Contact
		}{
			{store.Page{Page: 1, PageSize: 10}, all},
			{store.Page{Page: 1, PageSize: 3}, all[:3]},
			{store.Page{Page: 2, PageSize: 3}, all[3:]},
			{store.Page{Page: 3, PageSize: 3}, nil},
		} {
			list, total, err := s.ListContacts(ctx, o.ID, p.ID, tc.p)
			call := fmt.Sprintf("ListContacts(p, %s)", describePage(tc.p))
			must(t, call, err)
			equal(t, call, norm(list, normContact), norm(tc.want, normContact))
			if total != 4 {
				t.Errorf("%s: total = %d; want 4", call, total)
			}
		}

		// The same number on another purchase is not a duplicate.
		created, dups, err = s.AddContacts(ctx, o.ID, q.ID, []phone.Contact{newContact("+33600000009", t0)})
		must(t, "AddContacts(other purchase)", err)
		if len(created) != 1 || len(dups) != 0 {
			t.Errorf("AddContacts(other purchase, a number of purchase p) = %d created, duplicates %v; want 1 created, none", len(created), dups)
		}
		_, total, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListContacts", err)
		if total != 4 {
			t.Errorf("ListContacts(p) after adding to q: total = %d; want 4", total)
		}

		got, err := s.GetContact(ctx, o.ID, c4.ID)
		must(t, "GetContact", err)
		equal(t, fmt.Sprintf("GetContact(%s)", c4.ID), normContact(got), normContact(c4))
		_, err = s.GetContact(ctx, o.ID, id.New(id.Contact))
		wantKind(t, "GetContact(unknown id)", err, apperr.NotFound)
		got, err = s.ContactByNumber(ctx, o.ID, c4.PurchaseID, c4.PhoneNumber)
		must(t, "ContactByNumber", err)
		equal(t, fmt.Sprintf("ContactByNumber(%s)", c4.PhoneNumber), normContact(got), normContact(c4))
		_, err = s.ContactByNumber(ctx, o.ID, c4.PurchaseID, "+19995550000")
		wantKind(t, "ContactByNumber(a number that is no contact)", err, apperr.NotFound)
	})

	t.Run("OtherOrgIsNotFound", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o, other := mustOrg(t, s, "Acme"), mustOrg(t, s, "Other")
		p := mustPurchase(t, s, o.ID, number(1))
		cs := mustContacts(t, s, o.ID, p.ID, "+33600000001")

		_, _, err := s.AddContacts(ctx, other.ID, p.ID, []phone.Contact{newContact("+33600000002", t0)})
		wantKind(t, "AddContacts(other org, purchase)", err, apperr.NotFound)
		_, _, err = s.ListContacts(ctx, other.ID, p.ID, store.Page{Page: 1, PageSize: 10})
		wantKind(t, "ListContacts(other org, purchase)", err, apperr.NotFound)
		wantKind(t, "DeleteContact(other org, purchase, contact)", s.DeleteContact(ctx, other.ID, p.ID, cs[0].ID), apperr.NotFound)
		_, err = s.GetContact(ctx, other.ID, cs[0].ID)
		wantKind(t, "GetContact(other org, contact)", err, apperr.NotFound)
		_, err = s.ContactByNumber(ctx, other.ID, p.ID, cs[0].PhoneNumber)
		wantKind(t, "ContactByNumber(other org, purchase, number)", err, apperr.NotFound)
		_, _, err = s.AddContacts(ctx, o.ID, id.New(id.Purchase), []phone.Contact{newContact("+33600000002", t0)})
		wantKind(t, "AddContacts(unknown purchase)", err, apperr.NotFound)

		list, total, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListContacts(owner)", err)
		if total != 1 || len(list) != 1 || list[0].ID != cs[0].ID {
			t.Errorf("ListContacts(owner) after the other org's attempts = %v, total %d; want only %s", ids(list, func(c phone.Contact) string { return c.ID }), total, cs[0].ID)
		}
	})

	t.Run("DeleteContact", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		p := mustPurchase(t, s, o.ID, number(1))
		q := mustPurchase(t, s, o.ID, number(2))
		cs := mustContacts(t, s, o.ID, p.ID, "+33600000001", "+33600000002", "+33600000003")

		wantKind(t, "DeleteContact(purchase q, contact of p)", s.DeleteContact(ctx, o.ID, q.ID, cs[0].ID), apperr.NotFound)
		must(t, "DeleteContact", s.DeleteContact(ctx, o.ID, p.ID, cs[1].ID))
		wantKind(t, "DeleteContact twice", s.DeleteContact(ctx, o.ID, p.ID, cs[1].ID), apperr.NotFound)
		_, err := s.GetContact(ctx, o.ID, cs[1].ID)
		wantKind(t, "GetContact after DeleteContact", err, apperr.NotFound)
		list, total, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListContacts", err)
		equal(t, "ListContacts after DeleteContact", norm(list, normContact), norm([]phone.Contact{cs[0], cs[2]}, normContact))
		if total != 2 {
			t.Errorf("ListContacts after DeleteContact: total = %d; want 2", total)
		}
		// The number can be added again.
		created, dups, err := s.AddContacts(ctx, o.ID, p.ID, []phone.Contact{newContact("+33600000002", t0)})
		must(t, "AddContacts(deleted number)", err)
		if len(created) != 1 || len(dups) != 0 {
			t.Errorf("AddContacts(a deleted contact's number) = %d created, duplicates %v; want 1 created", len(created), dups)
		}
	})

	t.Run("MissingContacts", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		p := mustPurchase(t, s, o.ID, number(1))
		q := mustPurchase(t, s, o.ID, number(2))
		cs := mustContacts(t, s, o.ID, p.ID, "+33600000001", "+33600000002")
		qs := mustContacts(t, s, o.ID, q.ID, "+33600000003")

		unknown := id.New(id.Contact)
		in := []string{cs[0].ID, unknown, qs[0].ID, cs[1].ID}
		got, err := missingContacts(ctx, s, o.ID, p.ID, in)
		must(t, "missingContacts", err)
		sameIDs(t, fmt.Sprintf("missingContacts(p, %v)", in), got, []string{unknown, qs[0].ID})

		got, err = missingContacts(ctx, s, o.ID, p.ID, []string{cs[1].ID, cs[0].ID})
		must(t, "missingContacts", err)
		if len(got) != 0 {
			t.Errorf("missingContacts(p, its own contacts) = %v; want none", got)
		}
		got, err = missingContacts(ctx, s, o.ID, p.ID, nil)
		must(t, "missingContacts(nil)", err)
		if len(got) != 0 {
			t.Errorf("missingContacts(p, nil) = %v; want none", got)
		}
	})

	t.Run("MissingContactsMany", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		p := mustPurchase(t, s, o.ID, number(1))
		cs := mustContacts(t, s, o.ID, p.ID, numbers(100, 700)...)
		var in, want []string
		for i, c := range cs {
			in = append(in, c.ID)
			if i%150 == 7 {
				u := id.New(id.Contact)
				in = append(in, u)
				want = append(want, u)
			}
		}
		got, err := missingContacts(ctx, s, o.ID, p.ID, in)
		must(t, "missingContacts", err)
		sameIDs(t, fmt.Sprintf("missingContacts(p, %d ids of which %d unknown)", len(in), len(want)), got, want)
		_, total, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 1, PageSize: 1})
		must(t, "ListContacts", err)
		if total != len(cs) {
			t.Errorf("ListContacts total = %d; want %d", total, len(cs))
		}
		list, _, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 3, PageSize: 300})
		must(t, "ListContacts", err)
		sameIDs(t, "ListContacts(page 3 size 300) of 700 contacts added in one batch",
			ids(list, func(c phone.Contact) string { return c.ID }), ids(cs[600:], func(c phone.Contact) string { return c.ID }))
	})

	t.Run("RaceWithRelease", func(t *testing.T) { raceAddRelease(t, open) })

	t.Run("ReleaseDeletesContacts", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		p := mustPurchase(t, s, o.ID, number(1))
		cs := mustContacts(t, s, o.ID, p.ID, "+33600000001", "+33600000002")
		must(t, "ReleasePurchase", s.ReleasePurchase(ctx, o.ID, p.ID, at(time.Hour)))
		for _, c := range cs {
			_, err := s.GetContact(ctx, o.ID, c.ID)
			wantKind(t, fmt.Sprintf("GetContact(%s) after ReleasePurchase", c.ID), err, apperr.NotFound)
		}
		_, _, err := s.ListContacts(ctx, o.ID, p.ID, store.Page{Page: 1, PageSize: 10})
		wantKind(t, "ListContacts(released purchase)", err, apperr.NotFound)

		p2 := mustPurchase(t, s, o.ID, number(1))
		list, total, err := s.ListContacts(ctx, o.ID, p2.ID, store.Page{Page: 1, PageSize: 10})
		must(t, "ListContacts(number bought again)", err)
		if len(list) != 0 || total != 0 {
			t.Errorf("ListContacts(number bought again) = %d contacts, total %d; want none", len(list), total)
		}
		in := []string{cs[0].ID, cs[1].ID}
		missing, err := missingContacts(ctx, s, o.ID, p2.ID, in)
		must(t, "missingContacts", err)
		sameIDs(t, "missingContacts(new purchase, contacts of the released one)", missing, in)
		// The old numbers are free on the new purchase.
		mustContacts(t, s, o.ID, p2.ID, "+33600000001", "+33600000002")
	})
}

// newScheduleWith builds a schedule on purchaseID with one attempt per
// (date, contact), due at date + contact index minutes, and the attempts in
// due order.
func newScheduleWith(orgID, purchaseID string, contactIDs []string, dates []time.Time, created time.Time) (schedule.Schedule, []schedule.Attempt) {
	sc := schedule.Schedule{
		ID:         id.New(id.Schedule),
		OrgID:      orgID,
		Name:       "campaign",
		PurchaseID: purchaseID,
		Message:    "Hi, this is a reminder.",
		Timezone:   "Europe/Paris",
		Dates:      dates,
		ContactIDs: contactIDs,
		CreatedAt:  created,
	}
	var as []schedule.Attempt
	for _, d := range dates {
		for j, c := range contactIDs {
			as = append(as, schedule.Attempt{
				ID:          id.New(id.Attempt),
				OrgID:       orgID,
				ScheduleID:  sc.ID,
				ContactID:   c,
				DueAt:       d.Add(time.Duration(j) * time.Minute),
				RequestedAt: d.Add(time.Duration(j) * time.Minute),
				State:       schedule.Pending,
				CallStatus:  -1,
			})
		}
	}
	return sc, as
}

// missingContacts is the ids in ids that are not contacts of the
// purchase, in their order, as ContactZones tells them (it answers for
// the ids that are).
func missingContacts(ctx context.Context, s store.Store, orgID, purchaseID string, ids []string) ([]string, error) {
	zones, err := s.ContactZones(ctx, orgID, purchaseID, ids)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := zones[id]; !ok {
			missing = append(missing, id)
		}
	}
	return missing, nil
}
