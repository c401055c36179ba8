package callctl_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/sandbox"
)

// refusing is a provider that refuses every call.
type refusing struct{ telephony.Provider }

func (refusing) Name() string { return "refusing" }
func (refusing) Place(context.Context, telephony.PlaceRequest) error {
	return errors.New("trunk down")
}

type bundle struct {
	st       store.Store
	svc      *callctl.Service
	org      string
	purchase phone.Purchase
}

func setup(t *testing.T, provider string) *bundle {
	t.Helper()
	ctx := t.Context()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc := callctl.New(db, slog.New(slog.DiscardHandler))
	net := sandbox.New(sandbox.Config{RingTime: 50 * time.Millisecond, TalkTime: time.Hour}, svc.HandleEvent, nil)
	t.Cleanup(func() { net.Close() })
	svc.AddProvider(net)
	svc.AddProvider(refusing{})
	now := time.Now().UTC()
	org := auth.Org{ID: id.New(id.Org), Name: "o", CreatedAt: now}
	must(t, db.CreateOrg(ctx, org))
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), org.ID, "A", now, now
	must(t, db.CreateAssistant(ctx, a))
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: org.ID, Number: "+14155550100", Provider: provider, OutboundAssistantID: a.ID, CreatedAt: now, UpdatedAt: now}
	must(t, db.CreatePurchase(ctx, p))
	return &bundle{st: db, svc: svc, org: org.ID, purchase: p}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (b *bundle) wait(t *testing.T, callID string, cond func(call.Call) bool) call.Call {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c, err := b.st.GetCall(t.Context(), b.org, callID)
		must(t, err)
		if cond(c) {
			return c
		}
		time.Sleep(10 * time.Millisecond)
	}
	c, _ := b.st.GetCall(t.Context(), b.org, callID)
	t.Fatalf("call %s never reached the expected state; last %+v", callID, c)
	return c
}

// TestProviderRefusal: a provider that refuses a call ends it failed at
// once; the caller gets the ended call, not an error.
func TestProviderRefusal(t *testing.T) {
	b := setup(t, "refusing")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	if err != nil {
		t.Fatalf("PlacePhoneCall with a refusing provider = %v, want the failed call", err)
	}
	if c.Status != call.Ended || c.Outcome != call.Failed || c.EndedReason != call.ReasonProviderFailed {
		t.Errorf("PlacePhoneCall with a refusing provider = %s/%s/%s, want ended/failed/%s", c.Status.Text(), c.Outcome, c.EndedReason, call.ReasonProviderFailed)
	}
	stored, _ := b.st.GetCall(t.Context(), b.org, c.ID)
	if stored.Status != call.Ended {
		t.Errorf("stored call status = %s, want ended", stored.Status.Text())
	}
}

// TestHangupReason: ending a phone call records its reason and hangs it up
// at the provider (whose late Ended event changes nothing).
func TestHangupReason(t *testing.T) {
	b := setup(t, "sandbox")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.InProgress })
	if _, err := b.svc.End(t.Context(), c.ID, call.Completed, call.ReasonAssistantEnded, call.Result{}); err != nil {
		t.Fatal(err)
	}
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.Ended })
	if c.Outcome != call.Completed || c.EndedReason != call.ReasonAssistantEnded {
		t.Errorf("after Hangup = %s/%s, want completed/%s", c.Outcome, c.EndedReason, call.ReasonAssistantEnded)
	}
}

// TestLateEventsIgnored: events that arrive after a call ended do not change it.
func TestLateEventsIgnored(t *testing.T) {
	b := setup(t, "sandbox")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155550001"})
	must(t, err)
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.Ended })
	b.svc.HandleEvent(telephony.Event{CallID: c.ID, Kind: telephony.Answered, At: time.Now()})
	b.svc.HandleEvent(telephony.Event{CallID: c.ID, Kind: telephony.Ended, At: time.Now(), Outcome: "completed", Reason: "x"})
	got, _ := b.st.GetCall(t.Context(), b.org, c.ID)
	if got.Outcome != call.Busy || got.EndedReason != call.ReasonCustomerBusy || !got.EndedAt.Equal(c.EndedAt) {
		t.Errorf("after late events = %s/%s at %v, want busy/%s at %v", got.Outcome, got.EndedReason, got.EndedAt, call.ReasonCustomerBusy, c.EndedAt)
	}
}
