package callctl_test

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
)

// heldGroups is a store whose first GetCallsAnyOrg once armed (held
// false) waits for release,
// and which records the size of every UpdateCalls.
type heldGroups struct {
	store.Store
	release chan struct{}
	held    atomic.Bool
	mu      sync.Mutex
	sizes   []int
}

func (h *heldGroups) GetCallsAnyOrg(ctx context.Context, ids []string) ([]call.Call, error) {
	if h.held.CompareAndSwap(false, true) {
		<-h.release
	}
	return h.Store.GetCallsAnyOrg(ctx, ids)
}

func (h *heldGroups) UpdateCalls(ctx context.Context, us []store.CallUpdate) ([]error, error) {
	h.mu.Lock()
	h.sizes = append(h.sizes, len(us))
	h.mu.Unlock()
	return h.Store.UpdateCalls(ctx, us)
}

// TestEarlyEventsGrouped: providers' ringing and answered events that
// arrive while a group is being saved are saved together, in the next
// group, each applied as alone: a call rings, one rung twice is rung
// once, one answered first is not rung back, an unknown call changes
// nothing, and the totals follow.
func TestEarlyEventsGrouped(t *testing.T) {
	b := setup(t, "silent")
	st := &heldGroups{Store: b.st, release: make(chan struct{})}
	svc := callctl.New(callctl.Config{Store: st, Providers: []telephony.Network{b.silent}, Log: slog.New(slog.DiscardHandler)})
	st.held.Store(true) // not yet: armed below
	ctx := t.Context()
	var cs []call.Call
	for range 6 {
		c, err := svc.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
		must(t, err)
		cs = append(cs, c)
	}
	// cs[5] was answered before its ringing arrives.
	svc.HandleEvent(telephony.Event{CallID: cs[5].ID, Kind: telephony.Answered, At: time.Now()})
	st.mu.Lock()
	st.sizes = nil
	st.mu.Unlock()
	st.held.Store(false)

	ring := func(callID string) telephony.Event {
		return telephony.Event{CallID: callID, Kind: telephony.Ringing, At: time.Now(), ProviderCallID: "pc-" + callID}
	}
	var wg sync.WaitGroup
	send := func(ev telephony.Event) { wg.Go(func() { svc.HandleEvent(ev) }) }
	send(ring(cs[0].ID)) // leads; its group waits for release
	for !st.held.Load() {
		time.Sleep(time.Millisecond)
	}
	queued := []telephony.Event{
		ring(cs[1].ID), ring(cs[2].ID), ring(cs[2].ID), ring(cs[3].ID), ring(cs[5].ID), ring(id.New(id.Call)),
		{CallID: cs[4].ID, Kind: telephony.Answered, At: time.Now()},
	}
	for _, ev := range queued {
		send(ev)
	}
	deadline := time.Now().Add(5 * time.Second)
	for svc.QueuedEvents() < len(queued) {
		if time.Now().After(deadline) {
			t.Fatalf("%d events queued behind the held group; want %d", svc.QueuedEvents(), len(queued))
		}
		time.Sleep(time.Millisecond)
	}
	close(st.release)
	wg.Wait()

	want := map[string]call.Status{cs[0].ID: call.Ringing, cs[1].ID: call.Ringing, cs[2].ID: call.Ringing, cs[3].ID: call.Ringing,
		cs[4].ID: call.InProgress, cs[5].ID: call.InProgress}
	for callID, st := range want {
		c, err := b.st.GetCall(ctx, b.org, callID)
		must(t, err)
		if c.Status != st {
			t.Errorf("call %s is %s; want %s", callID, c.Status.Text(), st.Text())
		}
		if st == call.Ringing && c.ProviderCallID != "pc-"+callID {
			t.Errorf("call %s provider call id %q; want the ringing event's", callID, c.ProviderCallID)
		}
	}
	for s, n := range map[call.Status]int{call.Queued: 0, call.Ringing: 4, call.InProgress: 2} {
		_, total, err := b.st.ListCalls(ctx, b.org, store.CallFilter{Status: &s, Page: store.Page{Page: 1, PageSize: 10}})
		must(t, err)
		if total != n {
			t.Errorf("%s total = %d; want %d", s.Text(), total, n)
		}
	}
	// Two groups: the held one (cs[0]) and the one of everything queued
	// behind it (cs[2]'s second ringing was found rung: no change; cs[5]'s
	// ringing came after its answer: skipped; the unknown call: none).
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.sizes) != 2 || st.sizes[0] != 1 || st.sizes[1] != 4 {
		t.Errorf("UpdateCalls sizes = %v; want [1 4] (one group held, the queued events saved as one)", st.sizes)
	}
}
