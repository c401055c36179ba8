package siptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"
)

// SIPpConfig says which SIPp to start.
type SIPpConfig struct {
	// Scenario is one of the names in Scenarios (UASBusy, UAC, …).
	Scenario string
	// File, if set, is a scenario file of the test's own, run instead of
	// Scenario (-sf); its keys are not checked and a pcap scenario must
	// call RequireRawSockets itself.
	File string
	// Remote is where a UAC scenario sends its INVITE, "127.0.0.1:5060".
	Remote string
	// Service is the user part a UAC dials (-s): the number. Default
	// "service".
	Service string
	// Keys are the scenario's -key variables, over its defaults (see each
	// scenario's comment). "audio" defaults to silence, played until the
	// call ends.
	Keys map[string]string
	// RTPEcho sends every RTP packet received on the media port back to
	// its sender (-rtp_echo).
	RTPEcho bool
	// Calls is how many calls SIPp handles before it exits (-m). Default 1.
	Calls int
	// Timeout bounds the whole run (-timeout): SIPp gives up and exits
	// then, and is killed 10 s later if it has not. Default 30 s.
	Timeout time.Duration
	// Transport is "udp" (default) or "tcp" (-t u1 / t1).
	Transport string
	// Args are more SIPp arguments, appended last.
	Args []string
}

// SIPp is a running SIPp, listening on 127.0.0.1:Port (UDP, or TCP) with
// its RTP on Media.First (SIPp binds First and First+2). It is killed at
// the test's cleanup if still running.
type SIPp struct {
	Port  int
	Media PortRange
	// Dir is its working directory: its logs, and pcap/ holding links to
	// PcapDir's files (the built-in uac_pcap opens pcap/…).
	Dir string

	t     testing.TB
	name  string
	calls int
	p     *process

	once   sync.Once
	result SIPpResult
}

// SIPpResult is how a SIPp run ended.
type SIPpResult struct {
	// ExitCode is SIPp's: 0 when every call succeeded, 1 when at least
	// one failed, 97 when stopped by its -timeout or a stop_now, 99 when
	// it handled no call, 255 (-1) on a fatal error such as a bad
	// scenario, 254 (-2) when it could not bind its ports; -1 here too
	// when a signal killed it.
	ExitCode int
	// Successful and Failed count calls, from SIPp's final statistics
	// screen (-1 when it printed none).
	Successful, Failed int
	// Stdout is the tail of SIPp's output: its final screens.
	Stdout string
	// Stderr is SIPp's standard error: fatal errors and warnings.
	Stderr string
	// Errors is the -trace_err log: unexpected messages, failed checks,
	// warnings.
	Errors string
	// Messages is the -trace_msg log, every SIP message sent and
	// received (its last megabyte): for asserting on headers such as a
	// REFER's Refer-To.
	Messages string
	// Log is the -trace_logs log, what the scenario's <log> actions wrote.
	Log string
}

// Succeeded reports whether SIPp handled calls calls, all successfully.
func (r SIPpResult) Succeeded(calls int) bool {
	return r.ExitCode == 0 && r.Failed == 0 && r.Successful == calls
}

// String summarizes the result in one line.
func (r SIPpResult) String() string {
	return fmt.Sprintf("exit %d, %d successful, %d failed", r.ExitCode, r.Successful, r.Failed)
}

// StartSIPp starts SIPp for cfg on free ports of 127.0.0.1 and returns
// once it listens. A missing sipp skips or fails the test (Require), as
// does a pcap scenario without raw sockets (RequireRawSockets); a bad
// config fails it.
func StartSIPp(t testing.TB, cfg SIPpConfig) *SIPp {
	t.Helper()
	// A bad config fails the test even where the peers are missing.
	sc, scenarioArgs, keys := sippScenario(t, cfg)
	transport, proto := "u1", "udp"
	switch cfg.Transport {
	case "", "udp":
	case "tcp":
		transport, proto = "t1", "tcp"
	default:
		t.Fatalf("siptest.StartSIPp: Transport %q, want udp or tcp", cfg.Transport)
	}
	Require(t)
	if sc.pcap {
		RequireRawSockets(t)
	}
	if cfg.Calls == 0 {
		cfg.Calls = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	s := &SIPp{
		Port:  Port(t),
		Media: Ports(t, 4),
		Dir:   t.TempDir(),
		t:     t,
		name:  scenarioArgs[len(scenarioArgs)-1],
		calls: cfg.Calls,
	}
	linkPcaps(t, s.Dir)
	if v, ok := keys["audio"]; ok && v == "" {
		silence := filepath.Join(s.Dir, "silence.ulaw")
		if err := writeSilenceUlaw(silence, time.Second); err != nil {
			t.Fatalf("siptest.StartSIPp: %v", err)
		}
		keys["audio"] = silence + ",-1,0"
	}

	var args []string
	if cfg.Remote != "" {
		args = append(args, cfg.Remote)
	}
	args = append(args, scenarioArgs...)
	args = append(args,
		"-i", "127.0.0.1", "-p", itoa(s.Port), "-mp", itoa(s.Media.First),
		"-t", transport,
		"-m", itoa(cfg.Calls),
		"-timeout", fmt.Sprintf("%ds", int((cfg.Timeout+time.Second-1)/time.Second)),
		"-nostdin",
		// Answer OPTIONS, INFO, NOTIFY and UPDATE the scenario does not
		// expect with 200 rather than failing the call.
		"-aa",
		"-trace_err", "-error_file", filepath.Join(s.Dir, "errors.log"),
		"-trace_msg", "-message_file", filepath.Join(s.Dir, "messages.log"),
		"-trace_logs", "-log_file", filepath.Join(s.Dir, "log.log"),
	)
	if cfg.Service != "" {
		args = append(args, "-s", cfg.Service)
	}
	if cfg.RTPEcho {
		args = append(args, "-rtp_echo")
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "-key", k, keys[k])
	}
	args = append(args, cfg.Args...)

	s.p = startProcess(t, s.Dir, cfg.Timeout+10*time.Second, nil, "sipp", args...)
	// Ready when its SIP port is bound; SIPp binds its media ports first.
	deadline := time.Now().Add(10 * time.Second)
	for !bound(proto, s.Port) {
		if s.p.exited() || time.Now().After(deadline) {
			s.p.stop()
			t.Fatalf("siptest: SIPp %s did not start listening on %s port %d: %s\n%s",
				s.name, proto, s.Port, s.Wait(), s.p.describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s
}

// sippScenario checks cfg's scenario and returns it, its -sn/-sf
// arguments and its -key values (defaults, overridden by cfg.Keys).
func sippScenario(t testing.TB, cfg SIPpConfig) (scenario, []string, map[string]string) {
	t.Helper()
	keys := map[string]string{}
	if cfg.File != "" {
		for k, v := range cfg.Keys {
			keys[k] = v
		}
		return scenario{uac: cfg.Remote != ""}, []string{"-sf", cfg.File}, keys
	}
	sc, ok := scenarios[cfg.Scenario]
	if !ok {
		t.Fatalf("siptest.StartSIPp: Scenario %q, want one of %v", cfg.Scenario, Scenarios())
	}
	for k, v := range sc.keys {
		keys[k] = v
	}
	for k, v := range cfg.Keys {
		if _, ok := sc.keys[k]; !ok {
			t.Fatalf("siptest.StartSIPp: scenario %s has no key %q (its keys: %v)", cfg.Scenario, k, sc.keys)
		}
		keys[k] = v
	}
	for k, v := range keys {
		if v == "" && k != "audio" {
			t.Fatalf("siptest.StartSIPp: scenario %s needs the key %q", cfg.Scenario, k)
		}
	}
	if sc.uac && cfg.Remote == "" {
		t.Fatalf("siptest.StartSIPp: scenario %s places a call: set Remote", cfg.Scenario)
	}
	if sc.builtin {
		return sc, []string{"-sn", cfg.Scenario}, keys
	}
	return sc, []string{"-sf", ScenarioFile(t, cfg.Scenario)}, keys
}

// linkPcaps makes dir/pcap hold links to PcapDir's pcap files.
func linkPcaps(t testing.TB, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(PcapDir, "*.pcap"))
	if len(files) == 0 {
		return
	}
	if err := os.Mkdir(filepath.Join(dir, "pcap"), 0o755); err != nil {
		t.Fatalf("siptest: %v", err)
	}
	for _, f := range files {
		if err := os.Symlink(f, filepath.Join(dir, "pcap", filepath.Base(f))); err != nil {
			t.Fatalf("siptest: %v", err)
		}
	}
}

// Addr returns SIPp's SIP address, "127.0.0.1:port".
func (s *SIPp) Addr() string { return "127.0.0.1:" + itoa(s.Port) }

// URI returns the SIP URI of user at SIPp: what a caller dials.
func (s *SIPp) URI(user string) string { return "sip:" + user + "@" + s.Addr() }

// Wait waits for SIPp to exit (its Timeout bounds that) and returns how it
// went. When not every call succeeded it logs SIPp's command line, output
// and logs with t.Log, so a failing test shows what SIPp saw.
func (s *SIPp) Wait() SIPpResult {
	s.once.Do(func() {
		code := s.p.wait()
		out := s.p.stdout.String()
		s.result = SIPpResult{
			ExitCode:   code,
			Successful: lastCount(out, "Successful call"),
			Failed:     lastCount(out, "Failed call"),
			Stdout:     out,
			Stderr:     s.p.stderr.String(),
			Errors:     readTail(filepath.Join(s.Dir, "errors.log"), outputLimit),
			Messages:   readTail(filepath.Join(s.Dir, "messages.log"), 1<<20),
			Log:        readTail(filepath.Join(s.Dir, "log.log"), outputLimit),
		}
		if !s.result.Succeeded(s.calls) {
			s.t.Logf("siptest: SIPp %s: %s\n%serrors.log:\n%s\nmessages.log (tail):\n%s",
				s.name, s.result, s.p.describe(), s.result.Errors, tail(s.result.Messages, 8<<10))
		}
	})
	return s.result
}

// WaitOK waits like Wait and fails the test unless SIPp handled its
// calls all successfully.
func (s *SIPp) WaitOK() SIPpResult {
	r := s.Wait()
	if !r.Succeeded(s.calls) {
		s.t.Errorf("SIPp %s: %s; want %d successful", s.name, r, s.calls)
	}
	return r
}

// Stop ends SIPp now (SIGTERM, then SIGKILL) if it is still running, and
// returns once it has exited. The test's cleanup does the same; a test
// that checks for leaked goroutines before its cleanups calls Wait or
// Stop first.
func (s *SIPp) Stop() { s.p.stop() }

// lastCount reads the cumulative column of the last statistics line named
// label ("  Successful call | 0 | 1"), or -1.
func lastCount(screen, label string) int {
	re := regexp.MustCompile(regexp.QuoteMeta(label) + `\s*\|\s*\d+\s*\|\s*(\d+)`)
	m := re.FindAllStringSubmatch(screen, -1)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[len(m)-1][1])
	if err != nil {
		return -1
	}
	return n
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// contextFor returns a context for a helper's own short command, ended by
// the test's end or after d.
func contextFor(t testing.TB, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}
