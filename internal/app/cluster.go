package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/cluster"
)

// Drain is the first stage of a graceful shutdown (SIGTERM): the node is
// marked draining (its row too) and gives up the leader lease, /readyz
// answers 503, new websocket connections get 503 with Retry-After and new
// phone calls are refused (outbound dials are retried by other nodes,
// inbound ones answered unavailable), while live calls go on. Drain
// returns once no call runs here, or after timeout, or when ctx ends:
// Close then ends what still runs (system-shutdown).
func (m *Main) Drain(ctx context.Context, timeout time.Duration) error {
	// Refuse new calls first: /readyz follows the node's mark, and a
	// client that saw it fail must find the gateway refusing already.
	m.gateway.Drain()
	m.calls.Drain()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := m.node.Drain(wctx)
	cancel()
	if err != nil {
		m.log.Warn("marking this node draining in the database failed", "err", err)
	}
	began := time.Now()
	// A web call counts in both: its session (from the claim) and its
	// conversation; a phone call once answered.
	live := func() int { return m.runtime.Live() + m.gateway.Live() }
	m.log.Info("draining: waiting for the live calls to end", "conversations", m.runtime.Live(), "web_sessions", m.gateway.Live(),
		"timeout", timeout.String())
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for live() > 0 {
		select {
		case <-ctx.Done():
			m.log.Info("draining cut short", "conversations", m.runtime.Live(), "after", time.Since(began).String())
			return ctx.Err()
		case <-deadline.C:
			m.log.Info("drain timeout: the calls still live end system-shutdown", "conversations", m.runtime.Live(), "after", time.Since(began).String())
			return nil
		case <-tick.C:
		}
	}
	m.log.Info("drained: no call runs on this node", "after", time.Since(began).String())
	return nil
}

// clusterCollector reports this node's part in the cluster.
type clusterCollector struct {
	node                         *cluster.Node
	leader, term, cmds, timeouts *prometheus.Desc
	handled, dropped             *prometheus.Desc
}

func newClusterCollector(n *cluster.Node) *clusterCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("switchboard_cluster_"+name, help, nil, prometheus.Labels{"node_id": n.ID()})
	}
	return &clusterCollector{node: n,
		leader:   d("leader", "1 while this node holds the leader lease (it runs the promoter and the sweeps)."),
		term:     d("leader_term", "The leader lease's term when this node last held it."),
		cmds:     d("commands_sent_total", "Live-control commands sent to the node that holds a call's line."),
		timeouts: d("command_timeouts_total", "Commands the owner node did not answer in time (503)."),
		handled:  d("commands_handled_total", "Commands this node ran for other nodes."),
		dropped:  d("notices_dropped_total", "Call-ended notices to owner nodes dropped because the buffer was full."),
	}
}

func (c *clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.leader, c.term, c.cmds, c.timeouts, c.handled, c.dropped} {
		ch <- d
	}
}

func (c *clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.node.Stats()
	leader := 0.0
	if s.Leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(c.leader, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(c.term, prometheus.GaugeValue, float64(s.Term))
	ch <- prometheus.MustNewConstMetric(c.cmds, prometheus.CounterValue, float64(s.CommandsSent))
	ch <- prometheus.MustNewConstMetric(c.timeouts, prometheus.CounterValue, float64(s.CommandTimeouts))
	ch <- prometheus.MustNewConstMetric(c.handled, prometheus.CounterValue, float64(s.CommandsHandled))
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.NoticesDropped))
}
