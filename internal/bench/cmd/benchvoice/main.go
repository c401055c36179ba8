// Command benchvoice measures the voice pipeline (internal/voice) with the
// real conversation engine, in three parts, and writes them to
// docs/benchmarks.md:
//
//  1. platform: the platform's own share of a turn (call.Breakdown.Platform)
//     with fake providers of fixed latency, over many turns of concurrent
//     calls;
//
//  2. capacity: how many concurrent audio calls keep the outbound frames'
//     p99 lateness under 10 ms, with instant providers, next to bare
//     audio.Pacers at the same count;
//
//  3. local: how many concurrent calls the offline engines (pocketsphinx,
//     espeak-ng) sustain in real time (needs -tags speech_native).
//
//     CGO_ENABLED=1 go run -tags speech_native ./internal/bench/cmd/benchvoice -out docs/benchmarks.md
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/speech"
	"switchboard/internal/speech/local"
)

type options struct {
	out               string
	parts             map[string]bool
	platformCalls     int
	platformTurns     int
	steps             []int
	measure, baseline time.Duration
	goalP99           time.Duration
	format            audio.Format
	localSteps        []int
	localCycles       int
	localFormat       audio.Format
	localDecoders     int
	quietWait         time.Duration
	cpuProfile        string
	memProfile        string
	args              string
}

func main() {
	var o options
	var parts, steps, localSteps, format, localFormat string
	flag.StringVar(&o.out, "out", "", "markdown file whose \"## bench-voice\" section is written")
	flag.StringVar(&parts, "parts", "platform,capacity,local", "which parts to run")
	flag.IntVar(&o.platformCalls, "platform-calls", 20, "platform: concurrent calls")
	flag.IntVar(&o.platformTurns, "platform-turns", 10, "platform: turns per call")
	flag.StringVar(&steps, "steps", "250,500,1000,1500,2000,2500,3000", "capacity: concurrent call counts to try, in order (stops at the first that fails)")
	flag.DurationVar(&o.measure, "measure", 9*time.Second, "capacity: measured time per step")
	flag.DurationVar(&o.baseline, "baseline", 4*time.Second, "capacity: measured time of the bare-pacer baseline per step")
	flag.DurationVar(&o.goalP99, "goal", 10*time.Millisecond, "capacity: the p99 frame lateness a step must stay under")
	flag.StringVar(&format, "format", "pcm16/16000", "capacity: the calls' audio format, both ways")
	flag.StringVar(&localSteps, "local-steps", "2,4,6,8,12,16,24,32", "local: concurrent call counts to try, in order (stops at the first that fails)")
	flag.IntVar(&o.localCycles, "local-cycles", 2, "local: measured turns per call and step")
	flag.StringVar(&localFormat, "local-format", "mulaw/8000", "local: the calls' audio format (the sandbox's phone line)")
	flag.IntVar(&o.localDecoders, "local-decoders", local.DefaultDecoders, "local: pocketsphinx decoders (the transcriber's pool)")
	flag.DurationVar(&o.quietWait, "quiet-wait", 30*time.Second, "capacity, local: how long to wait for a quiet machine before each run")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run here")
	flag.StringVar(&o.memProfile, "memprofile", "", "write an allocation profile at the end of the run here")
	flag.Parse()
	o.args = strings.Join(os.Args[1:], " ")
	o.parts = map[string]bool{}
	for _, p := range strings.Split(parts, ",") {
		o.parts[strings.TrimSpace(p)] = true
	}
	var err error
	if o.steps, err = ints(steps); err == nil {
		o.localSteps, err = ints(localSteps)
	}
	if err == nil {
		o.format, err = parseFormat(format)
	}
	if err == nil {
		o.localFormat, err = parseFormat(localFormat)
	}
	if err == nil && o.cpuProfile != "" {
		var f *os.File
		if f, err = os.Create(o.cpuProfile); err == nil {
			err = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err == nil {
		err = run(o)
	}
	if err == nil && o.memProfile != "" {
		var f *os.File
		if f, err = os.Create(o.memProfile); err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "benchvoice:", err)
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q in %q", f, s)
		}
		out = append(out, n)
	}
	return out, nil
}

func parseFormat(s string) (audio.Format, error) {
	enc, rate, _ := strings.Cut(s, "/")
	r, _ := strconv.Atoi(rate)
	f := audio.Format{Encoding: audio.Encoding(enc), SampleRate: r}
	return f, f.Validate()
}

func run(o options) error {
	// What every caller says: real speech (espeak-ng), so that the
	// pipeline's default WebRTC voice activity detector hears it.
	tts, err := local.NewSynthesizer(local.SynthesizerOptions{})
	if err != nil {
		return fmt.Errorf("the callers' voice needs espeak-ng: %w", err)
	}
	utterance, err := synthesize(tts, "A table for two, please.", audio.PipelineRate)
	if err != nil {
		return err
	}
	fmt.Printf("caller utterance: %s of espeak-ng speech\n", time.Duration(len(utterance))*time.Second/audio.PipelineRate)

	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	p("## bench-voice\n\n")
	p("The voice pipeline (`internal/voice`: decoder → WebRTC VAD and endpointer → speech-to-text → the real conversation engine → sentence splitter → text-to-speech → encoder → pacer) with the real engine on every call; the transport is an in-process `voice.Output` that counts bytes and times each frame (no websockets), and the callers' audio is one espeak-ng utterance (%.1f s) on a loop, written to `Pipeline.Write` every 20 ms by feeder goroutines (one per 64 calls, on an absolute schedule).\n\n",
		float64(len(utterance))/audio.PipelineRate)
	p("- **Date:** %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	p("- **Machine:** %d CPUs (%s), GOMAXPROCS %d, %s %s/%s; 1-minute load average %s at the start\n", runtime.NumCPU(), bench.CPUModel(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH, bench.LoadAvg())
	p("- **Command:** `make bench-voice` (`CGO_ENABLED=1 go run -tags speech_native ./internal/bench/cmd/benchvoice -out docs/benchmarks.md`%s)\n\n", map[bool]string{true: "; this run: `" + o.args + "`", false: ""}[o.args != "-out docs/benchmarks.md" && o.args != ""])
	start := time.Now()
	if o.parts["platform"] {
		r, err := runPlatform(o, utterance)
		if err != nil {
			return fmt.Errorf("platform: %w", err)
		}
		r.write(p)
	}
	if o.parts["capacity"] {
		r, err := runCapacity(o, utterance)
		if err != nil {
			return fmt.Errorf("capacity: %w", err)
		}
		r.write(p)
	}
	if o.parts["local"] {
		r, err := runLocal(o, tts)
		if err != nil && !errors.Is(err, speech.ErrUnavailable) {
			return fmt.Errorf("local: %w", err)
		}
		if err != nil {
			p("### Calls on the local engines\n\nNot measured: %v (build with `-tags speech_native` and CGO_ENABLED=1, and install the engines: `scripts/speech-deps.sh`).\n\n", err)
			fmt.Println("local: skipped:", err)
		} else {
			r.write(p)
		}
	}
	p("The whole run took %s; 1-minute load average %s at the end (above ~2 means other processes competed for the 2 CPUs, and every figure above is then pessimistic).\n", time.Since(start).Round(time.Second), bench.LoadAvg())
	if o.out == "" {
		fmt.Print(b.String())
		return nil
	}
	return bench.WriteSection(o.out, "## bench-voice", b.String())
}

// synthesize speaks text at rate with s into one buffer.
func synthesize(s speech.Synthesizer, text string, rate int) ([]int16, error) {
	var pcm []int16
	err := s.Synthesize(context.Background(), text, speech.VoiceOptions{SampleRate: rate}, func(p []int16) error {
		pcm = append(pcm, p...)
		return nil
	})
	return pcm, err
}

// convert resamples pipeline-rate pcm to f's rate and cuts it into f's frames.
func convert(f audio.Format, pcm []int16) [][]byte {
	if f.SampleRate != audio.PipelineRate {
		rs := audio.NewResampler(audio.PipelineRate, f.SampleRate)
		pcm = rs.Flush(rs.Process(nil, pcm))
	}
	return framesOf(f, pcm)
}
