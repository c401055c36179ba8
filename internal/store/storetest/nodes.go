package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/store"
)

// testNodes covers the cluster's rows: nodes and their leases, named
// leases (the leader), and the live calls a dead node left.
func testNodes(t *testing.T, open Opener) {
	t.Run("RegisterRenewList", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		a := store.Node{ID: "node_a", Addr: "127.0.0.1:1", StartedAt: at(0), HeartbeatAt: at(0), LeaseUntil: at(10 * time.Second)}
		b := store.Node{ID: "node_b", Addr: "127.0.0.1:2", StartedAt: at(time.Second), HeartbeatAt: at(time.Second), LeaseUntil: at(11 * time.Second)}
		must(t, "RegisterNode(a)", s.RegisterNode(ctx, a))
		must(t, "RegisterNode(b)", s.RegisterNode(ctx, b))
		got, err := s.GetNode(ctx, "node_a")
		must(t, "GetNode(a)", err)
		if want := normNode(a); !reflect.DeepEqual(normNode(got), want) {
			t.Errorf("GetNode(a) = %+v; want %+v", got, want)
		}
		if _, err := s.GetNode(ctx, "node_x"); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("GetNode(unknown) error = %v; want NotFound", err)
		}
		must(t, "RenewNode(a)", s.RenewNode(ctx, "node_a", at(5*time.Second), at(15*time.Second), true))
		got, err = s.GetNode(ctx, "node_a")
		must(t, "GetNode(a)", err)
		if !got.Draining || !got.HeartbeatAt.Equal(msTime(at(5*time.Second))) || !got.LeaseUntil.Equal(msTime(at(15*time.Second))) {
			t.Errorf("GetNode(a) after RenewNode(at 5 s, until 15 s, draining) = %+v", got)
		}
		if err := s.RenewNode(ctx, "node_x", at(0), at(time.Second), false); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("RenewNode(unknown) error = %v; want NotFound", err)
		}
		list, err := s.ListNodes(ctx, at(12*time.Second))
		must(t, "ListNodes", err)
		if len(list) != 1 || list[0].ID != "node_a" {
			t.Errorf("ListNodes(alive past 12 s) = %+v; want node_a only (node_b's lease ended at 11 s)", list)
		}
		list, err = s.ListNodes(ctx, time.Time{})
		must(t, "ListNodes", err)
		if len(list) != 2 || list[0].ID != "node_a" || list[1].ID != "node_b" {
			t.Errorf("ListNodes(all) = %+v; want node_a, node_b (oldest first)", list)
		}
		// Registering an id again (a restart with the same id) replaces the row.
		a.StartedAt, a.LeaseUntil = at(time.Minute), at(time.Minute+10*time.Second)
		must(t, "RegisterNode(a again)", s.RegisterNode(ctx, a))
		got, err = s.GetNode(ctx, "node_a")
		must(t, "GetNode(a)", err)
		if want := normNode(a); !reflect.DeepEqual(normNode(got), want) {
			t.Errorf("GetNode(a) after registering again = %+v; want %+v", got, want)
		}
	})

	t.Run("Lease", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		ttl := 10 * time.Second
		claim := func(holder string, now time.Time) (store.Lease, bool) {
			t.Helper()
			l, ok, err := s.ClaimLease(ctx, "leader", holder, now, ttl)
			must(t, fmt.Sprintf("ClaimLease(%s, %v)", holder, now.Sub(t0)), err)
			return l, ok
		}
		if l, ok := claim("node_a", at(0)); !ok || l.Holder != "node_a" || l.Term != 1 || !l.LeaseUntil.Equal(msTime(at(ttl))) {
			t.Fatalf("ClaimLease(a) on a fresh store = %+v, %v; want held by node_a, term 1, until +10 s", l, ok)
		}
		if l, ok := claim("node_b", at(5*time.Second)); ok || l.Holder != "node_a" {
			t.Errorf("ClaimLease(b) while a holds it = %+v, %v; want refused, held by node_a", l, ok)
		}
		if l, ok := claim("node_a", at(9*time.Second)); !ok || l.Term != 1 || !l.LeaseUntil.Equal(msTime(at(9*time.Second+ttl))) {
			t.Errorf("ClaimLease(a) renewing = %+v, %v; want held, term 1, until 19 s", l, ok)
		}
		// a stops renewing: once its lease ran out, b takes it, a new term.
		if l, ok := claim("node_b", at(19*time.Second)); !ok || l.Holder != "node_b" || l.Term != 2 {
			t.Errorf("ClaimLease(b) when a's lease ran out = %+v, %v; want held by node_b, term 2", l, ok)
		}
		if l, ok := claim("node_a", at(20*time.Second)); ok || l.Holder != "node_b" {
			t.Errorf("ClaimLease(a) after b took over = %+v, %v; want refused", l, ok)
		}
		// Release by a non-holder changes nothing; by the holder, frees it.
		must(t, "ReleaseLease(a)", s.ReleaseLease(ctx, "leader", "node_a"))
		if _, ok := claim("node_a", at(21*time.Second)); ok {
			t.Errorf("ClaimLease(a) after a's release of b's lease: held; want refused (a held nothing to release)")
		}
		must(t, "ReleaseLease(b)", s.ReleaseLease(ctx, "leader", "node_b"))
		if l, ok := claim("node_a", at(22*time.Second)); !ok || l.Term != 3 {
			t.Errorf("ClaimLease(a) after b released = %+v, %v; want held, term 3", l, ok)
		}
		// Leases are by name.
		if _, ok := claim("node_b", at(22*time.Second)); ok {
			t.Errorf("ClaimLease(b, leader) = held; want refused")
		}
		if _, ok, err := s.ClaimLease(ctx, "other", "node_b", at(22*time.Second), ttl); err != nil || !ok {
			t.Errorf("ClaimLease(b, other) = %v, %v; want held (another name)", ok, err)
		}
	})

	t.Run("LeaseRace", func(t *testing.T) { raceLease(t, open) })

	t.Run("OrphanedCalls", func(t *testing.T) {
		t.Parallel()
		s, ctx := open(t), t.Context()
		o := mustOrg(t, s, "Acme")
		must(t, "RegisterNode(live)", s.RegisterNode(ctx, store.Node{ID: "node_live", StartedAt: at(0), HeartbeatAt: at(0), LeaseUntil: at(time.Hour)}))
		must(t, "RegisterNode(dead)", s.RegisterNode(ctx, store.Node{ID: "node_dead", StartedAt: at(0), HeartbeatAt: at(0), LeaseUntil: at(time.Minute)}))
		now := at(2 * time.Minute)
		owned := func(node string, st call.Status) call.Call {
			c := newCall(o.ID, call.Web, at(0))
			c.NodeID = node
			mustCall(t, s, c)
			if st != call.Queued {
				prev := c.Status
				must(t, "Transition", c.Transition(call.Change{To: st, At: at(time.Second), Outcome: call.Completed, Reason: call.ReasonAPIEnded}))
				must(t, "UpdateCall", s.UpdateCall(ctx, c, prev))
			}
			return c
		}
		onDead := owned("node_dead", call.Queued)
		talking := owned("node_dead", call.InProgress)
		owned("node_dead", call.Ended)
		onGone := owned("node_gone", call.InProgress) // a node with no row
		owned("node_live", call.InProgress)
		owned("", call.Queued) // nobody took its line yet
		got, err := s.OrphanedCalls(ctx, now, 10)
		must(t, "OrphanedCalls", err)
		want := map[string]bool{onDead.ID: true, talking.ID: true, onGone.ID: true}
		if len(got) != len(want) {
			t.Fatalf("OrphanedCalls = %d calls %v; want %d (live calls of node_dead and node_gone)", len(got), callIDs(got), len(want))
		}
		for _, c := range got {
			if !want[c.ID] {
				t.Errorf("OrphanedCalls lists %s (node %q, status %s); want only live calls of dead nodes", c.ID, c.NodeID, c.Status.Text())
			}
		}
		if got, err := s.GetCall(ctx, o.ID, talking.ID); err != nil || got.NodeID != "node_dead" {
			t.Errorf("GetCall(%s).NodeID = %q, %v; want node_dead (kept by UpdateCall)", talking.ID, got.NodeID, err)
		}
		if got, err := s.OrphanedCalls(ctx, now, 2); err != nil || len(got) != 2 {
			t.Errorf("OrphanedCalls(limit 2) = %d calls, %v; want 2", len(got), err)
		}
		if got, err := s.OrphanedCalls(ctx, at(30*time.Second), 10); err != nil || len(got) != 1 || got[0].ID != onGone.ID {
			t.Errorf("OrphanedCalls(while node_dead's lease runs) = %v, %v; want only %s", callIDs(got), err, onGone.ID)
		}
	})
}

func normNode(n store.Node) store.Node {
	n.StartedAt, n.HeartbeatAt, n.LeaseUntil = msTime(n.StartedAt), msTime(n.HeartbeatAt), msTime(n.LeaseUntil)
	return n
}

// raceLease: nodes claiming the leader lease at the same instant never
// both hold it. Each round starts past the last lease (anyone may take
// it: exactly one does), then all claim again while it runs (only the
// holder keeps it).
func raceLease(t *testing.T, open Opener) {
	t.Parallel()
	s, ctx := open(t), t.Context()
	const nodes, rounds = 4, 25
	ttl := 10 * time.Second
	claimAll := func(r int, now time.Time) []string {
		var mu sync.Mutex
		var held []string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range nodes {
			wg.Go(func() {
				<-start
				name := fmt.Sprintf("node_%d", i)
				_, ok, err := s.ClaimLease(ctx, "leader", name, now, ttl)
				if err != nil {
					t.Errorf("round %d: ClaimLease(%s) = %v", r, name, err)
					return
				}
				if ok {
					mu.Lock()
					held = append(held, name)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		return held
	}
	for r := range rounds {
		now := at(time.Duration(r) * 2 * ttl)
		first := claimAll(r, now)
		if len(first) != 1 {
			t.Fatalf("round %d: %d nodes hold the free leader lease at once (%v); want exactly 1", r, len(first), first)
		}
		again := claimAll(r, now.Add(time.Second))
		if len(again) != 1 || again[0] != first[0] {
			t.Fatalf("round %d: claiming the lease %s holds: held by %v; want only %s", r, first[0], again, first[0])
		}
	}
}
