//go:build cgo && speech_native

package voice

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
	"switchboard/internal/call"
	"switchboard/internal/speech"
	"switchboard/internal/speech/local"
	"switchboard/internal/voice/voicetest"
)

// The caller's phrases over the assistant: interruptions must stop it, a
// backchannel must not cut its turn.
var (
	localInterruptions = []string{"Wait, stop, I have a question", "hold on I have a question about my bill"}
	localBackchannels  = []string{"uh-huh", "yeah"}
)

// The assistant's reply the caller talks over (its opening): about 4.5 s
// of espeak-ng at 150 words a minute.
const localReply = "We are open from nine in the morning until five, and on Fridays until two."

// stopBudget is issue 9's goal: the caller hears the assistant stop within
// 400 ms of starting to speak.
const stopBudget = 400 * time.Millisecond

// lineNoiseDBFS is the caller's line between and under the words: a
// microphone's or a phone line's noise floor. (Digital silence would be
// unrealistic, and the WebRTC VAD answers its first frames of sound
// after it with its warm-up.)
const lineNoiseDBFS = -60

// TestBargeInLocal is issue 9's measurement, on the local engines
// (pocketsphinx, espeak-ng, the WebRTC VAD) in real time: the assistant
// speaks a reply; 1 s into its audio the caller says a phrase (espeak-ng,
// over line noise). For an interruption, the time from the phrase's
// onset (its first frame of sound written to the pipeline) to the last
// frame of the reply sent is measured (at most 400 ms under make
// bench-bargein), and the turn is cut; for a backchannel, the reply plays
// in full (after a pause and resume).
//
// make test runs one interruption and one backchannel on a web call's
// 16 kHz line; make bench-bargein (SWITCHBOARD_BENCH_BARGEIN=1) runs every
// phrase on both lines, three times, and prints the figures for
// docs/benchmarks.md.
func TestBargeInLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("real time on the local engines; make test runs it")
	}
	tts, err := local.NewSynthesizer(local.SynthesizerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stt, err := local.NewTranscriber(local.TranscriberOptions{})
	if err != nil {
		t.Fatalf("local transcriber: %v (make test installs pocketsphinx)", err)
	}
	t.Cleanup(func() { _ = stt.(io.Closer).Close() })

	web := audio.PipelineFormat
	phone := audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}
	bench := os.Getenv("SWITCHBOARD_BENCH_BARGEIN") != ""
	var trials []localTrial
	if bench {
		for range 3 {
			for _, f := range []audio.Format{web, phone} {
				for _, p := range localInterruptions {
					trials = append(trials, localTrial{phrase: p, cut: true, line: f})
				}
				for _, p := range localBackchannels {
					trials = append(trials, localTrial{phrase: p, line: f})
				}
			}
		}
	} else {
		trials = []localTrial{{phrase: localInterruptions[0], cut: true, line: web}, {phrase: localBackchannels[1], line: web}}
	}

	// Parallel subtests: two calls at a time (go test's -parallel is
	// GOMAXPROCS), what a small server sees.
	results := make([]localResult, len(trials))
	t.Run("calls", func(t *testing.T) {
		for i, tr := range trials {
			t.Run(fmt.Sprintf("%d", i), func(t *testing.T) {
				t.Parallel()
				results[i] = runLocalTrial(t, tts, stt, tr)
			})
		}
	})

	var stops, cuts, pauses []time.Duration
	kept := 0 // backchannels that did not cut the turn
	for i, r := range results {
		tr := trials[i]
		if r.gaps > 2*audio.FrameDuration {
			t.Logf("%s %q: the reply's audio had %d ms of gaps: the machine is too busy for these figures", lineName(tr.line), tr.phrase, r.gaps.Milliseconds())
		}
		if tr.cut {
			t.Logf("%s %-42q stopped after %3d ms, cut after %4d ms (recognized %q); heard %q",
				lineName(tr.line), tr.phrase, r.stop.Milliseconds(), r.cutAfter.Milliseconds(), r.heardAs, r.heard)
		} else {
			t.Logf("%s %-42q paused %v for %4d ms (recognized %q), played in full %v",
				lineName(tr.line), tr.phrase, r.paused, r.pausedFor.Milliseconds(), r.heardAs, r.played && !r.interrupted)
		}
		if tr.cut {
			stops = append(stops, r.stop)
			cuts = append(cuts, r.cutAfter)
			if !r.interrupted {
				t.Errorf("%s: %q over the assistant did not cut its turn (turn.done %q)", lineName(tr.line), tr.phrase, r.heard)
			}
			// The budget is a figure of the benchmark (make bench-bargein, on
			// an idle machine); make test's run asserts the behaviour and
			// logs the figure: a loaded machine slows the stop down.
			if bench && r.stop > stopBudget {
				t.Errorf("%s: %q: the assistant's last frame went out %d ms after the caller's onset, want ≤ %d ms",
					lineName(tr.line), tr.phrase, r.stop.Milliseconds(), stopBudget.Milliseconds())
			}
			continue
		}
		pauses = append(pauses, r.pausedFor)
		if r.interrupted || r.heard != localReply || !r.played {
			t.Errorf("%s: the backchannel %q cut the turn: turn.done %q interrupted=%v, played in full %v; want the whole reply",
				lineName(tr.line), tr.phrase, r.heard, r.interrupted, r.played)
		} else {
			kept++
		}
	}
	t.Logf("onset → the reply's last frame, over %d interruptions: %s", len(stops), p50max(stops))
	t.Logf("onset → the turn cut (assistant.audio.clear), the same: %s", p50max(cuts))
	t.Logf("backchannels: %d of %d resumed and played in full; pause → resume %s", kept, len(pauses), p50max(pauses))
}

// p50max formats the median and the maximum of d.
func p50max(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	d = slices.Sorted(slices.Values(d))
	return fmt.Sprintf("p50 %d ms, max %d ms", d[(len(d)-1)/2].Milliseconds(), d[len(d)-1].Milliseconds())
}

type localTrial struct {
	phrase string
	cut    bool // an interruption (else a backchannel)
	line   audio.Format
}

type localResult struct {
	stop        time.Duration // caller's onset → the reply's last frame sent
	gaps        time.Duration // silences inside the reply's audio: the pacer ran dry (an overloaded machine)
	cutAfter    time.Duration // caller's onset → assistant.audio.clear, if it came
	paused      bool
	interrupted bool
	played      bool          // assistant.audio.done for the reply
	heard       string        // the reply's turn.done text
	heardAs     string        // what the recognizer made of the phrase
	pausedFor   time.Duration // audio.pause → audio.resume, when it resumed
}

func lineName(f audio.Format) string {
	if f.Encoding == audio.Mulaw {
		return "phone (μ-law 8 kHz)"
	}
	return "web (PCM16 16 kHz)"
}

// runLocalTrial runs one call: the assistant opens with localReply, and
// the caller says tr.phrase 1 s into its audio.
func runLocalTrial(t *testing.T, tts speech.Synthesizer, stt speech.Transcriber, tr localTrial) localResult {
	det, err := vad.NewWebRTC(2)
	if err != nil {
		t.Fatal(err)
	}
	brain := &voicetest.Brain{Opening: localReply, Default: "Sure."}
	c := startCall(t, callSetup{cfg: Config{In: tr.line, Out: tr.line, Transcriber: stt, Synthesizer: tts, Detector: det}, brain: brain})
	defer c.close()

	phrase := lineSpeech(t, tts, tr.phrase, tr.line.SampleRate)
	spf := tr.line.SamplesPerFrame()
	onset := -1 // the phrase's first frame of sound
	for i := 0; i+spf <= len(phrase); i += spf {
		if audio.RMS(phrase[i:i+spf]) > 100 {
			onset = i / spf
			break
		}
	}
	line := &callerLine{c: c, format: tr.line, rng: rand.New(rand.NewPCG(uint64(len(tr.phrase)), 9))}
	if !line.noiseUntil(voicetest.Is("audio.start", "turn_1"), 30*time.Second) {
		t.Errorf("%s %q: no audio for the reply within 30 s; events:\n%s", lineName(tr.line), tr.phrase, c.dump())
		return localResult{}
	}
	line.noise(time.Second)
	var onsetAt time.Time
	for i := 0; i*spf < len(phrase); i++ {
		if i == onset {
			onsetAt = time.Now()
		}
		line.frame(phrase[i*spf : min((i+1)*spf, len(phrase))])
	}
	if !line.noiseUntil(voicetest.Is("turn.done", "turn_1"), 30*time.Second) {
		t.Errorf("%s %q: the reply did not end within 30 s; events:\n%s", lineName(tr.line), tr.phrase, c.dump())
		return localResult{}
	}
	done, _ := c.out.Find(voicetest.Is("turn.done", "turn_1"))
	a := c.out.TurnAudio("turn_1")
	_, played := c.out.Find(voicetest.Is("audio.done", "turn_1"))
	// What the recognizer made of the phrase: the final of an
	// interruption (a caller turn), the last partial of a backchannel
	// (withdrawn, it leaves no final).
	if tr.cut {
		line.noiseUntil(func(e voicetest.Event) bool { return e.Kind == "transcript" && e.Role == call.RoleUser && e.Flag }, 5*time.Second)
	}
	var heardAs string
	for _, e := range c.out.Events() {
		if e.Kind == "transcript" && e.Role == call.RoleUser && e.Text != "" {
			heardAs = e.Text
		}
	}
	pause, _ := c.out.Find(voicetest.Is("audio.pause", "turn_1"))
	var cutAfter time.Duration
	if clr, ok := c.out.Find(voicetest.Is("audio.clear", "turn_1")); ok {
		cutAfter = clr.At.Sub(onsetAt)
	}
	var pausedFor time.Duration
	if resume, ok := c.out.Find(voicetest.Is("audio.resume", "turn_1")); ok {
		pausedFor = resume.At.Sub(pause.At)
	}
	c.hangup()
	c.end(10 * time.Second)
	return localResult{
		stop: a.Last.Sub(onsetAt), gaps: a.Last.Sub(a.First) + audio.FrameDuration - time.Duration(a.Frames)*audio.FrameDuration - pausedFor, cutAfter: cutAfter, paused: !pause.At.IsZero(),
		interrupted: done.Flag, played: played, heard: done.Text, heardAs: heardAs, pausedFor: pausedFor,
	}
}

// lineSpeech is text spoken by espeak-ng at rate Hz.
func lineSpeech(t *testing.T, tts speech.Synthesizer, text string, rate int) []int16 {
	var pcm []int16
	err := tts.Synthesize(t.Context(), text, speech.VoiceOptions{SampleRate: rate}, func(p []int16) error {
		pcm = append(pcm, p...)
		return nil
	})
	if err != nil {
		t.Fatalf("synthesizing %q: %v", text, err)
	}
	return pcm
}

// callerLine writes the caller's side of a call in real time, one frame
// every 20 ms on an absolute schedule, with line noise under everything.
type callerLine struct {
	c      *testCall
	format audio.Format
	rng    *rand.Rand
	start  time.Time
	n      int
	buf    []int16
}

// frame writes one frame of pcm (shorter is padded) over the line noise.
func (l *callerLine) frame(pcm []int16) {
	if l.start.IsZero() {
		l.start = time.Now()
	}
	spf := l.format.SamplesPerFrame()
	l.buf = append(l.buf[:0], pcm...)
	l.buf = append(l.buf, make([]int16, spf-len(l.buf))...)
	amp := 32768 * math.Pow(10, lineNoiseDBFS/20.0) * math.Sqrt(3) // uniform noise of that RMS
	for i, v := range l.buf {
		l.buf[i] = int16(max(-32768, min(32767, float64(v)+(l.rng.Float64()*2-1)*amp)))
	}
	time.Sleep(time.Until(l.start.Add(time.Duration(l.n) * audio.FrameDuration)))
	l.n++
	if err := l.c.p.Write(voicetest.Encode(l.format, l.buf)); err != nil {
		l.c.t.Fatalf("Write: %v", err)
	}
}

// noise writes d of line noise.
func (l *callerLine) noise(d time.Duration) {
	for range int(d / audio.FrameDuration) {
		l.frame(nil)
	}
}

// noiseUntil writes line noise until an event matches; false after limit.
func (l *callerLine) noiseUntil(match func(voicetest.Event) bool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, ok := l.c.out.Find(match); ok {
			return true
		}
		l.frame(nil)
	}
	return false
}
