package app

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/sip"
	"switchboard/internal/sip/siptest"
)

// kamailioConfig is the proxy configuration docs/telephony.md documents
// ("Several nodes behind one SIP address"); the test runs that very file.
const kamailioConfig = "../../docs/kamailio/kamailio.cfg"

// kamailioBin finds a Kamailio program: on the PATH, else in /usr/sbin
// where Debian puts it (not on every user's PATH).
func kamailioBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return exec.LookPath(filepath.Join("/usr/sbin", name))
}

// requireKamailio stops a test that needs Debian's kamailio with its
// dispatcher module when it is missing: a skip, or a failure when
// SWITCHBOARD_REQUIRE_SIP=1 (make test installs it:
// scripts/ensure-deps.sh sip). It returns the paths of kamailio and kamcmd.
func requireKamailio(t *testing.T) (kamailioPath, kamcmdPath string) {
	t.Helper()
	siptest.Require(t)
	var missing []string
	paths := map[string]string{}
	for _, prog := range []string{"kamailio", "kamcmd"} {
		p, err := kamailioBin(prog)
		if err != nil {
			missing = append(missing, prog)
		}
		paths[prog] = p
	}
	if len(missing) == 0 {
		// The configuration check loads every module it names (dispatcher).
		if out, err := exec.Command(paths["kamailio"], "-c", "-f", kamailioConfig, "-A", `DISPATCHER_LIST="/dev/null"`,
			"-A", "LISTEN=udp:127.0.0.1:5060").CombinedOutput(); err != nil {
			missing = append(missing, fmt.Sprintf("a kamailio that accepts %s (%v: %s)", kamailioConfig, err, lastLines(string(out), 5)))
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("kamailio test: %v not installed (./scripts/ensure-deps.sh sip installs Debian's kamailio)", missing)
		if os.Getenv(siptest.RequireEnv) == "1" {
			t.Fatalf("%s and %s=1", msg, siptest.RequireEnv)
		}
		t.Skip(msg)
	}
	return paths["kamailio"], paths["kamcmd"]
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// kamailio is a running Kamailio on loopback in front of a dispatcher
// list of nodes.
type kamailio struct {
	t      *testing.T
	addr   string // 127.0.0.1:port, UDP
	ctl    string // kamcmd's socket
	kamcmd string
	cmd    *exec.Cmd
	log    string
}

// startKamailio runs docs/kamailio/kamailio.cfg on a port of its own with
// nodes (host:port each) as its dispatcher list, probing them every second
// and giving a silent node a second, and stops it at the test's end.
func startKamailio(t *testing.T, nodes ...string) *kamailio {
	t.Helper()
	bin, kamcmd := requireKamailio(t)
	dir := t.TempDir()
	var list strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&list, "1 sip:%s\n", n)
	}
	if err := os.WriteFile(filepath.Join(dir, "dispatcher.list"), []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &kamailio{t: t, addr: fmt.Sprintf("127.0.0.1:%d", siptest.Port(t)), ctl: "unix:" + filepath.Join(dir, "ctl"),
		kamcmd: kamcmd, log: filepath.Join(dir, "kamailio.log")}
	out, err := os.Create(k.log)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	k.cmd = exec.Command(bin, "-f", kamailioConfig, "-DD", "-E", "-m", "32", "-M", "4",
		"-Y", dir, "-P", filepath.Join(dir, "kamailio.pid"), "-w", dir,
		"-A", "LISTEN=udp:"+k.addr,
		"-A", fmt.Sprintf("DISPATCHER_LIST=%q", filepath.Join(dir, "dispatcher.list")),
		"-A", fmt.Sprintf("CTL_SOCKET=%q", k.ctl),
		"-A", "FR_TIMER=1000", "-A", "DS_PING_INTERVAL=1", "-A", "DS_PROBE_THRESHOLD=1")
	k.cmd.Stdout, k.cmd.Stderr = out, out
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("starting kamailio: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- k.cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		if t.Failed() {
			t.Logf("kamailio's log:\n%s", k.tail(60))
		}
	})
	// Ready when its control socket answers (it listens on SIP first).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := k.nodes(); err == nil {
			return k
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("kamailio exited at start (%v):\n%s", err, k.tail(30))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("kamailio did not answer on %s within 10s:\n%s", k.ctl, k.tail(30))
		}
	}
}

func (k *kamailio) tail(n int) string {
	b, _ := os.ReadFile(k.log)
	return lastLines(string(b), n)
}

var dsEntry = regexp.MustCompile(`URI: sip:(\S+)\s+FLAGS: (\S+)`)

// nodes returns the dispatcher's flags of each node (host:port → flags:
// A active, I inactive, P probing, X not yet probed).
func (k *kamailio) nodes() (map[string]string, error) {
	out, err := exec.Command(k.kamcmd, "-s", k.ctl, "dispatcher.list").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("kamcmd dispatcher.list: %v: %s", err, out)
	}
	m := map[string]string{}
	for _, e := range dsEntry.FindAllStringSubmatch(string(out), -1) {
		m[e[1]] = e[2]
	}
	if len(m) == 0 {
		return nil, errors.New("kamcmd dispatcher.list: no nodes")
	}
	return m, nil
}

// waitNode waits until the dispatcher's flags of node start with want
// ("A" up, "I" down).
func (k *kamailio) waitNode(node, want string, within time.Duration) {
	k.t.Helper()
	deadline := time.Now().Add(within)
	var last map[string]string
	for time.Now().Before(deadline) {
		m, err := k.nodes()
		if err == nil && strings.HasPrefix(m[node], want) {
			return
		}
		last = m
		time.Sleep(100 * time.Millisecond)
	}
	k.t.Fatalf("kamailio: node %s not %q within %v: %v", node, want, within, last)
}

// routedUAC is a SIPp caller that honours Record-Route: it calls
// [service] through Remote (the proxy), sends its ACK and, after hold_ms,
// its BYE to the answer's Contact through the recorded route, as a phone
// does ([next_url], [routes]).
const routedUAC = `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="routed uac">
  <send retrans="500">
    <![CDATA[
      INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: sipp <sip:+16175550123@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>
      Call-ID: [call_id]
      CSeq: 1 INVITE
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Type: application/sdp
      Content-Length: [len]

      v=0
      o=user1 53655765 2353687637 IN IP[local_ip_type] [local_ip]
      s=-
      c=IN IP[media_ip_type] [media_ip]
      t=0 0
      m=audio [media_port] RTP/AVP 0
      a=rtpmap:0 PCMU/8000
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
  <recv response="200" rrs="true"/>
  <send>
    <![CDATA[
      ACK [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: sipp <sip:+16175550123@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 1 ACK
      [routes]
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <pause milliseconds="1500"/>
  <send retrans="500">
    <![CDATA[
      BYE [next_url] SIP/2.0
      Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
      From: sipp <sip:+16175550123@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
      To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
      Call-ID: [call_id]
      CSeq: 2 BYE
      [routes]
      Contact: <sip:sipp@[local_ip]:[local_port]>
      Max-Forwards: 70
      Content-Length: 0
    ]]>
  </send>
  <recv response="200" crlf="true"/>
</scenario>
`

var contactPort = regexp.MustCompile(`(?m)^Contact:\s*<?sip:[^@>]*@?127\.0\.0\.1:(\d+)`)

// callThrough places one call with SIPp to number through the proxy at
// addr and returns the SIP port of the node that answered (the 200's
// Contact) and how long the call took.
func callThrough(t *testing.T, addr, number string) (string, time.Duration) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "routed_uac.xml")
	if err := os.WriteFile(file, []byte(routedUAC), 0o644); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	// Kamailio's UDP workers relay a node's 180 and 200, sent a moment
	// apart, in parallel: the 180 may come after the 200, which a phone
	// ignores. SIPp would abort the call on it (abortunexp): not here.
	caller := siptest.StartSIPp(t, siptest.SIPpConfig{File: file, Remote: addr, Service: number, Timeout: 20 * time.Second,
		Args: []string{"-default_behaviors", "all,-abortunexp"}})
	res := caller.Wait()
	took := time.Since(begin)
	if !res.Succeeded(1) {
		t.Fatalf("call through the proxy: %s\n%s\n%s", res, res.Errors, lastLines(res.Messages, 80))
	}
	// The answer's Contact is the node's own address (its --sip-public-ip
	// and port): the proxy record-routes but leaves it alone.
	i := strings.Index(res.Messages, "SIP/2.0 200 OK")
	if i < 0 {
		t.Fatalf("no 200 OK in SIPp's messages:\n%s", lastLines(res.Messages, 40))
	}
	m := contactPort.FindStringSubmatch(res.Messages[i:])
	if m == nil {
		t.Fatalf("no Contact in the 200 OK:\n%s", res.Messages[i:min(len(res.Messages), i+1500)])
	}
	if !strings.Contains(res.Messages[i:], "Record-Route: <sip:"+addr) {
		t.Errorf("the 200 OK does not carry the proxy's Record-Route (%s):\n%s", addr, res.Messages[i:min(len(res.Messages), i+1500)])
	}
	return m[1], took
}

// TestSIPBehindKamailio: two nodes on one PostgreSQL behind Kamailio with
// the dispatcher configuration docs/telephony.md documents. A caller that
// knows only the proxy's address reaches a node and is answered, the rest
// of the call (ACK, BYE) following the recorded route through the proxy;
// two calls go to the two nodes (round robin). With one node stopped,
// calls still go through, to the other: the proxy fails over from the
// silent node within its timeout and probes take it out.
func TestSIPBehindKamailio(t *testing.T) {
	t.Parallel()
	requireKamailio(t)
	requireLocal(t) // an answered SIP call runs the voice pipeline
	base := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if base == "" {
		t.Skip("several nodes share one PostgreSQL: set SWITCHBOARD_TEST_POSTGRES (./scripts/ensure-postgres.sh)")
	}
	dbURL := freshPostgres(t, base)
	// Node A creates the connection (inbound from the proxy's address:
	// every INVITE a node sees comes from it), the number and its
	// assistant; node B shares them through the database.
	a := startSIP(t, dbURL, "127.0.0.1:5099", []string{"127.0.0.1/32"}, true)
	cfg := testConfig(dbURL)
	portB, rtpB := siptest.Port(t), siptest.Ports(t, 64)
	cfg.SIP = &sip.Config{ListenAddr: "127.0.0.1:" + itoa(portB), PublicIP: "127.0.0.1",
		RTPPorts: sip.PortRange{Min: rtpB.First, Max: rtpB.Last}, RingTimeout: 5 * time.Second, MediaTimeout: 5 * time.Second}
	b := start(t, cfg)
	nodeA, nodeB := a.sipAddr, cfg.SIP.ListenAddr
	portA := strings.TrimPrefix(nodeA, "127.0.0.1:")

	k := startKamailio(t, nodeA, nodeB)
	k.waitNode(nodeA, "A", 10*time.Second)
	k.waitNode(nodeB, "A", 10*time.Second)

	answered := map[string]int{}
	for range 2 {
		port, took := callThrough(t, k.addr, a.number)
		t.Logf("call through %s answered by the node on port %s in %v", k.addr, port, took)
		answered[port]++
	}
	if answered[portA] != 1 || answered[itoa(portB)] != 1 {
		t.Errorf("two calls answered by nodes %v, want one each on %s and %d (round robin)", answered, portA, portB)
	}

	// Node B goes away. Its calls go to A: the first one the proxy sends
	// to B waits FR_TIMER (1 s here) for an answer and fails over; probes
	// mark B down within a second or two, after which calls go to A at once.
	b.stop()
	for i := range 3 {
		port, took := callThrough(t, k.addr, a.number)
		t.Logf("with node B stopped: call %d answered by the node on port %s in %v", i+1, port, took)
		if port != portA {
			t.Errorf("with node B stopped, call %d answered on port %s, want node A's %s", i+1, port, portA)
		}
	}
	k.waitNode(nodeB, "I", 10*time.Second)

	// Every call is stored once, inbound, ended by the caller.
	calls := a.must(200, "GET", "/v1/calls?direction=inbound", nil).list()
	if len(calls) != 5 {
		t.Fatalf("%d inbound calls stored, want 5", len(calls))
	}
	for _, c := range calls {
		got := a.waitCall(a.key, c["id"].(string), 15*time.Second, func(c map[string]any) bool { return c["status"].(float64) == 3 })
		if got["to"] != a.number || got["outcome"] != "completed" || got["endedReason"] != "customer-ended-call" {
			t.Errorf("call %s: to %v, outcome %v, endedReason %v; want %s, completed, customer-ended-call",
				got["id"], got["to"], got["outcome"], got["endedReason"], a.number)
		}
	}
}
