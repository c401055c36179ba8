package cluster_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/cluster"
	"switchboard/internal/cluster/pgbus"
	"switchboard/internal/id"
	"switchboard/internal/nodetest"
	"switchboard/internal/store"
	"switchboard/internal/store/postgres"
	"switchboard/internal/store/sqlite"
	"switchboard/internal/telephony"
)

// bundle is one database with the bus its nodes share.
type bundle struct {
	t   *testing.T
	st  store.Store
	bus cluster.Bus
}

// each runs fn on SQLite (an in-process Hub) and, when
// SWITCHBOARD_TEST_POSTGRES is set, on PostgreSQL (LISTEN/NOTIFY).
func each(t *testing.T, fn func(t *testing.T, b bundle)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "sb.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		fn(t, bundle{t: t, st: db, bus: cluster.NewHub()})
	})
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
		if base == "" {
			t.Skip("SWITCHBOARD_TEST_POSTGRES is not set")
		}
		t.Parallel()
		u, drop, err := nodetest.CreatePostgres(t.Context(), base, "sbcluster_")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(drop)
		db, err := postgres.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		fn(t, bundle{t: t, st: db, bus: pgbus.New(db.Pool)})
	})
}

// node joins a node with short leases; run starts its loops until the
// test ends.
func (b bundle) node(local cluster.Local, run bool) *cluster.Node {
	b.t.Helper()
	n := cluster.New(cluster.Config{Store: b.st, Bus: b.bus, Lease: time.Second, Renew: 100 * time.Millisecond,
		CommandTimeout: 500 * time.Millisecond, Local: local})
	if err := n.Join(b.t.Context()); err != nil {
		b.t.Fatalf("Join: %v", err)
	}
	if run {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); n.Run(ctx) }()
		b.t.Cleanup(func() { cancel(); <-done })
	}
	return n
}

// call stores a live call whose line node holds.
func (b bundle) call(node string) call.Call {
	b.t.Helper()
	now := time.Now().UTC()
	org := auth.Org{ID: id.New(id.Org), Name: "Acme", CreatedAt: now}
	if err := b.st.CreateOrg(b.t.Context(), org); err != nil {
		b.t.Fatal(err)
	}
	c := call.Call{ID: id.New(id.Call), OrgID: org.ID, Type: call.Web, Status: call.InProgress, AssistantID: id.New(id.Assistant),
		CreatedAt: now, UpdatedAt: now, StartedAt: now, NodeID: node}
	if err := b.st.CreateCall(b.t.Context(), c); err != nil {
		b.t.Fatal(err)
	}
	return c
}

// fakeLocal records what the runtime of a node was asked.
type fakeLocal struct {
	mu       sync.Mutex
	asked    []string
	ended    chan string
	transfer error
}

func newLocal() *fakeLocal { return &fakeLocal{ended: make(chan string, 8)} }

func (f *fakeLocal) note(s string) {
	f.mu.Lock()
	f.asked = append(f.asked, s)
	f.mu.Unlock()
}

func (f *fakeLocal) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func (f *fakeLocal) End(_ context.Context, _, callID string) (bool, error) {
	f.note("end " + callID)
	return true, nil
}

func (f *fakeLocal) Say(_ context.Context, _, callID, text string, _ bool) error {
	f.note("say " + callID + " " + text)
	return nil
}

func (f *fakeLocal) Transfer(_ context.Context, _, callID, dest string) error {
	f.note("transfer " + callID + " " + dest)
	return f.transfer
}

func (f *fakeLocal) Ended(c call.Call) {
	select {
	case f.ended <- c.ID:
	default:
	}
}

// TestLeader: of three nodes, exactly one leads at any time; when it
// leaves, another leads within a few heartbeats.
func TestLeader(t *testing.T) {
	each(t, func(t *testing.T, b bundle) {
		nodes := []*cluster.Node{b.node(newLocal(), true), b.node(newLocal(), true), b.node(newLocal(), true)}
		leaders := func() []*cluster.Node {
			var out []*cluster.Node
			for _, n := range nodes {
				if n.Leader() {
					out = append(out, n)
				}
			}
			return out
		}
		var first *cluster.Node
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			l := leaders()
			if len(l) > 1 {
				t.Fatalf("%d nodes lead at once; want at most 1", len(l))
			}
			if len(l) == 1 {
				first = l[0]
			}
		}
		if first == nil {
			t.Fatal("no node leads after 3 s; want one")
		}
		if err := first.Leave(t.Context()); err != nil {
			t.Fatalf("Leave: %v", err)
		}
		start := time.Now()
		for {
			l := leaders()
			if len(l) > 1 {
				t.Fatalf("%d nodes lead at once after the leader left; want at most 1", len(l))
			}
			if len(l) == 1 && l[0] != first {
				break
			}
			if time.Since(start) > 2*time.Second {
				t.Fatalf("no other node leads %v after the leader left; want within a few heartbeats (100 ms)", time.Since(start))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// TestStartStop: a started node leads alone and renews its lease; Stop
// ends the heartbeat and gives the leases up (its row's lease ends now, it
// leads no more), and is safe twice and on a node never started.
func TestStartStop(t *testing.T) {
	each(t, func(t *testing.T, b bundle) {
		if err := cluster.New(cluster.Config{Store: b.st}).Stop(t.Context()); err != nil {
			t.Errorf("Stop of a node never started = %v, want nil", err)
		}
		n := cluster.New(cluster.Config{Store: b.st, Bus: b.bus, Lease: time.Second, Renew: 100 * time.Millisecond, Local: newLocal()})
		if err := n.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if !n.Leader() {
			t.Error("a lone started node does not lead")
		}
		time.Sleep(300 * time.Millisecond) // a few heartbeats
		row, err := b.st.GetNode(t.Context(), n.ID())
		if err != nil || !row.LeaseUntil.After(time.Now()) {
			t.Fatalf("node row after Start = %+v, %v; want a running lease", row, err)
		}
		if err := n.Stop(t.Context()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if n.Leader() {
			t.Error("a stopped node still leads")
		}
		time.Sleep(300 * time.Millisecond) // no heartbeat renews it now
		row, err = b.st.GetNode(t.Context(), n.ID())
		if err != nil || row.LeaseUntil.After(time.Now()) || !row.Draining {
			t.Errorf("node row after Stop = %+v, %v; want its lease ended, draining", row, err)
		}
		if err := n.Stop(t.Context()); err != nil {
			t.Errorf("second Stop = %v, want nil", err)
		}
	})
}

// TestCommands: live control asked on one node reaches the node that
// holds the call's line, errors come back with their kind (a refused
// transfer still is one), "this call ended" reaches the owner, a dead
// owner is answered at once and a silent one after the command timeout.
func TestCommands(t *testing.T) {
	each(t, func(t *testing.T, b bundle) {
		ctx := t.Context()
		askerLocal, ownerLocal := newLocal(), newLocal()
		asker, owner := b.node(askerLocal, true), b.node(ownerLocal, true)
		c := b.call(owner.ID())

		if ended, err := asker.End(ctx, c.OrgID, c.ID); err != nil || !ended {
			t.Errorf("End(call on the owner) = %v, %v; want true, nil", ended, err)
		}
		if err := asker.Say(ctx, c.OrgID, c.ID, "hello there", true); err != nil {
			t.Errorf("Say(call on the owner) = %v; want nil", err)
		}
		ownerLocal.transfer = apperr.Wrap(apperr.Conflict, telephony.ErrTransferRefused, "refused by the far side")
		err := asker.Transfer(ctx, c.OrgID, c.ID, "+15550100")
		if !apperr.Is(err, apperr.Conflict) || !errors.Is(err, telephony.ErrTransferRefused) {
			t.Errorf("Transfer(refused on the owner) = %v; want a Conflict wrapping ErrTransferRefused", err)
		}
		want := []string{"end " + c.ID, "say " + c.ID + " hello there", "transfer " + c.ID + " +15550100"}
		if got := ownerLocal.got(); len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("the owner's runtime was asked %q; want %q", got, want)
		}
		if got := askerLocal.got(); len(got) != 0 {
			t.Errorf("the asker's runtime was asked %q; want nothing", got)
		}
		asker.Ended(c)
		select {
		case got := <-ownerLocal.ended:
			if got != c.ID {
				t.Errorf("the owner heard call %s ended; want %s", got, c.ID)
			}
		case <-time.After(3 * time.Second):
			t.Error("the owner did not hear that its call ended within 3 s")
		}

		// A call on this node's own line runs here.
		mine := b.call(asker.ID())
		if err := asker.Say(ctx, mine.OrgID, mine.ID, "local", false); err != nil || len(askerLocal.got()) != 1 {
			t.Errorf("Say(own call) = %v, asked %q; want the local runtime asked", err, askerLocal.got())
		}

		// A dead owner: answered at once from its lapsed lease.
		now := time.Now()
		if err := b.st.RegisterNode(ctx, store.Node{ID: "node_dead", StartedAt: now.Add(-time.Minute), HeartbeatAt: now.Add(-time.Minute),
			LeaseUntil: now.Add(-30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		lost := b.call("node_dead")
		start := time.Now()
		if err := asker.Say(ctx, lost.OrgID, lost.ID, "anyone?", false); !apperr.Is(err, apperr.Unavailable) || time.Since(start) > 400*time.Millisecond {
			t.Errorf("Say(call of a dead node) = %v after %v; want Unavailable at once", err, time.Since(start))
		}
		if ended, err := asker.End(ctx, lost.OrgID, lost.ID); ended || err != nil {
			t.Errorf("End(call of a dead node) = %v, %v; want false, nil (the caller records the end)", ended, err)
		}

		// A live owner that does not answer (it joined but runs nothing).
		silent := b.node(newLocal(), false)
		quiet := b.call(silent.ID())
		start = time.Now()
		err = asker.Say(ctx, quiet.OrgID, quiet.ID, "hello?", false)
		if !apperr.Is(err, apperr.Unavailable) || time.Since(start) < 400*time.Millisecond {
			t.Errorf("Say(call of a silent node) = %v after %v; want Unavailable after the 500 ms command timeout", err, time.Since(start))
		}
	})
}
