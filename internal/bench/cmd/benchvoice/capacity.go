package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/voice/voicetest"
)

// The capacity part's calls: the caller's utterance, then the assistant's
// answer of capacityWords × capacityWord of speech, on a capacityCycle loop.
const (
	capacityWord  = 250 * time.Millisecond
	capacityWords = 15 // 3.75 s of speech per answer
	capacityCycle = 8 * time.Second
	capacityRamp  = 3 * time.Second
	// capacityWindows is how many windows a step's measured time is cut into.
	capacityWindows = 3
)

// capacityReply is capacityWords words.
const capacityReply = "Sure, I can help with that. We have a table for two at eight tonight."

type stepResult struct {
	n                int
	bareP50, bareP99 time.Duration
	bareFrames       int64
	p50, p99         time.Duration
	frames           int64
	pacerMed         time.Duration // median over calls of Pipeline.Jitter's p99
	pacerMax         time.Duration
	feedLag          time.Duration // p99
	cpuShare         float64       // of all CPUs, during the measured window
	cpuPerCall       time.Duration // CPU time per call-second
	framesPerSec     float64       // outbound frames sent per second
	heapPerCall      float64       // bytes
	goroutines       float64       // per call
	droppedIn        uint64
	resyncs          uint64
	gaps             int64 // outbound gaps of more than 3 frames inside a turn
	starts, clears   int64
	pacerDropped     uint64
	windowP99        []time.Duration // every window's p99, ascending
	retried          time.Duration   // the p99 of a first run that failed
	quiet            bool            // the machine was quiet before it started
	others, steal    float64         // the machine's CPU used by other processes, and stolen by the hypervisor
	bareOthers       float64
	bareSteal        float64
}

func (s stepResult) pass(goal time.Duration) bool { return s.frames > 0 && s.p99 < goal }

type capacityResult struct {
	format    audio.Format
	speech    time.Duration // the caller's utterance
	goal      time.Duration
	measure   time.Duration
	steps     []stepResult
	quietWait time.Duration
	best      int
}

// runCapacity steps the number of concurrent calls up until the outbound
// frames' p99 lateness reaches the goal.
func runCapacity(o options, utterance []int16) (capacityResult, error) {
	speechFrames := convert(o.format, utterance)
	r := capacityResult{format: o.format, goal: o.goalP99, measure: o.measure, speech: time.Duration(len(speechFrames)) * audio.FrameDuration, quietWait: o.quietWait}
	s := script{speech: speechFrames, silence: voicetest.NewFrames(o.format).Silence, cycle: int(capacityCycle / audio.FrameDuration)}
	for _, n := range o.steps {
		st, err := capacityStep(n, o, s)
		if err != nil {
			return r, err
		}
		if !st.pass(o.goalP99) {
			// A shared machine's noisy moment, or the count's limit: try
			// once more; the step fails only if it fails twice.
			fmt.Printf("capacity: %5d calls failed; once more\n", n)
			first := st.p99
			if st, err = capacityStep(n, o, s); err != nil {
				return r, err
			}
			st.retried = first
		}
		r.steps = append(r.steps, st)
		if !st.pass(o.goalP99) {
			break
		}
		r.best = n
	}
	return r, nil
}

// capacityStep measures n bare pacers, then n calls, each after waiting
// (a while, not forever) for the machine to be quiet.
func capacityStep(n int, o options, s script) (stepResult, error) {
	st := stepResult{n: n}
	runtime.GC()
	st.quiet = waitQuiet(o.quietWait)
	bw := runBarePacers(n, o.format, o.baseline)
	st.bareP50, st.bareP99, st.bareFrames = bw.late.Quantile(.5), bw.late.Quantile(.99), bw.frames.Load()
	st.bareOthers, st.bareSteal = bw.others(), bw.steal()
	runtime.GC()
	st.quiet = waitQuiet(o.quietWait) && st.quiet
	if err := runStep(&st, o, s, capacityReply); err != nil {
		return st, fmt.Errorf("%d calls: %w", n, err)
	}
	fmt.Printf("capacity: %5d calls: p99 %s (bare pacers %s), pacer p99 median %s max %s, feed lag p99 %s, CPU %.0f%% (%s per call-second), %.0f frames/s, %d turns started, %d cut, %d dropped in, %d dropped out, %d gaps; other processes %.0f%%, steal %.0f%% (bare: %.0f%%, %.0f%%)\n",
		n, bench.Ms(st.p99), bench.Ms(st.bareP99), bench.Ms(st.pacerMed), bench.Ms(st.pacerMax), bench.Ms(st.feedLag), 100*st.cpuShare, st.cpuPerCall.Round(time.Microsecond), st.framesPerSec, st.starts, st.clears, st.droppedIn, st.pacerDropped, st.gaps, 100*st.others, 100*st.steal, 100*st.bareOthers, 100*st.bareSteal)
	return st, nil
}

// runStep runs n calls: started together, each caller's first words
// spread over the cycle, measured for o.measure after a ramp.
func runStep(st *stepResult, o options, s script, reply string) error {
	m := &meter{}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	g0 := runtime.NumGoroutine()
	var calls []*voiceCall
	var ws []writer
	for i := range st.n {
		c, err := startCall(callConfig{
			In: o.format, Out: o.format,
			STT:   &voicetest.Transcriber{Utterances: []voicetest.Utterance{{Final: "a table for two please"}}},
			TTS:   &voicetest.Synthesizer{WordDuration: capacityWord},
			Brain: &voicetest.Brain{Default: reply},
			Sink:  &out{m: m},
		}, i)
		if err != nil {
			return err
		}
		calls = append(calls, c)
		ws = append(ws, writer{write: c.p.Write, phase: s.cycle * i / st.n})
	}
	ctx, cancel := context.WithCancel(context.Background())
	feeders := feedAll(ctx, ws, s, 64, m)
	time.Sleep(capacityRamp)
	// Three windows back to back; the step is judged by the median one
	// (by p99), so one noisy moment of a shared machine does not decide.
	var wins []*window
	var ms1 runtime.MemStats
	g1 := 0
	for i := range capacityWindows {
		m.start()
		time.Sleep(o.measure / capacityWindows / 2)
		if i == capacityWindows/2 {
			runtime.ReadMemStats(&ms1)
			g1 = runtime.NumGoroutine()
		}
		time.Sleep(o.measure/capacityWindows - o.measure/capacityWindows/2)
		wins = append(wins, m.stop())
	}
	cancel()
	feeders.Wait()
	slices.SortFunc(wins, func(a, b *window) int { return cmp.Compare(a.late.Quantile(.99), b.late.Quantile(.99)) })
	for _, w := range wins {
		st.windowP99 = append(st.windowP99, w.late.Quantile(.99))
	}
	w := wins[len(wins)/2]
	st.cpuShare = w.cpuShare()
	st.others, st.steal = w.others(), w.steal()
	st.cpuPerCall = time.Duration(float64(w.cpu) / w.took.Seconds() / float64(st.n))
	st.framesPerSec = float64(w.frames.Load()) / w.took.Seconds()
	st.p50, st.p99 = w.late.Quantile(0.5), w.late.Quantile(0.99)
	st.frames, st.gaps = w.frames.Load(), w.underruns.Load()
	st.starts, st.clears = w.starts.Load(), w.clears.Load()
	st.feedLag = w.lag.Quantile(0.99)
	st.heapPerCall = float64(int64(ms1.HeapInuse)-int64(ms0.HeapInuse)) / float64(st.n)
	st.goroutines = float64(g1-g0) / float64(st.n)
	var pacer []time.Duration
	for _, c := range calls {
		_, p99 := c.p.Jitter()
		pacer = append(pacer, p99)
		stats := c.p.Stats()
		st.droppedIn += stats.DroppedIn
		st.resyncs += stats.Pacer.Resyncs
		st.pacerDropped += stats.Pacer.Dropped
	}
	st.pacerMed, st.pacerMax = quantile(pacer, .5), slices.Max(pacer)
	return stopAll(calls)
}

// runBarePacers is the baseline: n audio.Pacers and nothing else, each
// given its answer (pre-encoded frames) once per cycle, the callers'
// answers spread over the cycle as in the pipeline step, with the same
// lateness measurement at the send.
func runBarePacers(n int, f audio.Format, measure time.Duration) *window {
	m := &meter{}
	answer := convert(f, voicetest.Tone(audio.PipelineRate, capacityWords*capacityWord))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	pacers := make([]*audio.Pacer, n)
	for i := range pacers {
		o := &out{m: m, bareGap: 5 * audio.FrameDuration}
		pacers[i] = audio.NewPacer(len(answer)+50, o.Audio, nil)
		wg.Go(func() { _ = pacers[i].Run(ctx) })
	}
	cycle := int(capacityCycle / audio.FrameDuration)
	var feeders sync.WaitGroup
	for lo := 0; lo < n; lo += 64 {
		part := pacers[lo:min(lo+64, n)]
		feeders.Go(func() {
			start := time.Now()
			t := time.NewTimer(0)
			defer t.Stop()
			for k := 0; ; k++ {
				if d := time.Until(start.Add(time.Duration(k) * audio.FrameDuration)); d > 0 {
					t.Reset(d)
					select {
					case <-ctx.Done():
						return
					case <-t.C:
					}
				} else if ctx.Err() != nil {
					return
				}
				for j, p := range part {
					if (k+cycle*(lo+j)/n)%cycle == 0 {
						for _, fr := range answer {
							p.Push(fr)
						}
					}
				}
			}
		})
	}
	time.Sleep(time.Second)
	m.start()
	time.Sleep(measure)
	w := m.stop()
	cancel()
	feeders.Wait()
	wg.Wait()
	return w
}

func (r capacityResult) write(p func(string, ...any)) {
	p("### Concurrent audio calls\n\n")
	p("Calls in %s both ways with instant providers (speech-to-text returns its final at once on the endpoint, text-to-speech returns its audio at once) and a brain that answers every utterance with %d words of speech (%s of audio): each call's caller speaks for %.1f s every %s, the assistant answers for %s, and outbound audio flows about half the time. The calls start together, the callers' utterances spread over the cycle; after a %s ramp, every outbound frame's lateness against its turn's 20 ms schedule (measured at `voice.Output.Audio`, the transport's side of the pacer) is recorded for %s, cut into %d windows; a step's figures are those of its median window by p99 (all three p99s are listed). Next to each step, the same number of bare `audio.Pacer`s (no pipeline, no caller audio, each given its answer's frames at once per cycle) are measured the same way for a baseline: what timers and the scheduler alone give at that count.\n\n",
		r.format, capacityWords, capacityWords*capacityWord, r.speech.Seconds(), capacityCycle, capacityWords*capacityWord, capacityRamp, r.measure, capacityWindows)
	p("| calls | frame lateness p50 | **p99** | p99 of the %d windows | bare pacers p99 | p99 ÷ bare | `Pipeline.Jitter` p99 (median / max of calls) | frames sent / s | gaps > 60 ms | feeders' lag p99 | CPU (of %d) | CPU per call | heap / call | goroutines / call | caller frames dropped | pacer resyncs | other processes' CPU | CPU stolen by the host |\n", capacityWindows, runtime.NumCPU())
	p("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, s := range r.steps {
		ratio := "–"
		if s.bareP99 > 0 {
			ratio = fmt.Sprintf("%.1f×", float64(s.p99)/float64(s.bareP99))
		}
		mark := ""
		if !s.pass(r.goal) {
			mark = " ✗"
		}
		if s.retried > 0 {
			mark += fmt.Sprintf(" (second run; the first: %s)", bench.Ms(s.retried))
		}
		if !s.quiet {
			mark += " (machine busy)"
		}
		var ws []string
		for _, w := range s.windowP99 {
			ws = append(ws, fmt.Sprintf("%.1f", float64(w)/float64(time.Millisecond)))
		}
		p("| %d | %s | **%s**%s | %s ms | %s | %s | %s / %s | %.0f | %d | %s | %.0f%% | %s/s | %.0f KiB | %.1f | %d | %d | %.0f%% | %.0f%% |\n",
			s.n, bench.Ms(s.p50), bench.Ms(s.p99), mark, strings.Join(ws, ", "), bench.Ms(s.bareP99), ratio, bench.Ms(s.pacerMed), bench.Ms(s.pacerMax), s.framesPerSec, s.gaps, bench.Ms(s.feedLag),
			100*s.cpuShare, s.cpuPerCall.Round(time.Microsecond), s.heapPerCall/1024, s.goroutines, s.droppedIn, s.resyncs, 100*s.others, 100*s.steal)
	}
	verdict := "met"
	if r.best < 1000 {
		verdict = "NOT met"
	}
	p("\nLargest count whose p99 frame lateness stayed under %s: **%d calls** (goal ≥ 1000: %s). ", r.goal, r.best, verdict)
	// CPU per call from the largest step that kept up is steadier than
	// lateness on a shared machine: what would 70% of the CPUs carry?
	for i := len(r.steps) - 1; i >= 0; i-- {
		if s := r.steps[i]; s.pass(r.goal) && s.cpuPerCall > 0 {
			p("At %d calls the process (pipelines, engines, fake providers and feeders) used %s of CPU per call-second; at that rate 70%% of %d CPUs would carry about %d calls (an estimate, not a measurement). ",
				s.n, s.cpuPerCall.Round(time.Microsecond), runtime.NumCPU(), int(0.7*float64(runtime.NumCPU())*float64(time.Second)/float64(s.cpuPerCall)))
			break
		}
	}
	p("A step fails (✗) when its p99 reaches the goal in two runs; stepping stops at the first that fails. Before each run the bench waits (up to %s) for the machine to be quiet — other processes and the host together taking less than 15%% of the CPUs over 2 s — and marks runs that started on a busy machine. ", r.quietWait)
	p("Lateness is bucketed by 25 µs; `Pipeline.Jitter` is the pacer's own measurement over each call's whole life, ramp included. Heap and goroutines per call are measured mid-window with every call live (the feeders and the fake providers' own goroutines included). The load generator (feeders) runs in the same process and competes for the same CPUs; its lag shows when the process as a whole was starved.\n\n")
}
