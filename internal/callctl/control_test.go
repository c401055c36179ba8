package callctl_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
)

// endedHook is a Listener that records the calls it was told ended; it
// takes no answered line.
type endedHook struct {
	mu    sync.Mutex
	calls []call.Call
}

func (h *endedHook) Answered(call.Call, telephony.Line) bool { return false }

func (h *endedHook) Ended(c call.Call) { h.ended(c) }

func (h *endedHook) ended(c call.Call) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, c)
}

func (h *endedHook) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, c := range h.calls {
		out = append(out, c.ID)
	}
	return out
}

func wantEnded(t *testing.T, what string, c call.Call, outcome call.Outcome) {
	t.Helper()
	if c.Status != call.Ended || c.Outcome != outcome || c.EndedReason != call.ReasonAPIEnded {
		t.Errorf("%s = %s/%s/%s, want ended/%s/%s", what, c.Status.Text(), c.Outcome, c.EndedReason, outcome, call.ReasonAPIEnded)
	}
}

// TestEndByAPI: each live state ends as the API documents, the provider
// hangs the call up, the Ended hook hears of it once, and the provider's
// late Ended event changes nothing.
func TestEndByAPI(t *testing.T) {
	b := setup(t, "sandbox")
	hook := &endedHook{}
	ctx := t.Context()
	must(t, b.svc.Start(ctx, hook))
	place := func(to string) call.Call {
		t.Helper()
		c, err := b.svc.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: to})
		must(t, err)
		return c
	}

	// Ringing: the sandbox rings +1…0002 until its no-answer timeout.
	ringing := place("+14155550002")
	b.wait(t, ringing.ID, func(c call.Call) bool { return c.Status == call.Ringing })
	got, err := b.svc.EndByAPI(ctx, b.org, ringing.ID)
	must(t, err)
	wantEnded(t, "EndByAPI(ringing call)", got, call.Canceled)

	// In progress.
	answered := place("+14155551234")
	b.wait(t, answered.ID, func(c call.Call) bool { return c.Status == call.InProgress })
	got, err = b.svc.EndByAPI(ctx, b.org, answered.ID)
	must(t, err)
	wantEnded(t, "EndByAPI(in-progress call)", got, call.Completed)
	if n := b.net.Live(); n != 0 {
		t.Errorf("after EndByAPI the sandbox still has %d live call(s), want 0: it did not hang up", n)
	}
	waitFor(t, "the providers' Ended events", func() bool { return b.svc.PendingHangups() == 0 })
	for _, c := range []call.Call{ringing, answered} {
		stored, err := b.st.GetCall(ctx, b.org, c.ID)
		must(t, err)
		want := call.Canceled
		if c.ID == answered.ID {
			want = call.Completed
		}
		wantEnded(t, "stored call after the provider's Ended event", stored, want)
	}

	// Queued web call.
	web, err := b.svc.CreateWebCall(ctx, b.org, b.purchase.OutboundAssistantID)
	must(t, err)
	got, err = b.svc.EndByAPI(ctx, b.org, web.ID)
	must(t, err)
	wantEnded(t, "EndByAPI(queued web call)", got, call.Canceled)
	if got.Direction != "" {
		t.Errorf("web call direction = %q, want none", got.Direction)
	}

	if ids := hook.ids(); !slices.Equal(ids, []string{ringing.ID, answered.ID, web.ID}) {
		t.Errorf("Ended hook calls = %v, want each ended call once: %v", ids, []string{ringing.ID, answered.ID, web.ID})
	}

	_, err = b.svc.EndByAPI(ctx, b.org, answered.ID)
	if !apperr.Is(err, apperr.Conflict) {
		t.Errorf("EndByAPI(ended call) = %v, want a Conflict", err)
	}
	_, err = b.svc.EndByAPI(ctx, id.New(id.Org), web.ID)
	if !apperr.Is(err, apperr.NotFound) {
		t.Errorf("EndByAPI(another org's call) = %v, want NotFound", err)
	}
	_, err = b.svc.EndByAPI(ctx, b.org, id.New(id.Call))
	if !apperr.Is(err, apperr.NotFound) {
		t.Errorf("EndByAPI(unknown call) = %v, want NotFound", err)
	}
}

// TestEndByAPIQueuedPhoneCall: a phone call the provider has not reported
// ringing yet ends canceled and is hung up there.
func TestEndByAPIQueuedPhoneCall(t *testing.T) {
	b := setup(t, "silent")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	if c.Direction != call.Outbound {
		t.Errorf("PlacePhoneCall direction = %q, want outbound", c.Direction)
	}
	got, err := b.svc.EndByAPI(t.Context(), b.org, c.ID)
	must(t, err)
	wantEnded(t, "EndByAPI(queued phone call)", got, call.Canceled)
	if h := b.silent.hangups(); !slices.Equal(h, []string{c.ID}) {
		t.Errorf("provider hang-ups = %v, want [%s]", h, c.ID)
	}
}

// TestEndByAPIDatabaseFails: when the end cannot be recorded, the call is
// hung up all the same and the provider's Ended event records what the
// API asked for.
func TestEndByAPIDatabaseFails(t *testing.T) {
	b := setup(t, "sandbox")
	c, err := b.svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.InProgress })
	b.st.fail.Store(true)
	if _, err := b.svc.EndByAPI(t.Context(), b.org, c.ID); err == nil {
		t.Fatalf("EndByAPI with a failing database = nil error, want the database's")
	}
	got := b.wait(t, c.ID, func(c call.Call) bool { return c.Status == call.Ended })
	wantEnded(t, "call ended by the provider's Ended event after EndByAPI failed to record", got, call.Completed)
}

// answeringStore, once armed, answers the call (ringing → in-progress)
// just before the next UpdateCall, as a provider's event racing the API
// would.
type answeringStore struct {
	store.Store
	armed atomic.Bool
}

func (s *answeringStore) UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...event.Event) error {
	if s.armed.CompareAndSwap(true, false) {
		cur, err := s.Store.GetCallAnyOrg(ctx, c.ID)
		if err == nil && cur.Status == call.Ringing {
			_ = cur.Transition(call.Change{To: call.InProgress, At: time.Now()})
			_ = s.Store.UpdateCall(ctx, cur, call.Ringing)
		}
	}
	return s.Store.UpdateCall(ctx, c, prev, events...)
}

// TestEndByAPIAnsweredMeanwhile: a call answered between EndByAPI's read
// and its write ends completed, not canceled.
func TestEndByAPIAnsweredMeanwhile(t *testing.T) {
	b := setup(t, "silent")
	st := &answeringStore{Store: b.st}
	svc := callctl.New(callctl.Config{Store: st, Providers: []telephony.Network{b.silent}, Log: slog.New(slog.DiscardHandler)})
	c, err := svc.PlacePhoneCall(t.Context(), callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	svc.HandleEvent(telephony.Event{CallID: c.ID, Kind: telephony.Ringing, At: time.Now(), ProviderCallID: "abc@host"})
	st.armed.Store(true)
	got, err := svc.EndByAPI(t.Context(), b.org, c.ID)
	must(t, err)
	wantEnded(t, "EndByAPI(call answered during it)", got, call.Completed)
	if got.ProviderCallID != "abc@host" {
		t.Errorf("ProviderCallID = %q, want the one the Ringing event carried (abc@host)", got.ProviderCallID)
	}
}

func TestTrunkOf(t *testing.T) {
	key := secret.NewKey()
	s, err := secret.New(key)
	must(t, err)
	other, err := secret.New(secret.NewKey())
	must(t, err)
	c := phone.Connection{ID: id.New(id.Connection), Provider: phone.ProviderSIP,
		SIP: phone.SIPConnection{Address: "sip.example.com:5061", Transport: "tls", Username: "acme"}}
	c.SIP.SealedPassword = s.Seal([]byte("p4ss word"), []byte(c.ID))

	tr, err := callctl.TrunkOf(c, s)
	must(t, err)
	want := telephony.Trunk{ConnectionID: c.ID, Address: "sip.example.com:5061", Transport: "tls", Username: "acme", Password: "p4ss word"}
	if tr != want {
		t.Errorf("TrunkOf = %+v, want %+v", tr, want)
	}
	for name, opener := range map[string]callctl.Opener{"another key": other, "no key": nil} {
		if _, err := callctl.TrunkOf(c, opener); !apperr.Is(err, apperr.Unavailable) {
			t.Errorf("TrunkOf(%s) = %v, want an Unavailable error", name, err)
		}
	}
	moved := c
	moved.ID = id.New(id.Connection) // a sealed password copied to another connection
	if _, err := callctl.TrunkOf(moved, s); err == nil {
		t.Errorf("TrunkOf(password sealed for another connection) = nil error, want one")
	}
	c.SIP.SealedPassword = nil
	tr, err = callctl.TrunkOf(c, nil)
	if err != nil || tr.Password != "" || tr.Username != "acme" {
		t.Errorf("TrunkOf(no password) = %+v, %v; want no password, no error", tr, err)
	}
}
