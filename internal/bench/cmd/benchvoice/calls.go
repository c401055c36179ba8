package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
	"switchboard/internal/bench"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/speech"
	"switchboard/internal/voice"
	"switchboard/internal/voice/voicetest"
)

// window is one measured stretch of time.
type window struct {
	late      bench.Lateness // each outbound frame's lateness against its turn's 20 ms schedule
	lag       bench.Lateness // the feeders' lateness
	frames    atomic.Int64
	bytes     atomic.Int64
	underruns atomic.Int64 // gaps of more than 3 frames inside a turn's audio
	starts    atomic.Int64 // turns whose audio started
	clears    atomic.Int64 // turns cut by a barge-in
	cpu, took time.Duration
	cpu0      time.Duration
	t0        time.Time
	sys0, sys machineTimes
}

// meter is what the outputs and feeders of one phase share: the window
// being measured, if any.
type meter struct {
	cur atomic.Pointer[window]
}

// start opens a new window.
func (m *meter) start() *window {
	w := &window{cpu0: bench.CPUTime(), t0: time.Now(), sys0: readMachineTimes()}
	m.cur.Store(w)
	return w
}

// stop closes the open window and returns it.
func (m *meter) stop() *window {
	w := m.cur.Swap(nil)
	w.cpu, w.took = bench.CPUTime()-w.cpu0, time.Since(w.t0)
	w.sys = readMachineTimes().minus(w.sys0)
	return w
}

// machineTimes are the whole machine's CPU times (/proc/stat).
type machineTimes struct {
	busy, steal, total time.Duration
}

// readMachineTimes reads the "cpu" line of /proc/stat (zero if it cannot).
func readMachineTimes() machineTimes {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTimes{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTimes{}
	}
	var t [8]time.Duration // user nice system idle iowait irq softirq steal, in USER_HZ (100)
	for i := range t {
		n, _ := strconv.ParseInt(f[i+1], 10, 64)
		t[i] = time.Duration(n) * 10 * time.Millisecond
	}
	m := machineTimes{busy: t[0] + t[1] + t[2] + t[5] + t[6], steal: t[7]}
	m.total = m.busy + t[3] + t[4] + m.steal
	return m
}

func (a machineTimes) minus(b machineTimes) machineTimes {
	return machineTimes{busy: a.busy - b.busy, steal: a.steal - b.steal, total: a.total - b.total}
}

// others is the share of the machine's CPU time that other processes used
// in w; steal the share the hypervisor gave to other machines.
func (w *window) others() float64 {
	if w.sys.total <= 0 {
		return 0
	}
	return max(float64(w.sys.busy-w.cpu), 0) / float64(w.sys.total)
}

func (w *window) steal() float64 {
	if w.sys.total <= 0 {
		return 0
	}
	return float64(w.sys.steal) / float64(w.sys.total)
}

// waitQuiet waits, up to limit, for 2 s in which other processes and the
// host together take less than 15% of the machine's CPUs; it reports
// whether it found them.
func waitQuiet(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		m := &meter{}
		m.start()
		time.Sleep(2 * time.Second)
		w := m.stop()
		if busy := w.others() + w.steal(); busy < 0.15 {
			return true
		} else if time.Now().After(deadline) {
			fmt.Printf("the machine is busy: other processes %.0f%%, host %.0f%%; measuring anyway\n", 100*w.others(), 100*w.steal())
			return false
		}
	}
}

// cpuShare is the share of all CPUs the process used in w.
func (w *window) cpuShare() float64 {
	return float64(w.cpu) / float64(w.took) / float64(runtime.NumCPU())
}

// out is a voice.Output that costs next to nothing: it counts the audio
// and measures each frame's lateness against a 20 ms schedule that starts
// with the turn's first frame (the pacer's own schedule, seen from the
// transport), and ignores the text events. Audio, AudioStart and
// AudioDone come from the pacer's goroutine only.
type out struct {
	m *meter
	// bareGap > 0 (bare pacers, which announce no turns): a gap this long
	// starts a new schedule.
	bareGap time.Duration

	t0, last time.Time
	k        int64
	started  bool
	done     chan struct{} // optional: a turn's audio ended (capacity 1)
}

func (o *out) Delta(string, string)                    {}
func (o *out) TurnDone(string, string, bool)           {}
func (o *out) Transcript(string, string, string, bool) {}
func (o *out) Ended(call.Outcome, string)              {}
func (o *out) SpeechStarted()                          {}
func (o *out) SpeechStopped()                          {}
func (o *out) AudioPause(string, int64)                {}
func (o *out) AudioResume(string, int64)               {}
func (o *out) AudioStart(string) {
	o.started = false
	if w := o.m.cur.Load(); w != nil {
		w.starts.Add(1)
	}
}
func (o *out) AudioClear(string, int64) {
	if w := o.m.cur.Load(); w != nil {
		w.clears.Add(1)
	}
}
func (o *out) AudioDone(string) {
	if o.done != nil {
		select {
		case o.done <- struct{}{}:
		default:
		}
	}
}

func (o *out) Audio(frame []byte) error {
	now := time.Now()
	w := o.m.cur.Load()
	if o.bareGap > 0 && o.started && now.Sub(o.last) > o.bareGap {
		o.started = false
	}
	if !o.started {
		o.t0, o.k, o.started = now, 0, true
	} else {
		o.k++
		if w != nil {
			w.late.Add(now.Sub(o.t0.Add(time.Duration(o.k) * audio.FrameDuration)))
			if now.Sub(o.last) > 3*audio.FrameDuration {
				w.underruns.Add(1)
			}
		}
	}
	o.last = now
	if w != nil {
		w.frames.Add(1)
		w.bytes.Add(int64(len(frame)))
	}
	return nil
}

// benchLog shows the pipeline's warnings and errors (a provider failing).
var benchLog = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// callConfig is one benchmark call.
type callConfig struct {
	In, Out     audio.Format
	STT         speech.Transcriber
	TTS         speech.Synthesizer
	Brain       conversation.Brain
	Detector    vad.Detector // nil: the pipeline's default (WebRTC VAD)
	Endpointing vad.Config
	OnTurn      func(call.Turn)
	Sink        *out
}

// voiceCall is a running call: a voice.Pipeline and the conversation
// engine on it, as the gateway wires them.
type voiceCall struct {
	p          *voice.Pipeline
	in         chan conversation.Input
	engineDone chan struct{}
	pipeDone   chan struct{}
	cancel     context.CancelFunc
	reason     string
	runErr     error
}

func startCall(cc callConfig, id int) (*voiceCall, error) {
	c := &voiceCall{in: make(chan conversation.Input), engineDone: make(chan struct{}), pipeDone: make(chan struct{})}
	p, err := voice.New(voice.Config{
		In: cc.In, Out: cc.Out, Transcriber: cc.STT, Synthesizer: cc.TTS, Detector: cc.Detector,
		Endpointing: cc.Endpointing, Log: benchLog,
		Input: func(i conversation.Input) bool {
			select {
			case c.in <- i:
				return true
			case <-c.engineDone:
				return false
			}
		},
	}, cc.Sink)
	if err != nil {
		return nil, err
	}
	c.p = p
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.pipeDone)
		c.runErr = p.Run(ctx)
	}()
	a := assistant.Defaults(assistant.DefaultProviders())
	a.FirstMessage = ""
	a.MaxDurationSeconds, a.SilenceTimeoutSeconds = 3600, 600
	store := &voicetest.Store{OnTurn: cc.OnTurn, Discard: true}
	go func() {
		defer close(c.engineDone)
		c.reason = conversation.Run(ctx, conversation.Config{
			Call: call.Call{ID: fmt.Sprintf("call_%d", id), OrgID: "org_bench"}, Assistant: a, Brain: cc.Brain,
			Turns: store, Ender: store,
		}, c.in, p)
	}()
	return c, nil
}

// stop hangs up and waits for the engine and the pipeline.
func (c *voiceCall) stop() error {
	select {
	case c.in <- conversation.Input{Kind: conversation.Hangup}:
	case <-c.engineDone:
	}
	<-c.engineDone
	c.cancel()
	<-c.pipeDone
	if c.reason != call.ReasonCustomerEnded {
		return errors.New("call ended " + c.reason)
	}
	return nil
}

// stopAll stops calls concurrently and returns the first error.
func stopAll(calls []*voiceCall) error {
	var wg sync.WaitGroup
	errs := make([]error, len(calls))
	for i, c := range calls {
		wg.Go(func() { errs[i] = c.stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// script is what every caller says, on a loop: the utterance's frames,
// then silence up to the cycle's length. Callers are spread over the
// cycle by their phase.
type script struct {
	speech  [][]byte
	silence []byte
	cycle   int          // frames
	hush    *atomic.Bool // when set, every caller is silent
}

func (s script) frame(n int) []byte {
	if i := n % s.cycle; i >= 0 && i < len(s.speech) {
		return s.speech[i]
	}
	return s.silence
}

// framesOf cuts pcm (at f's rate) into 20 ms frames of f's wire bytes.
func framesOf(f audio.Format, pcm []int16) [][]byte {
	spf := f.SamplesPerFrame()
	var out [][]byte
	for i := 0; i+spf <= len(pcm); i += spf {
		out = append(out, voicetest.Encode(f, pcm[i:i+spf]))
	}
	return out
}

// writer is one caller's line: where its frames go and where in the
// script it starts (phase ≥ 0).
type writer struct {
	write func([]byte) error
	phase int
}

// feed sends every writer its script's next frame every 20 ms, on an
// absolute schedule (a late round is followed by catch-up rounds), until
// ctx is done, recording in m's window how late each round started. One goroutine
// feeds a shard of callers, as one reader goroutine per connection would,
// without a timer per call. While s.hush is set the callers are silent.
func feed(ctx context.Context, ws []writer, s script, m *meter) {
	start := time.Now()
	t := time.NewTimer(0)
	defer t.Stop()
	for n := 0; ; n++ {
		due := start.Add(time.Duration(n) * audio.FrameDuration)
		if d := time.Until(due); d > 0 {
			t.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		if w := m.cur.Load(); w != nil {
			w.lag.Add(time.Since(due))
		}
		hush := s.hush != nil && s.hush.Load()
		for _, w := range ws {
			if hush {
				_ = w.write(s.silence)
				continue
			}
			_ = w.write(s.frame(n + w.phase))
		}
	}
}

// feedAll starts feeders over ws in shards of at most shard; stop them by
// canceling ctx and waiting on the returned group.
func feedAll(ctx context.Context, ws []writer, s script, shard int, m *meter) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < len(ws); i += shard {
		part := ws[i:min(i+shard, len(ws))]
		wg.Go(func() { feed(ctx, part, s, m) })
	}
	return &wg
}

// quantile is the q-th quantile of ds (which it sorts), nearest rank.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[max(0, min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1))]
}
