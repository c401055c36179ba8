package callctl_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/sandbox"
)

// refusing is a provider that refuses every call.
type refusing struct{ telephony.Network }

func (refusing) Name() string { return "refusing" }
func (refusing) Place(context.Context, telephony.PlaceRequest) error {
	return errors.New("trunk down")
}

// silent is a provider that places calls and accepts hang-ups but never
// reports anything (a provider that lost the call); with failHangup its
// Hangup fails.
type silent struct {
	telephony.Network
	failHangup bool
	mu         sync.Mutex
	hungUp     []string
}

func (*silent) Name() string                                        { return "silent" }
func (*silent) Place(context.Context, telephony.PlaceRequest) error { return nil }
func (p *silent) Hangup(_ context.Context, callID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hungUp = append(p.hungUp, callID)
	if p.failHangup {
		return errors.New("trunk down")
	}
	return nil
}

func (p *silent) hangups() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.hungUp)
}

// failingUpdates is a store whose next UpdateCall fails once, as a database
// that is briefly unreachable does.
type failingUpdates struct {
	store.Store
	fail atomic.Bool
}

func (f *failingUpdates) UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...event.Event) error {
	if f.fail.CompareAndSwap(true, false) {
		return errors.New("database unreachable")
	}
	return f.Store.UpdateCall(ctx, c, prev, events...)
}

type bundle struct {
	st       *failingUpdates
	svc      *callctl.Service
	net      *sandbox.Network
	silent   *silent
	org      string
	purchase phone.Purchase
}

func setup(t *testing.T, provider string) *bundle {
	t.Helper()
	return setupNode(t, provider, "")
}

// setupNode is setup on node node: its calls record it as their owner.
func setupNode(t *testing.T, provider, node string) *bundle {
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
	st := &failingUpdates{Store: db}
	net := sandbox.New(sandbox.Config{RingTime: 50 * time.Millisecond, TalkTime: time.Hour}, nil)
	quiet := &silent{}
	svc := callctl.New(callctl.Config{Store: st, Providers: []telephony.Network{net, refusing{}, quiet}, Node: node, Log: slog.New(slog.DiscardHandler)})
	must(t, net.Start(ctx, svc))
	t.Cleanup(func() { net.Close() })
	now := time.Now().UTC()
	org := auth.Org{ID: id.New(id.Org), Name: "o", CreatedAt: now}
	must(t, db.CreateOrg(ctx, org))
	a := assistant.Defaults(assistant.DefaultProviders())
	a.ID, a.OrgID, a.Name, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), org.ID, "A", now, now
	must(t, db.CreateAssistant(ctx, a))
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: org.ID, Number: "+14155550100", Provider: provider, OutboundAssistantID: a.ID, CreatedAt: now, UpdatedAt: now}
	must(t, db.CreatePurchase(ctx, p))
	return &bundle{st: st, svc: svc, net: net, silent: quiet, org: org.ID, purchase: p}
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

// TestHangupReason: ending a phone call records its outcome and reason,
// hangs it up at the provider (the call is no longer live there), and the
// provider's late Ended event (completed, no reason) changes nothing; the
// hang-up is forgotten once that event came.
func TestHangupReason(t *testing.T) {
	b := setup(t, "sandbox")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.InProgress })
	if _, err := b.svc.End(t.Context(), c.ID, call.Failed, call.ReasonModelFailed, call.Result{}); err != nil {
		t.Fatal(err)
	}
	if n := b.net.Live(); n != 0 {
		t.Errorf("after End the provider still has %d live call(s), want 0: End did not hang up", n)
	}
	waitFor(t, "the hang-up to be forgotten after the provider's Ended event", func() bool { return b.svc.PendingHangups() == 0 })
	c, _ = b.st.GetCall(t.Context(), b.org, c.ID)
	if c.Status != call.Ended || c.Outcome != call.Failed || c.EndedReason != call.ReasonModelFailed {
		t.Errorf("after End = %s/%s/%s, want ended/failed/%s", c.Status.Text(), c.Outcome, c.EndedReason, call.ReasonModelFailed)
	}
}

// TestHangupReasonApplied: when End cannot record the end (the database
// failed), the call is still hung up at the provider, and the provider's
// Ended event, which carries no reason, records the outcome and reason End
// asked for.
func TestHangupReasonApplied(t *testing.T) {
	b := setup(t, "sandbox")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.InProgress })
	b.st.fail.Store(true)
	if _, err := b.svc.End(t.Context(), c.ID, call.Failed, call.ReasonModelFailed, call.Result{}); err == nil {
		t.Fatalf("End with a failing database = nil error, want the database's")
	}
	c = b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.Ended })
	if c.Outcome != call.Failed || c.EndedReason != call.ReasonModelFailed {
		t.Errorf("ended by the provider's Ended event after a hang-up = %s/%s, want failed/%s (what End asked for)", c.Outcome, c.EndedReason, call.ReasonModelFailed)
	}
	if n := b.svc.PendingHangups(); n != 0 {
		t.Errorf("PendingHangups after the Ended event = %d, want 0", n)
	}
}

// TestHangupsForgotten: a hang-up whose provider call fails is dropped at
// once; one whose provider never reports the end is dropped by the first
// hang-up asked more than HangupTTL after it (not by time alone).
func TestHangupsForgotten(t *testing.T) {
	b := setup(t, "silent")
	now := time.Now()
	b.svc.SetClock(func() time.Time { return now })
	place := func() string {
		t.Helper()
		c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
		must(t, err)
		return c.ID
	}
	end := func(id string) {
		t.Helper()
		if _, err := b.svc.End(t.Context(), id, call.Completed, call.ReasonAssistantEnded, call.Result{}); err != nil {
			t.Fatal(err)
		}
	}

	b.silent.failHangup = true
	failed := place()
	end(failed)
	if got := b.silent.hangups(); !slices.Equal(got, []string{failed}) {
		t.Fatalf("provider hang-ups = %v, want [%s]", got, failed)
	}
	if n := b.svc.PendingHangups(); n != 0 {
		t.Errorf("PendingHangups after the provider's Hangup failed = %d, want 0 (no Ended event will come)", n)
	}

	b.silent.failHangup = false
	lost := place()
	end(lost)
	if n := b.svc.PendingHangups(); n != 1 {
		t.Fatalf("PendingHangups while waiting for the provider's Ended event = %d, want 1", n)
	}
	now = now.Add(callctl.HangupTTL + time.Second)
	newest := place()
	if n := b.svc.PendingHangups(); n != 1 {
		t.Errorf("PendingHangups a hang-up TTL later, before any new hang-up = %d, want 1 (only a hang-up sweeps)", n)
	}
	end(newest)
	if n := b.svc.PendingHangups(); n != 1 {
		t.Errorf("PendingHangups a hang-up TTL later = %d, want 1 (the newest; the one the provider never answered forgotten)", n)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
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
