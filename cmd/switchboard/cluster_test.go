package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/gateway/protocol"
	"switchboard/internal/nodetest"
)

// Cluster timing of TestCluster's nodes: short, so that a dead node's
// calls end within seconds. A node-lost call ends at most
// lease + heartbeat + sweep after the kill (docs/ARCHITECTURE.md).
const (
	testLease     = 3 * time.Second
	testHeartbeat = 500 * time.Millisecond
	testSweep     = time.Second // the app's default
)

// TestCluster runs three `switchboard serve` nodes on one PostgreSQL
// database and checks what several nodes promise: one leader; a web call
// created on node 1 and joined on node 2 is controlled from node 3 (say,
// end), its websocket closing at once with api-ended-call; a node killed
// with SIGKILL leaves its live call to end node-lost within the stated
// bound; SIGTERM drains a node (/readyz 503, new connections 503 with
// Retry-After, its live call goes on and ends as its client says).
func TestCluster(t *testing.T) {
	bin, dbURL, logDir, probe := clusterSetup(t, "sbcluster_", "starts three real server processes")
	timing := []string{"--node-lease", testLease.String(), "--node-heartbeat", testHeartbeat.String()}
	start := func(name string, first bool, extra ...string) *nodetest.Node {
		n, err := nodetest.Start(t.Context(), nodetest.Options{Name: name, Bin: bin, DB: dbURL, LogDir: logDir, FirstStart: first,
			Args: append(append([]string{}, timing...), extra...)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Stop() })
		return n
	}
	n1 := start("node1", true)
	var n2, n3 *nodetest.Node
	var wg sync.WaitGroup
	wg.Go(func() { n2 = start("node2", false, "--drain-timeout", "30s") })
	wg.Go(func() { n3 = start("node3", false) })
	wg.Wait()
	if t.Failed() {
		return
	}
	c := &clusterClient{key: n1.Key}
	var asst struct{ Data struct{ ID string } }
	c.do(t, n1, "POST", "/v1/assistants", map[string]any{"name": "Concierge", "firstMessage": "Hello, how can I help?"}, &asst)

	t.Run("one leader", func(t *testing.T) {
		ids := map[string]string{n1.ID: "node1", n2.ID: "node2", n3.ID: "node3"}
		var holder string
		if err := probe.Scan(t.Context(), `SELECT holder FROM leases WHERE name = 'leader' AND lease_until > ?`,
			[]any{time.Now().UnixMilli()}, &holder); err != nil {
			t.Fatalf("reading the leader lease: %v", err)
		}
		if ids[holder] == "" {
			t.Errorf("the leader lease is held by %q; want one of the three nodes %v", holder, ids)
		}
		var leading []string
		for _, n := range []*nodetest.Node{n1, n2, n3} {
			if strings.Contains(n.Log(), "this node leads the cluster") {
				leading = append(leading, n.Name)
			}
		}
		if len(leading) != 1 || leading[0] != ids[holder] {
			t.Errorf("nodes that logged leading the cluster: %v; want only %s, the lease's holder (one promoter per cluster)", leading, ids[holder])
		}
	})

	t.Run("control from a third node", func(t *testing.T) {
		callID, ws := c.joinWebCall(t, n1, n2, asst.Data.ID)
		ws.until(t, "the first message", isTurnDone)
		if n, err := probe.Int(t.Context(), `SELECT COUNT(*) FROM calls WHERE id = ? AND node_id = ?`, callID, n2.ID); err != nil || n != 1 {
			t.Fatalf("call %s's node_id is not node2's (%s): %d rows, %v", callID, n2.ID, n, err)
		}
		c.do(t, n3, "POST", "/v1/calls/"+callID+"/say", map[string]any{"text": "Your table is ready."}, nil)
		evs := ws.until(t, "the said turn", isTurnDone)
		if got := evs[len(evs)-1].(protocol.TurnDone).Text; got != "Your table is ready." {
			t.Errorf("POST /say on node3: the client on node2 heard %q; want %q", got, "Your table is ready.")
		}
		asked := time.Now()
		var ended struct {
			Data struct{ EndedReason, Outcome string }
		}
		c.do(t, n3, "POST", "/v1/calls/"+callID+"/end", nil, &ended)
		if ended.Data.EndedReason != "api-ended-call" {
			t.Errorf("POST /end on node3 = endedReason %q; want api-ended-call", ended.Data.EndedReason)
		}
		evs = ws.until(t, "call.ended", isCallEnded)
		if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "api-ended-call" {
			t.Errorf("the client on node2 got call.ended %s/%s; want api-ended-call", e.Outcome, e.EndedReason)
		}
		code := ws.closed(t)
		if took := time.Since(asked); took > 2*time.Second {
			t.Errorf("the websocket on node2 closed %v after POST /end on node3; want within 2 s", took)
		}
		if code != 4410 {
			t.Errorf("the websocket on node2 closed with %d; want 4410 (ended through the API)", code)
		}
	})

	t.Run("kill -9 ends its calls node-lost", func(t *testing.T) {
		callID, ws := c.joinWebCall(t, n1, n3, asst.Data.ID)
		ws.until(t, "the first message", isTurnDone)
		n3.Kill()
		killed := time.Now()
		bound := testLease + testHeartbeat + testSweep
		var got struct {
			Data struct {
				Status               int
				Outcome, EndedReason string
			}
		}
		for {
			c.do(t, n1, "GET", "/v1/calls/"+callID, nil, &got)
			if got.Data.Status == 3 {
				break
			}
			if time.Since(killed) > bound+5*time.Second {
				t.Fatalf("call %s on the killed node is still status %d %v after the kill; want ended node-lost within %v", callID, got.Data.Status, time.Since(killed), bound)
			}
			time.Sleep(100 * time.Millisecond)
		}
		took := time.Since(killed)
		t.Logf("the killed node's call ended %s/%s %v after the kill (bound %v)", got.Data.Outcome, got.Data.EndedReason, took, bound)
		if got.Data.EndedReason != "node-lost" || got.Data.Outcome != "completed" {
			t.Errorf("call %s of the killed node ended %s/%s; want completed/node-lost", callID, got.Data.Outcome, got.Data.EndedReason)
		}
		// The bound, with a second of slack for a loaded machine.
		if took > bound+time.Second {
			t.Errorf("call %s ended node-lost %v after the kill; want within lease + heartbeat + sweep = %v", callID, took, bound)
		}
	})

	t.Run("SIGTERM drains", func(t *testing.T) {
		callID, ws := c.joinWebCall(t, n1, n2, asst.Data.ID)
		ws.until(t, "the first message", isTurnDone)
		n2.Term()
		// Within 30 s: at once on an idle machine; the bound is for a loaded one.
		for deadline := time.Now().Add(30 * time.Second); ; {
			if st := status(t, n2.URL+"/readyz"); st == http.StatusServiceUnavailable {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("GET /readyz on the draining node = %d after 30 s; want 503", st)
			}
			time.Sleep(50 * time.Millisecond)
		}
		// A new connection is refused, the call left queued: another
		// node takes it.
		var created struct {
			CallID  string
			Gateway struct{ URL string }
		}
		c.do(t, n1, "POST", "/v1/calls/initiate", map[string]any{"assistantId": asst.Data.ID, "type": "web"}, &created)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		conn, res, err := websocket.Dial(ctx, onNode(t, created.Gateway.URL, n2), nil)
		cancel()
		if err == nil {
			conn.CloseNow()
			t.Fatal("a websocket upgrade on the draining node was accepted; want 503")
		}
		if res == nil || res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") == "" {
			t.Fatalf("a websocket upgrade on the draining node = %v (response %+v); want 503 with Retry-After", err, res)
		}
		_, other := dial(t, created.CallID, created.Gateway.URL, n1) // session.started: node1 took it
		other.conn.CloseNow()

		// The live call goes on: live control still reaches it.
		c.do(t, n1, "POST", "/v1/calls/"+callID+"/say", map[string]any{"text": "Still here."}, nil)
		evs := ws.until(t, "the said turn", isTurnDone)
		if got := evs[len(evs)-1].(protocol.TurnDone).Text; got != "Still here." {
			t.Errorf("POST /say during the drain: the client heard %q; want %q", got, "Still here.")
		}
		select {
		case <-n2.Exited():
			t.Fatal("the draining node exited while its call was live; want it to wait (drain timeout 30 s)")
		default:
		}
		ws.send(t, protocol.Hangup{})
		evs = ws.until(t, "call.ended", isCallEnded)
		if e := evs[len(evs)-1].(protocol.CallEnded); e.EndedReason != "customer-ended-call" {
			t.Errorf("the draining node's call ended %s; want customer-ended-call (its client hung up)", e.EndedReason)
		}
		select {
		case <-n2.Exited():
		case <-time.After(30 * time.Second):
			t.Fatal("the draining node did not exit within 30 s of its last call's end")
		}
	})
}

// clusterClient drives the nodes' REST API with one key.
type clusterClient struct {
	key string
}

func (c *clusterClient) do(t *testing.T, n *nodetest.Node, method, path string, body, out any) {
	t.Helper()
	if err := nodetest.Do(t.Context(), n.URL, c.key, method, path, body, out); err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, n.Name, err)
	}
}

// joinWebCall creates a web call on creator and joins it through
// joiner's gateway; it reads session.started.
func (c *clusterClient) joinWebCall(t *testing.T, creator, joiner *nodetest.Node, assistantID string) (string, *wsConn) {
	t.Helper()
	var created struct {
		CallID  string
		Gateway struct{ URL string }
	}
	c.do(t, creator, "POST", "/v1/calls/initiate", map[string]any{"assistantId": assistantID, "type": "web"}, &created)
	return dial(t, created.CallID, created.Gateway.URL, joiner)
}

// dial joins call callID through node n's gateway and reads session.started.
func dial(t *testing.T, callID, gatewayURL string, n *nodetest.Node) (string, *wsConn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, onNode(t, gatewayURL, n), nil)
	if err != nil {
		t.Fatalf("joining call %s on %s: %v", callID, n.Name, err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	ws := &wsConn{conn: conn}
	ws.until(t, "session.started", func(ev protocol.ServerEvent) bool { _, ok := ev.(protocol.SessionStarted); return ok })
	return callID, ws
}

// onNode points a gateway URL at node n.
func onNode(t *testing.T, gatewayURL string, n *nodetest.Node) string {
	u, err := url.Parse(gatewayURL)
	if err != nil {
		t.Fatal(err)
	}
	nu, _ := url.Parse(n.URL)
	u.Host = nu.Host
	return u.String()
}

func status(t *testing.T, u string) int {
	req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// wsConn is a web call's client.
type wsConn struct{ conn *websocket.Conn }

// until reads server events (10 s at most) until one satisfies done.
func (w *wsConn) until(t *testing.T, what string, done func(protocol.ServerEvent) bool) []protocol.ServerEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out []protocol.ServerEvent
	for {
		_, data, err := w.conn.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v (events so far: %s)", what, err, eventTypes(out))
		}
		ev, err := protocol.DecodeServer(data)
		if err != nil {
			t.Fatalf("an invalid server event %s: %v", data, err)
		}
		out = append(out, ev)
		if done(ev) {
			return out
		}
	}
}

// closed waits (2 s at most) for the server to close the socket and
// returns its close code.
func (w *wsConn) closed(t *testing.T) websocket.StatusCode {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	for {
		_, data, err := w.conn.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				t.Fatal("the server did not close the websocket within 2 s")
			}
			return websocket.CloseStatus(err)
		}
		t.Logf("after call.ended: %s", data)
	}
}

func (w *wsConn) send(t *testing.T, ev protocol.ClientEvent) {
	t.Helper()
	b, err := protocol.EncodeClient(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.conn.Write(t.Context(), websocket.MessageText, b); err != nil {
		t.Fatalf("writing %s: %v", ev.Type(), err)
	}
}

func isTurnDone(ev protocol.ServerEvent) bool  { _, ok := ev.(protocol.TurnDone); return ok }
func isCallEnded(ev protocol.ServerEvent) bool { _, ok := ev.(protocol.CallEnded); return ok }

func eventTypes(evs []protocol.ServerEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s ", ev.Type())
	}
	return b.String()
}

// TestClusterCampaignKill: three nodes dial a campaign while one of them
// (each node in turn, the leader included) is killed with SIGKILL in the
// middle of the dialing and restarted, ten times: every attempt is dialed,
// none twice, and the calls the killed nodes held end node-lost.
func TestClusterCampaignKill(t *testing.T) {
	bin, dbURL, logDir, probe := clusterSetup(t, "sbcampaign_", "starts and kills real server processes")
	// A short dial lease: an attempt the killed node's dialer held is
	// dialed by another node once its hold ends (a third of the lease,
	// under 2 s; 10 s by default).
	args := []string{"--node-lease", testLease.String(), "--node-heartbeat", testHeartbeat.String(), "--dial-lease", "5s",
		"--sandbox-talk-time", "3s"}
	var mu sync.Mutex
	var running []*nodetest.Node
	start := func(name string, first bool) *nodetest.Node {
		n, err := nodetest.Start(t.Context(), nodetest.Options{Name: name, Bin: bin, DB: dbURL, LogDir: logDir, FirstStart: first, Args: args})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		running = append(running, n)
		mu.Unlock()
		return n
	}
	t.Cleanup(func() {
		for _, n := range running {
			_ = n.Stop()
		}
	})
	nodes := []*nodetest.Node{start("n0", true), nil, nil}
	key := nodes[0].Key
	var wg sync.WaitGroup
	wg.Go(func() { nodes[1] = start("n1", false) })
	wg.Go(func() { nodes[2] = start("n2", false) })
	wg.Wait()
	if t.Failed() {
		return
	}
	const trials, attempts = 10, 20
	camp, err := nodetest.NewCampaign(t.Context(), nodes[0].URL, key, attempts)
	if err != nil {
		t.Fatal(err)
	}
	var killed []string
	var lost, doubled int64
	for i := range trials {
		victim := i % len(nodes)
		asker := nodes[(victim+1)%len(nodes)]
		due := time.Now().Add(time.Second)
		sc, err := camp.Schedule(t.Context(), asker.URL, key, due, nil)
		if err != nil {
			t.Fatalf("trial %d: scheduling: %v", i, err)
		}
		// Kill a node while the attempts are being dialed: from the due
		// time to 600 ms after it, a different moment each trial.
		time.Sleep(time.Until(due.Add(time.Duration(i%4) * 200 * time.Millisecond)))
		killed = append(killed, nodes[victim].ID)
		nodes[victim].Kill()
		nodes[victim] = start(fmt.Sprintf("n%d-%d", victim, i), false)
		var d, l, dd int64
		for deadline := time.Now().Add(45 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			if d, l, dd, err = probe.Dials(t.Context(), sc); err != nil {
				t.Fatal(err)
			}
			if l == 0 || time.Now().After(deadline) {
				break
			}
		}
		t.Logf("trial %d: killed %s at due+%dms: %d dialed, %d lost, %d doubled", i, killed[len(killed)-1], (i%4)*200, d, l, dd)
		lost += l
		doubled += dd
	}
	if lost != 0 || doubled != 0 {
		t.Errorf("over %d trials of %d attempts with a node killed: %d attempts lost, %d doubled; want 0 and 0", trials, attempts, lost, doubled)
	}
	// The calls the killed nodes held end node-lost within the bound.
	bound := testLease + testHeartbeat + testSweep
	time.Sleep(bound + time.Second)
	ids := make([]any, len(killed))
	for i, id := range killed {
		ids[i] = id
	}
	in := "?" + strings.Repeat(", ?", len(ids)-1)
	live, err := probe.Int(t.Context(), `SELECT COUNT(*) FROM calls WHERE status < 3 AND node_id IN (`+in+`)`, ids...)
	if err != nil {
		t.Fatal(err)
	}
	nodeLost, err := probe.Int(t.Context(), `SELECT COUNT(*) FROM calls WHERE ended_reason = 'node-lost' AND node_id IN (`+in+`)`, ids...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the killed nodes' calls: %d ended node-lost, %d still live", nodeLost, live)
	if live != 0 {
		t.Errorf("%d calls of the killed nodes are still live %v after the last kill; want 0 (node-lost)", live, bound+time.Second)
	}
}

// clusterSetup is what a several-node test needs, on PostgreSQL only: the
// server built once, a fresh database (dropped after the test), a log
// directory whose logs are printed when the test fails, and a probe of the
// database. It skips the test in -short runs (why says what it starts) and
// without SWITCHBOARD_TEST_POSTGRES, and makes it parallel.
func clusterSetup(t *testing.T, prefix, why string) (bin, dbURL, logDir string, probe *nodetest.Probe) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	base := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if base == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is not set: several nodes need PostgreSQL")
	}
	t.Parallel()
	bin = buildFailpoints(t)
	dbURL, drop, err := nodetest.CreatePostgres(t.Context(), base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	logDir = t.TempDir()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(nodetest.Logs(logDir, 4000))
		}
	})
	probe, err = nodetest.OpenProbe(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close() })
	return bin, dbURL, logDir, probe
}
