package callctl_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
)

// TestOwnership: a call records the node that takes its line (placing a
// phone call; the gateway's claim of a web call), a draining node takes
// no new calls, and the live calls of a node whose lease lapsed end
// node-lost (completed once answered, failed before), those of a live
// node untouched.
func TestOwnership(t *testing.T) {
	b := setupNode(t, "silent", "node_a")
	ctx := t.Context()
	now := time.Now()
	must(t, b.st.RegisterNode(ctx, store.Node{ID: "node_a", StartedAt: now, HeartbeatAt: now, LeaseUntil: now.Add(time.Hour)}))
	must(t, b.st.RegisterNode(ctx, store.Node{ID: "node_b", StartedAt: now, HeartbeatAt: now, LeaseUntil: now.Add(time.Hour)}))
	ringing, err := b.svc.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"})
	must(t, err)
	if got, _ := b.st.GetCall(ctx, b.org, ringing.ID); got.NodeID != "node_a" {
		t.Errorf("PlacePhoneCall on node_a: call's NodeID = %q; want node_a", got.NodeID)
	}
	web, err := b.svc.CreateWebCall(ctx, b.org, b.purchase.OutboundAssistantID)
	must(t, err)
	if web.NodeID != "" {
		t.Errorf("CreateWebCall: NodeID = %q; want none until a gateway claims it", web.NodeID)
	}
	other := callctl.New(callctl.Config{Store: b.st, Node: "node_b", Log: slog.New(slog.DiscardHandler)})
	talking, err := other.Connect(ctx, web.ID)
	must(t, err)
	if got, _ := b.st.GetCall(ctx, b.org, web.ID); got.NodeID != "node_b" || talking.NodeID != "node_b" {
		t.Errorf("Connect on node_b: NodeID = %q (returned %q); want node_b", got.NodeID, talking.NodeID)
	}

	// Nothing is orphaned while both nodes live.
	if n, err := b.svc.EndOrphaned(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("EndOrphaned with every node alive = %d, %v; want 0", n, err)
	}
	// node_b dies: its lease lapsed a minute ago.
	must(t, b.st.RenewNode(ctx, "node_b", now, now.Add(-time.Minute), false))
	if n, err := b.svc.EndOrphaned(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("EndOrphaned after node_b died = %d, %v; want 1", n, err)
	}
	if got, _ := b.st.GetCall(ctx, b.org, web.ID); got.Status != call.Ended || got.Outcome != call.Completed || got.EndedReason != call.ReasonNodeLost {
		t.Errorf("node_b's call = %s/%s/%s; want ended/completed/node-lost", got.Status.Text(), got.Outcome, got.EndedReason)
	}
	if got, _ := b.st.GetCall(ctx, b.org, ringing.ID); got.Status == call.Ended {
		t.Errorf("node_a's call ended %s; want it live (node_a lives)", got.EndedReason)
	}
	must(t, b.st.RenewNode(ctx, "node_a", now, now.Add(-time.Second), false))
	if n, err := b.svc.EndOrphaned(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("EndOrphaned after node_a died = %d, %v; want 1", n, err)
	}
	if got, _ := b.st.GetCall(ctx, b.org, ringing.ID); got.Outcome != call.Failed || got.EndedReason != call.ReasonNodeLost {
		t.Errorf("node_a's unanswered call = %s/%s; want failed/node-lost", got.Outcome, got.EndedReason)
	}

	b.svc.Drain()
	if _, err := b.svc.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: b.org, PurchaseID: b.purchase.ID, To: "+14155551234"}); !apperr.Is(err, apperr.Unavailable) {
		t.Errorf("PlacePhoneCall on a draining node = %v; want Unavailable", err)
	}
	if _, err := b.svc.Admit(ctx, telephony.Incoming{Provider: "silent", To: b.purchase.Number, From: "+14155559999"}); !errors.Is(err, telephony.ErrUnavailable) {
		t.Errorf("Admit on a draining node = %v; want telephony.ErrUnavailable", err)
	}
}
