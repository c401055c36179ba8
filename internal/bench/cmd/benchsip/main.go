// Command benchsip measures concurrent SIP calls (internal/sip) on this
// machine and writes them to docs/benchmarks.md ("## bench-sip"): at each
// step it places that many calls over UDP on loopback to one SIPp running
// its built-in uas scenario with -rtp_echo, and on each answered line the
// product's own audio.Pacer writes 20 ms μ-law frames of a speech-like
// signal into Line.Write, as the call runtime does. Over a hold of 20 s it
// measures how late each frame is handed to the line against its real-time
// schedule, how many frames fail to come back through Line.Receive, and
// the process's CPU time per call. Next to each step, the same pacers fed
// the same way write to a line that does nothing: the baseline that
// isolates what SIP and RTP add.
//
//	go run ./internal/bench/cmd/benchsip -out docs/benchmarks.md
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/bench"
	"switchboard/internal/sip"
)

type options struct {
	out                             string
	steps                           []int
	hold, settle, baseline, goalP99 time.Duration
	rate                            int
	rtpPorts, sippPorts             sip.PortRange
	sippBin                         string
	verbose                         bool
	quietWait                       time.Duration
	frames                          [][]byte
	args                            string
	start                           time.Time // for the report: when the run began
	load                            string    // and the load average then
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchsip:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchsip:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchsip", flag.ContinueOnError)
	var steps, rtp, sippPorts string
	fs.StringVar(&o.out, "out", "", "markdown file whose \"## bench-sip\" section is written (empty: print only)")
	fs.StringVar(&steps, "steps", "25,50,100,200,300,400", "concurrent call counts, in order (stops after the first step that fails)")
	fs.DurationVar(&o.hold, "hold", 20*time.Second, "measured hold per step, every call up")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "wait after the last answer before measuring")
	fs.DurationVar(&o.baseline, "baseline", 10*time.Second, "measured time of the no-SIP baseline per step")
	fs.DurationVar(&o.goalP99, "goal", 10*time.Millisecond, "the p99 frame lateness a step must stay under")
	fs.IntVar(&o.rate, "rate", 50, "calls placed per second")
	fs.StringVar(&rtp, "rtp-ports", "42000-43999", "the provider's RTP ports (2 per call)")
	fs.StringVar(&sippPorts, "sipp-ports", "41000-41999", "where SIPp's SIP and media ports are picked")
	fs.StringVar(&o.sippBin, "sipp", "sipp", "the SIPp binary (Debian sip-tester)")
	fs.DurationVar(&o.quietWait, "quiet-wait", 20*time.Second, "how long to wait for a quiet machine before each run")
	fs.BoolVar(&o.verbose, "v", false, "log the provider, and SIPp's screen when it fails")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.args = strings.Join(args, " ")
	for _, f := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("-steps: want counts such as 25,50,100, got %q", steps)
		}
		o.steps = append(o.steps, n)
	}
	var err error
	if o.rtpPorts, err = sip.ParsePortRange(rtp); err != nil {
		return o, fmt.Errorf("-rtp-ports: %w", err)
	}
	if o.sippPorts, err = sip.ParsePortRange(sippPorts); err != nil {
		return o, fmt.Errorf("-sipp-ports: %w", err)
	}
	if need := 2 * slicesMax(o.steps); o.rtpPorts.Max-o.rtpPorts.Min+1 < need+16 {
		return o, fmt.Errorf("-rtp-ports: %d calls need at least %d ports, got %s", need/2, need+16, rtp)
	}
	if o.rate < 1 || o.hold <= 0 || o.baseline <= 0 {
		return o, fmt.Errorf("-rate, -hold and -baseline must be positive")
	}
	o.frames = bench.Speech(3)
	o.start, o.load = time.Now().UTC(), bench.LoadAvg()
	return o, nil
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// stepResult is one step: the calls and the baseline, and the p99 of a
// first run that failed the goal (0 when the first run passed).
type stepResult struct {
	sip, bare result
	firstP99  time.Duration
	busy      bool // the machine was not quiet before the run
}

func (s stepResult) ok(goal time.Duration) bool {
	return s.sip.sustained == s.sip.calls && s.sip.p99 < goal
}

func run(o options) error {
	var steps []stepResult
	for _, n := range o.steps {
		s, err := runStep(o, n)
		if err != nil {
			return err
		}
		if !s.ok(o.goalP99) {
			fmt.Printf("  step %d failed the goal once: running it again\n", n)
			again, err := runStep(o, n)
			if err != nil {
				return err
			}
			again.firstP99 = s.sip.p99
			s = again
		}
		steps = append(steps, s)
		if !s.ok(o.goalP99) {
			fmt.Printf("  step %d failed the goal twice: stopping\n", n)
			break
		}
	}
	return runWrite(o, steps)
}

// runWrite prints the report and writes it to o.out, if set.
func runWrite(o options, steps []stepResult) error {
	section := report(o, steps)
	fmt.Print(section)
	if o.out == "" {
		return nil
	}
	return bench.WriteSection(o.out, "## bench-sip", section)
}

// runStep waits for a quiet machine, then runs n calls and the baseline.
func runStep(o options, n int) (stepResult, error) {
	var s stepResult
	s.busy = !bench.WaitQuiet(o.quietWait)
	fmt.Printf("step %d calls: placing at %d/s, holding %v\n", n, o.rate, o.hold)
	r, err := runSIP(o, n)
	if err != nil {
		return s, fmt.Errorf("step %d: %w", n, err)
	}
	fmt.Printf("  answered %d, sustained %d, lateness p50 %s p99 %s, written %d echoed %d lost %d fill %d, CPU/call %v/s, SIPp %s, others %s, failures %v\n",
		r.answered, r.sustained, bench.Ms(r.p50), bench.Ms(r.p99), r.written, r.echoed, r.lost(), r.fill, r.perCall(), sippSummary(r), bench.Pct(r.cpu.Share(r.cpu.Others())), r.failed)
	s.busy = !bench.WaitQuiet(o.quietWait/2) || s.busy
	b := runBare(o, n)
	fmt.Printf("  baseline: p50 %s p99 %s, CPU/call %v/s, others %s\n", bench.Ms(b.p50), bench.Ms(b.p99), b.perCall(), bench.Pct(b.cpu.Share(b.cpu.Others())))
	s.sip, s.bare = r, b
	return s, nil
}

func sippSummary(r result) string {
	s := fmt.Sprintf("%d ok / %d failed", r.sippOK, r.sippFailed)
	if r.sippErr != nil {
		s += " (" + r.sippErr.Error() + ")"
	}
	return s
}

func report(o options, steps []stepResult) string {
	var b strings.Builder
	cmd := "go run ./internal/bench/cmd/benchsip"
	if o.args != "" {
		cmd += " " + o.args
	}
	fmt.Fprintf(&b, `## bench-sip

Concurrent SIP calls (`+"`internal/sip`"+`) on one machine. At each step the bench
places that many calls (UDP, %d a second) from one `+"`sip.Provider`"+` to one SIPp on
loopback running its built-in `+"`uas`"+` scenario with `+"`-rtp_echo`"+` (PCMU; it
sends every RTP packet back to where it came from). On each answered line the
product's own `+"`audio.Pacer`"+` (what the call runtime uses) writes 20 ms μ-law
frames of a speech-like signal into `+"`Line.Write`"+`, fed from a feeder that keeps
every pacer %d–%d frames ahead, as a speech synthesizer would; every line's
`+"`Receive`"+` counts what comes back. After the last answer and %v of settling,
the calls are held for %v:

- **sustained**: calls answered and still up at the end of the hold;
- **frame lateness**: how late each outbound frame is handed to `+"`Line.Write`"+`
  against its real-time 20 ms schedule (the pacer's own schedule, measured at
  the line; 25 µs buckets), over the hold;
- **lost**: frames written over the calls' lives that did not come back through
  `+"`Line.Receive`"+` (the round trip: our socket, SIPp's echo, our reader and its
  reorder buffer), 0.5 s after the pacers stopped;
- **line fill**: silence frames the line's own clock sent during the hold
  because the pacer was more than a frame behind (echoed back and told apart
  from the signal);
- **CPU per call**: this process's CPU time over the hold (getrusage) ÷ calls ÷
  seconds; SIPp's own CPU (from /proc) is listed apart.

**Conditions users don't have.** The far end here is SIPp on the same machine:
idle apart from echoing, on loopback (no network delay, loss or jitter), with
no NAT, no SRTP, no speech engines and no conversation. The echo peer also
takes its share of the same 2 CPUs (the SIPp column). So the figures are an
upper bound on what the SIP and RTP layer itself sustains, not calls a node
with real callers and real engines would carry. The **baseline** next to each
step is the same number of the same pacers, fed the same way, writing to a
line that does nothing (no SIP, no RTP, no socket), over %v: what timers
and the Go scheduler alone give at that count; the ratio isolates the SIP/RTP
cost.

- **Date:** %s
- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; 1-minute load average %s at the start; %s
- **Command:** `+"`make bench-sip`"+` (`+"`%s`"+`)

`, o.rate, bench.LowWater, bench.HighWater, o.settle, o.hold, o.baseline,
		o.start.Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, o.load, bench.Niceness("bench and SIPp"), cmd)

	b.WriteString("| calls | answered | **sustained** | frame lateness p50 | **p99** | baseline p50 | baseline p99 | p99 ÷ baseline | `Pacer.Jitter` p99 (median / max of calls) | frames written | lost | line fill | **CPU per call** | baseline CPU per call | process CPU (of 2) | SIPp CPU | other processes (calls / baseline) | SIPp: calls ok / failed |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	best := 0
	for _, s := range steps {
		r, z := s.sip, s.bare
		mark := ""
		if s.ok(o.goalP99) {
			best = r.calls
		} else {
			mark = " ✗"
		}
		if s.firstP99 > 0 {
			mark += fmt.Sprintf(" (second run; the first: %s)", bench.Ms(s.firstP99))
		}
		if s.busy {
			mark += " (busy machine)"
		}
		ratio := "–"
		if z.p99 > 0 {
			ratio = fmt.Sprintf("%.1f×", float64(r.p99)/float64(z.p99))
		}
		lostPct := 0.0
		if r.written > 0 {
			lostPct = 100 * float64(r.lost()) / float64(r.written)
		}
		fmt.Fprintf(&b, "| %d | %d | **%d** | %s | **%s**%s | %s | %s | %s | %s / %s | %d | %d (%.3f%%) | %d | **%s** | %s | %s | %s | %s / %s | %s |\n",
			r.calls, r.answered, r.sustained, bench.Ms(r.p50), bench.Ms(r.p99), mark, bench.Ms(z.p50), bench.Ms(z.p99), ratio,
			bench.Ms(r.pacers.JitterMed), bench.Ms(r.pacers.JitterMax), r.written, r.lost(), lostPct, r.fill,
			bench.PerSec(r.perCall()), bench.PerSec(z.perCall()),
			bench.Pct(r.cpu.Share(r.cpu.Self)), bench.Pct(r.cpu.Share(r.cpu.Peer)), bench.Pct(r.cpu.Share(r.cpu.Others())), bench.Pct(z.cpu.Share(z.cpu.Others())),
			sippSummary(r))
	}
	fmt.Fprintf(&b, "\nGoal (issue 9): at least 200 concurrent SIP calls with p99 outbound frame lateness under %v on the 2 cores. ", o.goalP99)
	if best > 0 {
		fmt.Fprintf(&b, "Largest step with every call sustained and p99 under %v: **%d calls** (", o.goalP99, best)
		if best >= 200 {
			b.WriteString("met).\n")
		} else {
			b.WriteString("not met).\n")
		}
	} else {
		b.WriteString("No step met it.\n")
	}
	var failures []string
	for _, s := range steps {
		keys := make([]string, 0, len(s.sip.failed))
		for k := range s.sip.failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			failures = append(failures, fmt.Sprintf("%d calls: %s × %d", s.sip.calls, k, s.sip.failed[k]))
		}
		if s.sip.pacers.Resyncs > 0 || s.sip.pacers.Dropped > 0 || s.sip.rtpDropped > 0 {
			failures = append(failures, fmt.Sprintf("%d calls: pacer resyncs %d, pacer frames dropped %d, received RTP dropped (runtime too slow) %d",
				s.sip.calls, s.sip.pacers.Resyncs, s.sip.pacers.Dropped, s.sip.rtpDropped))
		}
	}
	if len(failures) > 0 {
		b.WriteString("\nFailures and drops: " + strings.Join(failures, "; ") + ".\n")
	}
	fmt.Fprintf(&b, "\nA step fails (✗) when a call was lost before the end of the hold or its p99 reached the goal, in two runs; stepping stops there. Before each run the bench waits (up to %v) for 2 s in which other processes and the host take less than 15%% of the CPUs, and marks runs that started on a busy machine (this machine is shared). `Pacer.Jitter` is the pacer's own histogram over each call's whole life (ramp included). \"Process CPU\", \"SIPp CPU\" and \"other processes\" are shares of the machine's 2 CPUs over the hold, from /proc/stat.\n", o.quietWait)
	return b.String()
}
