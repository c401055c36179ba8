package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/call"
	"switchboard/internal/speech"
	"switchboard/internal/speech/local"
	"switchboard/internal/voice/voicetest"
)

// What the local part's callers say and hear.
const (
	localUtterance = "Yes, book it for Tuesday."
	localReply     = "All right, it is booked."
	// localBudget is how late a final may come after the endpoint for the
	// turn to count as real time.
	localBudget = time.Second
)

// timedSynth measures a synthesizer's real-time factor: the time it spends
// producing a sentence's audio (not counting the pipeline's backpressure in
// out) over the audio's duration. At 1 or more, playback must run dry.
type timedSynth struct {
	speech.Synthesizer
	mu   sync.Mutex
	rtfs []time.Duration // per sentence, as a duration per second of audio
}

func (t *timedSynth) Synthesize(ctx context.Context, text string, opts speech.VoiceOptions, out func([]int16) error) error {
	var inOut time.Duration
	var samples int
	start := time.Now()
	err := t.Synthesizer.Synthesize(ctx, text, opts, func(pcm []int16) error {
		t0 := time.Now()
		samples += len(pcm)
		err := out(pcm)
		inOut += time.Since(t0)
		return err
	})
	if err == nil && samples > 0 {
		work := time.Since(start) - inOut
		t.mu.Lock()
		t.rtfs = append(t.rtfs, time.Duration(float64(work)*float64(opts.SampleRate)/float64(samples)))
		t.mu.Unlock()
	}
	return err
}

// take returns and forgets the measurements so far.
func (t *timedSynth) take() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rtfs
	t.rtfs = nil
	return r
}

// countingSTT counts the utterances its streams have open (audio written,
// final not yet delivered), so a step can wait for them all to end before
// it hangs up.
type countingSTT struct {
	speech.Transcriber
	open atomic.Int64
}

func (c *countingSTT) Start(ctx context.Context, opts speech.TranscribeOptions) (speech.TranscribeStream, error) {
	s, err := c.Transcriber.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	cs := &countingStream{TranscribeStream: s, c: c, results: make(chan speech.Transcript, 16), done: make(chan struct{})}
	go cs.forward()
	return cs, nil
}

type countingStream struct {
	speech.TranscribeStream
	c       *countingSTT
	results chan speech.Transcript
	done    chan struct{}
	mu      sync.Mutex
	inUtt   bool // audio written since the last Finish
	pending int  // utterances finished, final not yet delivered
}

func (s *countingStream) Write(pcm []int16) error {
	s.mu.Lock()
	if !s.inUtt {
		s.inUtt = true
		s.c.open.Add(1)
	}
	s.mu.Unlock()
	return s.TranscribeStream.Write(pcm)
}

func (s *countingStream) Finish() error {
	s.mu.Lock()
	if s.inUtt {
		s.inUtt = false
		s.pending++
	}
	s.mu.Unlock()
	return s.TranscribeStream.Finish()
}

func (s *countingStream) Results() <-chan speech.Transcript { return s.results }

// forward passes results on, counting finals; it ends when the inner
// stream's results close, forgetting what is still open.
func (s *countingStream) forward() {
	defer close(s.done)
	defer close(s.results)
	for tr := range s.TranscribeStream.Results() {
		if tr.Final {
			s.mu.Lock()
			if s.pending > 0 {
				s.pending--
				s.c.open.Add(-1)
			}
			s.mu.Unlock()
		}
		s.results <- tr
	}
	s.mu.Lock()
	gone := int64(s.pending)
	if s.inUtt {
		gone++
	}
	s.c.open.Add(-gone)
	s.pending, s.inUtt = 0, false
	s.mu.Unlock()
}

func (s *countingStream) Close() error {
	err := s.TranscribeStream.Close()
	// The pipeline has stopped reading: drain so forward can end.
	for range s.results {
	}
	<-s.done
	return err
}

type localStep struct {
	n                  int
	expected, answered int
	stt50, stt95, sttX time.Duration
	voice95            time.Duration
	total50, total95   time.Duration
	late99             time.Duration
	rtf95              time.Duration // synthesis time per second of audio, p95
	underruns          int64
	cpuShare           float64
	others, steal      float64
	droppedIn          uint64
	why                string // why it failed; "" passed
	retried            string // why its first run failed, when it was run again
	quiet              bool   // the machine was quiet before it started
}

type localResult struct {
	format        audio.Format
	decoders      int
	speech, reply time.Duration
	cycle, window time.Duration
	steps         []localStep
	best          int
	warmup        time.Duration
}

// runLocal steps the number of concurrent calls on the offline engines up
// until turns stop completing in real time.
func runLocal(o options, tts speech.Synthesizer) (localResult, error) {
	r := localResult{format: o.localFormat, decoders: o.localDecoders}
	engine, err := local.NewTranscriber(local.TranscriberOptions{Decoders: o.localDecoders})
	if err != nil {
		return r, err
	}
	if c, ok := engine.(io.Closer); ok {
		defer c.Close()
	}
	stt := &countingSTT{Transcriber: engine}
	utter, err := synthesize(tts, localUtterance, audio.PipelineRate)
	if err != nil {
		return r, err
	}
	reply, err := synthesize(tts, localReply, audio.PipelineRate)
	if err != nil {
		return r, err
	}
	speechFrames := convert(o.localFormat, utter)
	r.speech = time.Duration(len(speechFrames)) * audio.FrameDuration
	r.reply = time.Duration(len(reply)) * time.Second / audio.PipelineRate
	r.cycle = (r.speech + 500*time.Millisecond + localBudget + r.reply + time.Second).Round(audio.FrameDuration)
	r.window = time.Duration(o.localCycles) * r.cycle
	s := script{speech: speechFrames, silence: voicetest.NewFrames(o.localFormat).Silence, cycle: int(r.cycle / audio.FrameDuration)}

	// Create the decoders before measuring (≈ 0.3 s each).
	t0 := time.Now()
	if err := warmUp(stt, o.localDecoders, o.localFormat, utter); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	r.warmup = time.Since(t0)
	fmt.Printf("local: utterance %s, reply %s, one turn per call every %s; %d decoders ready in %s\n", r.speech, r.reply.Round(10*time.Millisecond), r.cycle, o.localDecoders, r.warmup.Round(10*time.Millisecond))

	timed := &timedSynth{Synthesizer: tts}
	for _, n := range o.localSteps {
		runtime.GC()
		st, err := runLocalStep(n, o, s, stt, timed, r)
		if err == nil && st.why != "" {
			// A shared machine's noisy moment, or the count's limit: try
			// once more; the step fails only if it fails twice.
			fmt.Printf("local: %3d calls failed (%s); once more\n", n, st.why)
			first := st.why
			st, err = runLocalStep(n, o, s, stt, timed, r)
			st.retried = first
		}
		if err != nil {
			return r, fmt.Errorf("%d calls: %w", n, err)
		}
		fmt.Printf("local: %3d calls: %d/%d turns, STT final after endpoint p50 %s p95 %s, TTS first audio p95 %s, synthesis %s per s of audio, frame lateness p99 %s, %d gaps, CPU %.0f%%, other processes %.0f%%, steal %.0f%% %s\n",
			n, st.answered, st.expected, bench.Ms(st.stt50), bench.Ms(st.stt95), bench.Ms(st.voice95), bench.Ms(st.rtf95), bench.Ms(st.late99), st.underruns, 100*st.cpuShare, 100*st.others, 100*st.steal, st.why)
		r.steps = append(r.steps, st)
		if st.why != "" {
			break
		}
		r.best = n
	}
	return r, nil
}

// warmUp runs one utterance through n streams at once, so the pool's
// decoders exist.
func warmUp(stt speech.Transcriber, n int, f audio.Format, utter []int16) error {
	rate := 16000
	if f.SampleRate == 8000 {
		rate = 8000
	}
	pcm := utter
	if rate != audio.PipelineRate {
		rs := audio.NewResampler(audio.PipelineRate, rate)
		pcm = rs.Flush(rs.Process(nil, utter))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			s, err := stt.Start(ctx, speech.TranscribeOptions{SampleRate: rate, Language: "en-US"})
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			if err := s.Write(pcm); err != nil {
				errs[i] = err
				return
			}
			if err := s.Finish(); err != nil {
				errs[i] = err
				return
			}
			for tr := range s.Results() {
				if tr.Final {
					return
				}
			}
			errs[i] = fmt.Errorf("no final: %v", s.Err())
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runLocalStep(n int, o options, s script, stt *countingSTT, tts *timedSynth, r localResult) (localStep, error) {
	st := localStep{n: n, expected: n * o.localCycles}
	st.quiet = waitQuiet(o.quietWait)
	s.hush = new(atomic.Bool)
	m := &meter{}
	var mu sync.Mutex
	var bds []call.Breakdown
	onTurn := func(t call.Turn) {
		if t.Role != call.RoleAssistant || t.Breakdown == nil || m.cur.Load() == nil {
			return
		}
		mu.Lock()
		bds = append(bds, *t.Breakdown)
		mu.Unlock()
	}
	var calls []*voiceCall
	var ws []writer
	silence := s.cycle - len(s.speech)
	for i := range n {
		c, err := startCall(callConfig{
			In: o.localFormat, Out: o.localFormat, STT: stt, TTS: tts,
			Brain: &voicetest.Brain{Default: localReply}, OnTurn: onTurn, Sink: &out{m: m},
		}, i)
		if err != nil {
			return st, err
		}
		calls = append(calls, c)
		ws = append(ws, writer{write: c.p.Write, phase: len(s.speech) + silence*i/n})
	}
	ctx, cancel := context.WithCancel(context.Background())
	feeders := feedAll(ctx, ws, s, 64, m)
	// Every caller's first utterance starts within the first cycle's
	// silence; measure the turns of the cycles after it.
	time.Sleep(time.Duration(silence) * audio.FrameDuration)
	tts.take()
	w := m.start()
	time.Sleep(r.window)
	m.stop()
	st.rtf95 = quantile(tts.take(), .95)
	st.cpuShare = w.cpuShare()
	st.others, st.steal = w.others(), w.steal()
	// The callers fall silent and every utterance gets its final before
	// they hang up: a stream closed mid-utterance returns its pocketsphinx
	// decoder to the pool still in the utterance, and the next call to
	// borrow it fails (ps_start_utt).
	s.hush.Store(true)
	for deadline := time.Now().Add(30 * time.Second); stt.open.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := stt.open.Load(); n > 0 {
		fmt.Printf("local: %d utterances still open 30 s after the callers fell silent\n", n)
	}
	cancel()
	feeders.Wait()
	for _, c := range calls {
		st.droppedIn += c.p.Stats().DroppedIn
	}
	err := stopAll(calls)
	st.late99, st.underruns = w.late.Quantile(0.99), w.underruns.Load()
	mu.Lock()
	defer mu.Unlock()
	st.answered = len(bds)
	field := func(f func(call.Breakdown) time.Duration, q float64) time.Duration {
		ds := make([]time.Duration, len(bds))
		for i, b := range bds {
			ds[i] = f(b)
		}
		return quantile(ds, q)
	}
	sttF := func(b call.Breakdown) time.Duration { return b.Transcriber }
	st.stt50, st.stt95, st.sttX = field(sttF, .5), field(sttF, .95), field(sttF, 1)
	st.voice95 = field(func(b call.Breakdown) time.Duration { return b.Voice }, .95)
	total := func(b call.Breakdown) time.Duration { return b.Total }
	st.total50, st.total95 = field(total, .5), field(total, .95)
	switch {
	case st.answered < st.expected*3/4:
		st.why = fmt.Sprintf("only %d of %d turns answered", st.answered, st.expected)
	case st.stt95 > localBudget:
		st.why = fmt.Sprintf("finals p95 %s after the endpoint", bench.Ms(st.stt95))
	case st.rtf95 >= time.Second:
		st.why = fmt.Sprintf("synthesis slower than real time (%s per second of audio at p95)", bench.Ms(st.rtf95))
	}
	return st, err
}

func (r localResult) write(p func(string, ...any)) {
	p("### Calls on the local engines\n\n")
	p("The offline engines (`internal/speech/local`, built with `-tags speech_native`): pocketsphinx for speech-to-text (a pool of %d decoders, created before measuring) and espeak-ng through its C API for text-to-speech, shared by all calls as the server shares them, calls in %s (the sandbox's phone line). Each caller says \"%s\" (%s) once every %s; the brain answers \"%s\" (%s of speech) at once. A step passes when (in one of at most two runs), over %s of every call (after the first utterances), at least ¾ of the expected turns are answered, the final transcript comes at most %s after the endpoint at p95, and espeak-ng synthesizes each sentence faster than real time at p95 (its time per second of audio, not counting the pipeline's backpressure, under 1 s: otherwise playback must run dry). Each run waits first for a quiet machine, as in the capacity part. Gaps of more than 3 frames inside a turn's audio and the frames' lateness are reported, not judged: on a shared machine a stalled process makes them too (the capacity part judges lateness).\n\n",
		r.decoders, r.format, localUtterance, r.speech, r.cycle, localReply, r.reply.Round(10*time.Millisecond), r.window, localBudget)
	p("| calls | turns answered / expected | STT final after endpoint p50 | p95 | max | TTS first audio p95 | synthesis per s of audio p95 | turn total p50 | p95 | frame lateness p99 | gaps > 60 ms | caller frames dropped | CPU (of %d) | other processes' CPU | stolen by the host | |\n", runtime.NumCPU())
	p("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range r.steps {
		verdict := "ok"
		if s.why != "" {
			verdict = "✗ " + s.why
		}
		if s.retried != "" {
			verdict += " (second run; the first: " + s.retried + ")"
		}
		if !s.quiet {
			verdict += " (machine busy)"
		}
		p("| %d | %d / %d | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %.0f%% | %.0f%% | %.0f%% | %s |\n", s.n, s.answered, s.expected,
			bench.Ms(s.stt50), bench.Ms(s.stt95), bench.Ms(s.sttX), bench.Ms(s.voice95), bench.Ms(s.rtf95), bench.Ms(s.total50), bench.Ms(s.total95), bench.Ms(s.late99), s.underruns, s.droppedIn, 100*s.cpuShare, 100*s.others, 100*s.steal, verdict)
	}
	p("\nLargest count sustained in real time: **%d calls**. Turn total is from the caller's last voiced frame to the reply's first audio frame out, so it includes the endpointer's 500 ms of silence.\n\n", r.best)
}
