// Command benchtwilio measures concurrent Twilio calls (internal/twilio)
// on this machine and writes them to docs/benchmarks.md ("## bench-twilio"):
// at each step it places that many calls through the real Provider to the
// fake Twilio (internal/twilio/twiliotest, REST and Media Streams, run in
// a child process) on loopback; on each answered line the product's own
// audio.Pacer writes 20 ms μ-law frames of a speech-like signal into
// Line.Write, the line marking each frame with the turn as the call runtime
// has it do (AudioStart). Over a hold of 10 s it measures how late each
// frame is handed to the line against its real-time schedule, what the
// fake received, played and echoed back as marks, and the CPU time per
// call of the bench process and of the fake apart. Next to each step, the
// same pacers fed the same way write to a line that does nothing: the
// baseline that isolates what Twilio's path adds. It models bench-sip
// (internal/bench/cmd/benchsip).
//
//	go run ./internal/bench/cmd/benchtwilio -out docs/benchmarks.md
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
)

type options struct {
	out                             string
	steps                           []int
	hold, settle, baseline, goalP99 time.Duration
	rate                            int
	verbose                         bool
	quietWait                       time.Duration
	frames                          [][]byte
	args                            string
	start                           time.Time // for the report: when the run began
	load                            string    // and the load average then
}

func main() {
	if os.Getenv(fakeEnv) == "1" {
		if err := runFakeChild(); err != nil {
			fmt.Fprintln(os.Stderr, "benchtwilio fake:", err)
			os.Exit(1)
		}
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtwilio:", err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchtwilio:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("benchtwilio", flag.ContinueOnError)
	var steps string
	fs.StringVar(&o.out, "out", "", "markdown file whose \"## bench-twilio\" section is written (empty: print only)")
	fs.StringVar(&steps, "steps", "25,50,100,200,300,400", "concurrent call counts, in order (stops after the first step that fails)")
	fs.DurationVar(&o.hold, "hold", 10*time.Second, "measured hold per step, every call up")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "wait after the last answer before measuring")
	fs.DurationVar(&o.baseline, "baseline", 10*time.Second, "measured time of the no-Twilio baseline per step")
	fs.DurationVar(&o.goalP99, "goal", 10*time.Millisecond, "the p99 frame lateness a step must stay under")
	fs.IntVar(&o.rate, "rate", 50, "calls placed per second")
	fs.DurationVar(&o.quietWait, "quiet-wait", 20*time.Second, "how long to wait for a quiet machine before each run")
	fs.BoolVar(&o.verbose, "v", false, "log the provider")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.args = strings.Join(args, " ")
	for _, f := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 9999 {
			return o, fmt.Errorf("-steps: want counts from 1 to 9999 such as 25,50,100, got %q", steps)
		}
		o.steps = append(o.steps, n)
	}
	if o.rate < 1 || o.hold <= 0 || o.baseline <= 0 {
		return o, fmt.Errorf("-rate, -hold and -baseline must be positive")
	}
	o.frames = bench.Speech(3)
	o.start, o.load = time.Now().UTC(), bench.LoadAvg()
	return o, nil
}

// stepResult is one step: the calls and the baseline, and the p99 of a
// first run that failed the goal (0 when the first run passed).
type stepResult struct {
	tw, bare result
	firstP99 time.Duration
	busy     bool // the machine was not quiet before the run
}

func (s stepResult) ok(goal time.Duration) bool {
	return s.tw.sustained == s.tw.calls && s.tw.p99 < goal
}

// unjudged: the step missed the goal on lateness alone while the bare
// pacers beside it missed it too, so the machine (its neighbours) was too
// busy to tell anything about the Twilio path; stepping goes on.
func (s stepResult) unjudged(goal time.Duration) bool {
	return !s.ok(goal) && s.tw.sustained == s.tw.calls && s.bare.p99 >= goal
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
			again.firstP99 = s.tw.p99
			s = again
		}
		steps = append(steps, s)
		if s.unjudged(o.goalP99) {
			fmt.Printf("  step %d: the bare pacers missed the goal too (the machine is busy): not judged, going on\n", n)
			continue
		}
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
	return bench.WriteSection(o.out, "## bench-twilio", section)
}

// runStep waits for a quiet machine, then runs n calls and the baseline.
func runStep(o options, n int) (stepResult, error) {
	var s stepResult
	s.busy = !bench.WaitQuiet(o.quietWait)
	fmt.Printf("step %d calls: placing at %d/s, holding %v\n", n, o.rate, o.hold)
	r, err := runTwilio(o, n)
	if err != nil {
		return s, fmt.Errorf("step %d: %w", n, err)
	}
	fmt.Printf("  answered %d, sustained %d, lateness p50 %s p99 %s, written %d received by the fake %d lost %d, played %.1f/s marks echoed %.1f/s per call, mark delay p50 %s p99 %s, CPU/call %v/s + fake %v/s, others %s, failures %v\n",
		r.answered, r.sustained, bench.Ms(r.p50), bench.Ms(r.p99), r.written, r.fakeIn, r.lost(), r.rate(r.heardHold), r.rate(r.echoedHold),
		bench.Ms(r.markP50), bench.Ms(r.markP99), r.perCall(), r.perCallOf(r.cpu.Peer), bench.Pct(r.cpu.Share(r.cpu.Others())), r.failed)
	s.busy = !bench.WaitQuiet(o.quietWait/2) || s.busy
	b := runBare(o, n)
	fmt.Printf("  baseline: p50 %s p99 %s, CPU/call %v/s, others %s\n", bench.Ms(b.p50), bench.Ms(b.p99), b.perCall(), bench.Pct(b.cpu.Share(b.cpu.Others())))
	s.tw, s.bare = r, b
	return s, nil
}

func report(o options, steps []stepResult) string {
	var b strings.Builder
	cmd := "go run ./internal/bench/cmd/benchtwilio"
	if o.args != "" {
		cmd += " " + o.args
	}
	fmt.Fprintf(&b, `## bench-twilio

Concurrent Twilio calls (`+"`internal/twilio`"+`) on one machine, modelled on bench-sip.
At each step the bench places that many calls (%d a second) through the real
`+"`twilio.Provider`"+` (REST `+"`Calls.json`"+` create, signed status callbacks and TwiML
fetch, `+"`<Connect><Stream>`"+`, the Media Streams websocket, every request's
signature checked) to the fake Twilio of `+"`internal/twilio/twiliotest`"+`, on
loopback; the provider's `+"`Handler`"+` is served by an `+"`http.Server`"+` set up as the
server's own, at `+"`Config.PublicURL`"+`. The fake answers every call as a person
would and, as Twilio does, sends 20 ms of caller audio (silence) every 20 ms,
plays what it is sent in real time and echoes each mark when its playback
reaches it. On each answered line the product's own `+"`audio.Pacer`"+` (what the
call runtime uses) writes 20 ms μ-law frames of a speech-like signal into
`+"`Line.Write`"+`, fed from a feeder that keeps every pacer %d–%d frames ahead, as a
speech synthesizer would; the line has been told the turn (`+"`AudioStart`"+`), so,
as in a call, every frame goes out as a media message followed by a mark.
After the last answer and %v of settling, the calls are held for %v:

- **sustained**: calls answered and still up at the end of the hold (the line
  and the fake's stream);
- **frame lateness**: how late each outbound frame is handed to `+"`Line.Write`"+`
  against its real-time 20 ms schedule (the pacer's own schedule, measured at
  the line, so a slow websocket write shows as lateness of the next frame;
  25 µs buckets), over the hold;
- **lost**: frames `+"`Line.Write`"+` accepted over the calls' lives that the fake
  never received, 0.5 s after the pacers stopped (TCP: any loss would be a
  broken stream);
- **played, marks echoed**: per call and second of the hold, the frames the
  fake played and the marks it echoed (50 of each when it keeps real time);
  **mark delay**: from a frame handed to `+"`Line.Write`"+` to its mark's echo handed
  to the runtime by `+"`Line.Receive`"+` (the playback position the runtime sees for
  barge-in, and how stale it is);
- **CPU per call**: the bench process's CPU time over the hold (getrusage) ÷
  calls ÷ seconds: provider, HTTP server, pacers, feeder and receivers; the
  fake Twilio runs in a child process (this same binary) and its CPU time
  (from /proc) is listed apart.

**Conditions users don't have.** The far end is a fake on the same machine
and on loopback: no network delay, loss or jitter between Twilio and the
server, no TLS (real Media Streams are `+"`wss://`"+`), no Twilio edge, no speech
engines and no conversation. Real Twilio adds the path to its media edge
(tens of ms each way, with its jitter) to the mark delay, and TLS to the CPU
of every frame. The fake also takes its share of the same 2 CPUs (the fake
columns). So the figures are an upper bound on what the Twilio layer itself
sustains, not calls a node with real callers and real engines would carry.
The **baseline** next to each step is the same number of the same pacers, fed
the same way, writing to a line that does nothing (no websocket, no Twilio),
over %v: what timers and the Go scheduler alone give at that count; the
ratio isolates the Twilio path's cost.

- **Date:** %s
- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; 1-minute load average %s at the start; %s
- **Command:** `+"`make bench-twilio`"+` (`+"`%s`"+`)

`, o.rate, bench.LowWater, bench.HighWater, o.settle, o.hold, o.baseline,
		o.start.Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, o.load, bench.Niceness("bench and fake"), cmd)

	b.WriteString("| calls | answered | **sustained** | frame lateness p50 | **p99** | baseline p50 | baseline p99 | p99 ÷ baseline | `Pacer.Jitter` p99 (median / max of calls) | **CPU per call** (bench process) | baseline CPU per call | difference | fake Twilio CPU per call | bench process CPU (of 2) | fake CPU (of 2) | other processes (calls / baseline) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	best := 0
	for _, s := range steps {
		r, z := s.tw, s.bare
		mark := ""
		switch {
		case s.ok(o.goalP99):
			best = r.calls
		case s.unjudged(o.goalP99):
			mark = " (not judged: the baseline missed the goal too)"
		default:
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
		fmt.Fprintf(&b, "| %d | %d | **%d** | %s | **%s**%s | %s | %s | %s | %s / %s | **%s** | %s | %s | %s | %s | %s | %s / %s |\n",
			r.calls, r.answered, r.sustained, bench.Ms(r.p50), bench.Ms(r.p99), mark, bench.Ms(z.p50), bench.Ms(z.p99), ratio,
			bench.Ms(r.pacers.JitterMed), bench.Ms(r.pacers.JitterMax),
			bench.PerSec(r.perCall()), bench.PerSec(z.perCall()), bench.PerSec(r.perCall()-z.perCall()), bench.PerSec(r.perCallOf(r.cpu.Peer)),
			bench.Pct(r.cpu.Share(r.cpu.Self)), bench.Pct(r.cpu.Share(r.cpu.Peer)), bench.Pct(r.cpu.Share(r.cpu.Others())), bench.Pct(z.cpu.Share(z.cpu.Others())))
	}
	b.WriteString("\nMedia and marks, per step (the same runs):\n\n")
	b.WriteString("| calls | frames written | received by the fake | lost | played by the fake (per call, s) | marks echoed by the fake (per call, s) | marks reaching `Receive` (per call, s) | **mark delay p50** | **p99** | caller frames at `Receive` (per call, s) | caller audio dropped / writes dropped / bad messages (provider) |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range steps {
		r := s.tw
		lostPct := 0.0
		if r.written > 0 {
			lostPct = 100 * float64(r.lost()) / float64(r.written)
		}
		fmt.Fprintf(&b, "| %d | %d | %d | %d (%.3f%%) | %.1f | %.1f | %.1f | **%s** | **%s** | %.1f | %d / %d / %d |\n",
			r.calls, r.written, r.fakeIn, r.lost(), lostPct, r.rate(r.heardHold), r.rate(r.echoedHold), r.rate(r.marks),
			bench.Ms(r.markP50), bench.Ms(r.markP99), r.rate(r.inboundHold),
			r.prov.MediaDropped, r.prov.WritesDropped, r.prov.BadMessages)
	}
	fmt.Fprintf(&b, "\nA step holds when every call was sustained and the p99 frame lateness stayed under %v (bench-sip's bar; the issue sets no goal for Twilio). ", o.goalP99)
	if best > 0 {
		fmt.Fprintf(&b, "Largest step that held: **%d calls**.", best)
		for _, s := range steps {
			if s.tw.calls == best && s.tw.perCall() > 0 {
				est := int(0.7 * float64(runtime.NumCPU()) * float64(time.Second) / float64(s.tw.perCall()))
				fmt.Fprintf(&b, " For users Twilio is remote and its CPU is not on the node: at %d calls the bench process alone (provider, HTTP server, pacers, feeder) used %s of CPU per call and second; at that rate 70%% of the %d CPUs would carry about %d calls without speech engines (an estimate, not a measurement: no TLS here, and the lateness at that count was not measured).",
					best, bench.PerSec(s.tw.perCall()), runtime.NumCPU(), est)
			}
		}
		b.WriteString("\n")
	} else {
		b.WriteString("No step held.\n")
	}
	var failures []string
	for _, s := range steps {
		keys := make([]string, 0, len(s.tw.failed))
		for k := range s.tw.failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			failures = append(failures, fmt.Sprintf("%d calls: %s × %d", s.tw.calls, k, s.tw.failed[k]))
		}
		if s.tw.pacers.Resyncs > 0 || s.tw.pacers.Dropped > 0 {
			failures = append(failures, fmt.Sprintf("%d calls: pacer resyncs %d, pacer frames dropped %d", s.tw.calls, s.tw.pacers.Resyncs, s.tw.pacers.Dropped))
		}
		if s.tw.markUnknown > 0 {
			failures = append(failures, fmt.Sprintf("%d calls: %d marks of frames sent over 20 s before (not in the mark delay)", s.tw.calls, s.tw.markUnknown))
		}
		if s.tw.fakeErr != nil {
			failures = append(failures, fmt.Sprintf("%d calls: fake: %v", s.tw.calls, s.tw.fakeErr))
		}
	}
	if len(failures) > 0 {
		b.WriteString("\nFailures and drops: " + strings.Join(failures, "; ") + ".\n")
	}
	fmt.Fprintf(&b, "\nA step fails (✗) when a call was lost before the end of the hold or its p99 reached %v, in two runs; stepping stops there, unless the bare pacers of its baseline reached it too (then the machine was too busy to judge the step, which is marked so, and stepping goes on). Before each run the bench waits (up to %v) for 2 s in which other processes and the host take less than 15%% of the CPUs, and marks runs that started on a busy machine (this machine is shared). `Pacer.Jitter` is the pacer's own histogram over each call's whole life (ramp included). \"Bench process CPU\", \"fake CPU\" and \"other processes\" are shares of the machine's 2 CPUs over the hold, from /proc/stat; \"difference\" is CPU per call less the baseline's, what the Twilio path costs this process.\n", o.goalP99, o.quietWait)
	return b.String()
}
