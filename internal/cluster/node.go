// Package cluster makes a `switchboard serve` process a node among the
// nodes that share one database: it owns this node's id, its heartbeat
// (a lease in the nodes table, renewed every second or so), the leader
// lease (one node at a time runs what must run once per cluster) and the
// commands that carry live call control to the node that holds a call's
// line. It imports no transport: the commands travel on a Bus (PostgreSQL
// LISTEN/NOTIFY in package pgbus; none with SQLite, where the one node
// runs every call). See docs/ARCHITECTURE.md, "Nodes, the leader and call
// ownership".
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/lifecycle"
	"switchboard/internal/store"
)

// Store is what a node reads and writes.
type Store interface {
	RegisterNode(ctx context.Context, n store.Node) error
	RenewNode(ctx context.Context, id string, now, leaseUntil time.Time, draining bool) error
	GetNode(ctx context.Context, id string) (store.Node, error)
	ClaimLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (store.Lease, bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
	GetCall(ctx context.Context, orgID, id string) (call.Call, error)
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)
}

// LeaderLease is the name of the leader's lease (store.ClaimLease).
const LeaderLease = "leader"

// Defaults of Config.
const (
	DefaultLease          = 10 * time.Second
	DefaultRenew          = time.Second
	DefaultCommandTimeout = 5 * time.Second
)

// Config is a node's setup: what it calls downward.
type Config struct {
	// ID is the node's id (NewID); empty: a fresh one. The app makes it
	// first, since call control records it and is built before the node.
	ID    string
	Store Store
	// Bus carries commands between nodes; nil runs every command here
	// (one node: SQLite).
	Bus Bus
	// Addr is the node's listen address, recorded for operators.
	Addr string
	// Lease is how long a heartbeat (and a leader claim) holds: a node
	// that has not renewed for this long is dead (default 10 s).
	Lease time.Duration
	// Renew is the heartbeat interval (default 1 s); it must be well
	// under Lease.
	Renew time.Duration
	// CommandTimeout bounds the wait for another node's answer to a
	// command (default 5 s); past it the asker answers 503.
	CommandTimeout time.Duration
	// Local runs the commands for this node's calls: its call runtime
	// (callrun.Runtime).
	Local Local
	// Calls ends a call this node holds that its runtime does not run
	// yet (queued, ringing), so that this node's provider hangs it up:
	// callctl.Service. Nil: such an end command is answered not ended.
	Calls CallEnder
	Log   *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Node is this process as a member of the cluster. Its zero value is not
// usable: New makes one; Start joins it and keeps it alive until Stop
// (Join, Run and Leave are those steps one by one).
type Node struct {
	cfg Config
	id  string
	log *slog.Logger

	draining atomic.Bool
	// leaderUntil is when this node's leader lease ends by its own clock
	// (Unix ns; 0: not the leader).
	leaderUntil atomic.Int64
	// leadMu orders a heartbeat's claim of the leader lease with Drain
	// and Leave: a claim in flight when the node starts draining must not
	// make it lead again (and keep the lease) after they gave it up.
	leadMu     sync.Mutex
	leaderTerm atomic.Int64

	// Commands (commands.go).
	sub      Subscription // nil without a bus
	mu       sync.Mutex
	pending  map[string]chan message // by request id
	notices  chan notice             // calls whose owner must hear they ended
	handlers chan struct{}           // a token per command being handled
	stats    struct{ sent, timeouts, dropped, handled atomic.Int64 }
	wg       sync.WaitGroup // command handlers

	// The life Start began: stopRun ends Run, which closes running.
	started bool
	stopRun context.CancelFunc
	running chan struct{}
}

var _ lifecycle.Service = (*Node)(nil)

// NewID is a fresh node id (node_…).
func NewID() string { return id.New("node") }

// LeaveTimeout bounds Stop's Leave: the leases are given up even when the
// shutdown's budget is spent, so that no other node waits for them to
// lapse.
const LeaveTimeout = 2 * time.Second

// New returns a node with a fresh id; it does nothing until Join.
func New(cfg Config) *Node {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Renew <= 0 {
		cfg.Renew = DefaultRenew
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = DefaultCommandTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ID == "" {
		cfg.ID = NewID()
	}
	n := &Node{cfg: cfg, id: cfg.ID, pending: map[string]chan message{},
		notices: make(chan notice, noticeBuffer), handlers: make(chan struct{}, maxHandlers)}
	n.log = cfg.Log.With("node_id", n.id)
	return n
}

// ID is this node's id (node_…), recorded on the calls whose line it holds.
func (n *Node) ID() string { return n.id }

// Join registers the node (its lease running from now), subscribes to its
// commands when there is a bus, and makes a first claim of the leader
// lease, so that a lone node leads as soon as it serves.
func (n *Node) Join(ctx context.Context) error {
	now := n.cfg.Now()
	if err := n.cfg.Store.RegisterNode(ctx, store.Node{ID: n.id, Addr: n.cfg.Addr, StartedAt: now, HeartbeatAt: now,
		LeaseUntil: now.Add(n.cfg.Lease)}); err != nil {
		return err
	}
	if n.cfg.Bus != nil {
		sub, err := n.cfg.Bus.Subscribe(ctx, n.id)
		if err != nil {
			return err
		}
		n.sub = sub
	}
	n.claimLeader(ctx, now)
	n.log.Info("joined the cluster", "lease", n.cfg.Lease.String(), "leader", n.Leader(), "bus", n.cfg.Bus != nil)
	return nil
}

// Start joins the cluster (Join) and keeps the node alive (Run) until
// Stop.
func (n *Node) Start(ctx context.Context) error {
	n.started = true
	if err := n.Join(ctx); err != nil {
		return fmt.Errorf("join the cluster: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	n.stopRun, n.running = cancel, make(chan struct{})
	go func() {
		defer close(n.running)
		n.Run(runCtx)
	}()
	return nil
}

// Stop ends the heartbeat and the commands (waiting for those running,
// until ctx is done), then gives the leases up (Leave, within
// LeaveTimeout whatever ctx's deadline): another node leads at once, and
// nobody waits for this one's lease to lapse. A failed Leave is logged:
// the leases then lapse by themselves.
func (n *Node) Stop(ctx context.Context) error {
	if !n.started {
		return nil
	}
	if n.stopRun != nil {
		n.stopRun()
		select {
		case <-n.running:
		case <-ctx.Done():
			return fmt.Errorf("cluster: the heartbeat and commands did not stop in time: %w", ctx.Err())
		}
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), LeaveTimeout)
	defer cancel()
	if err := n.Leave(lctx); err != nil {
		n.log.Warn("leaving the cluster failed; this node's leases lapse by themselves", "err", err)
	}
	return nil
}

// Run keeps the node alive until ctx ends: the heartbeat (and leader
// claims) every Renew, and with a bus the commands to this node and the
// notices it sends. It returns once all of that has stopped.
func (n *Node) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if n.sub != nil {
		wg.Go(func() { n.receive(ctx) })
		wg.Go(func() { n.sendNotices(ctx) })
	}
	tick := time.NewTicker(n.cfg.Renew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			n.wg.Wait()
			return
		case <-tick.C:
		}
		n.heartbeat(ctx)
	}
}

// heartbeat renews the node's lease and, unless draining, claims the
// leader lease.
func (n *Node) heartbeat(ctx context.Context) {
	now := n.cfg.Now()
	hctx, cancel := context.WithTimeout(ctx, n.cfg.Lease/2)
	defer cancel()
	err := n.cfg.Store.RenewNode(hctx, n.id, now, now.Add(n.cfg.Lease), n.draining.Load())
	if apperr.Is(err, apperr.NotFound) {
		err = n.cfg.Store.RegisterNode(hctx, store.Node{ID: n.id, Addr: n.cfg.Addr, StartedAt: now, HeartbeatAt: now,
			LeaseUntil: now.Add(n.cfg.Lease), Draining: n.draining.Load()})
	}
	if err != nil && ctx.Err() == nil {
		n.log.Warn("renewing the node lease failed", "err", err)
	}
	if n.draining.Load() {
		return
	}
	n.claimLeader(hctx, now)
}

// claimLeader claims or renews the leader lease as of now. The node leads
// until now+Lease-Renew by its own clock unless a later claim renews it:
// one missed renewal stops it leading before another node may take over.
func (n *Node) claimLeader(ctx context.Context, now time.Time) {
	l, held, err := n.cfg.Store.ClaimLease(ctx, LeaderLease, n.id, now, n.cfg.Lease)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("claiming the leader lease failed", "err", err)
		}
		return // leadership, if any, runs out by its own clock
	}
	n.leadMu.Lock()
	defer n.leadMu.Unlock()
	if held && n.draining.Load() {
		// Drain or Leave ran while this claim was in flight: give back
		// what it took.
		if err := n.cfg.Store.ReleaseLease(ctx, LeaderLease, n.id); err != nil && ctx.Err() == nil {
			n.log.Warn("giving back the leader lease a draining node claimed failed", "err", err)
		}
		return
	}
	was := n.Leader()
	if !held {
		n.leaderUntil.Store(0)
		if was {
			n.log.Warn("this node no longer leads the cluster", "leader", l.Holder, "term", l.Term)
		}
		return
	}
	n.leaderUntil.Store(now.Add(n.cfg.Lease - n.cfg.Renew).UnixNano())
	n.leaderTerm.Store(l.Term)
	if !was {
		n.log.Info("this node leads the cluster", "term", l.Term)
	}
}

// Leader reports whether this node holds the leader lease now: the
// promoter, the sweeps and the once-per-cluster loops run only then.
func (n *Node) Leader() bool {
	until := n.leaderUntil.Load()
	return until != 0 && n.cfg.Now().UnixNano() < until
}

// Drain marks the node draining (its row too, so other nodes see it) and
// gives up the leader lease so that another node takes over within a
// heartbeat. From now on it claims no leadership.
func (n *Node) Drain(ctx context.Context) error {
	n.leadMu.Lock()
	already := n.draining.Swap(true)
	n.leaderUntil.Store(0)
	n.leadMu.Unlock()
	if already {
		return nil
	}
	now := n.cfg.Now()
	return errors.Join(n.cfg.Store.RenewNode(ctx, n.id, now, now.Add(n.cfg.Lease), true),
		n.cfg.Store.ReleaseLease(ctx, LeaderLease, n.id))
}

// Draining reports whether Drain was called.
func (n *Node) Draining() bool { return n.draining.Load() }

// Leave ends the node's leases once it has stopped its calls (shutdown):
// another node leads at once, and nothing waits for this one's lease. The
// node claims no leadership any more (it is draining).
func (n *Node) Leave(ctx context.Context) error {
	n.leadMu.Lock()
	n.draining.Store(true)
	n.leaderUntil.Store(0)
	n.leadMu.Unlock()
	now := n.cfg.Now()
	return errors.Join(n.cfg.Store.ReleaseLease(ctx, LeaderLease, n.id),
		n.cfg.Store.RenewNode(ctx, n.id, now, now, true))
}

// Stats are the node's counters, for metrics.
type Stats struct {
	Leader bool
	// Term is the leader lease's term when this node last held it.
	Term int64
	// CommandsSent, CommandTimeouts: commands this node sent to owners,
	// and those not answered in time; CommandsHandled: commands it ran
	// for other nodes; NoticesDropped: "this call ended" notices not sent
	// because the buffer was full.
	CommandsSent, CommandTimeouts, CommandsHandled, NoticesDropped int64
}

// Stats returns the counters.
func (n *Node) Stats() Stats {
	return Stats{Leader: n.Leader(), Term: n.leaderTerm.Load(), CommandsSent: n.stats.sent.Load(),
		CommandTimeouts: n.stats.timeouts.Load(), CommandsHandled: n.stats.handled.Load(), NoticesDropped: n.stats.dropped.Load()}
}
