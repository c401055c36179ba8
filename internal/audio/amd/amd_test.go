package amd

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// frames builds a pattern of 20 ms frames at rate: '#' speech (noise the
// caller's VAD calls speech), '.' silence, 'b' a 1000 Hz tone at −12
// dBFS, 'w' a 400 Hz tone (outside the beep band).
type frame struct {
	pcm    []int16
	speech bool
}

func pattern(rate int, p string) []frame {
	n := rate / 50
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]frame, 0, len(p))
	phase := 0
	for _, c := range p {
		pcm := make([]int16, n)
		switch c {
		case '#':
			for i := range pcm {
				pcm[i] = int16(r.NormFloat64() * 3000)
			}
		case 'b', 'w':
			hz := 1000.0
			if c == 'w' {
				hz = 400
			}
			for i := range pcm {
				pcm[i] = int16(8000 * math.Sin(2*math.Pi*hz*float64(phase+i)/float64(rate)))
			}
		}
		phase += n
		out = append(out, frame{pcm, c == '#'})
	}
	return out
}

func rep(s string, ms int) string { return strings.Repeat(s, ms/20) }

func run(t *testing.T, cfg Config, p string) *Detector {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	for i, f := range pattern(d.cfg.SampleRate, p) {
		if _, err := d.Frame(f.pcm, f.speech); err != nil {
			t.Fatalf("Frame #%d: %v", i, err)
		}
	}
	return d
}

func TestRules(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		result  Result
		reason  Reason
		at      time.Duration
	}{
		{"hello then silence", rep(".", 400) + rep("#", 600) + rep(".", 2000), Human, ReasonShortGreeting, 1800 * time.Millisecond},
		{"two words with a comma's pause", rep(".", 400) + rep("#", 500) + rep(".", 300) + rep("#", 900) + rep(".", 2000), Human, ReasonShortGreeting, 2900 * time.Millisecond},
		{"a long greeting", rep(".", 400) + rep("#", 1200) + rep(".", 400) + rep("#", 3000), Machine, ReasonGreeting, 2400 * time.Millisecond},
		{"a short greeting and a beep", rep(".", 400) + rep("#", 600) + rep(".", 400) + rep("b", 400) + rep(".", 2000), Machine, ReasonBeep, 1560 * time.Millisecond},
		{"a beep too short", rep(".", 400) + rep("#", 600) + rep(".", 200) + rep("b", 100) + rep(".", 2000), Human, ReasonShortGreeting, 1800 * time.Millisecond},
		{"a low tone is no beep", rep(".", 400) + rep("w", 400) + rep("#", 600) + rep(".", 2000), Human, ReasonShortGreeting, 2200 * time.Millisecond},
		{"silence to the deadline", rep(".", 6000), Undecided, ReasonSilence, 5 * time.Second},
		{"talk, pause, talk, pause to the deadline", rep(".", 400) + rep("#", 700) + rep(".", 600) + rep("#", 700) + rep(".", 600) + rep("#", 700) + rep(".", 600) + rep("#", 700) + rep(".", 1000),
			Machine, ReasonGreeting, 5 * time.Second},
	}
	for _, rate := range []int{8000, 16000} {
		for _, tt := range tests {
			d := run(t, Config{SampleRate: rate}, tt.pattern)
			got := d.Decision()
			if got.Result != tt.result || got.Reason != tt.reason || got.At != tt.at || !got.Final {
				t.Errorf("%d Hz, %s: Decision() = %v by %v at %v (final %v), want %v by %v at %v",
					rate, tt.name, got.Result, got.Reason, got.At, got.Final, tt.result, tt.reason, tt.at)
			}
		}
	}
}

// TestBeepAndCue: the beep's bounds to the frame, and the cue to leave a
// message at its end; without a beep, the cue after CueSilenceMs.
func TestBeepAndCue(t *testing.T) {
	d := run(t, Config{}, rep(".", 400)+rep("#", 3000)+rep(".", 500)+rep("b", 400)+rep(".", 1000))
	start, end, ended, ok := d.Beep()
	if !ok || !ended || start != 3900*time.Millisecond || end != 4300*time.Millisecond {
		t.Errorf("Beep() = %v, %v, ended %v, ok %v; want 3.9s, 4.3s, true, true", start, end, ended, ok)
	}
	if at, afterBeep, ok := d.Cue(); !ok || !afterBeep || at != 4300*time.Millisecond {
		t.Errorf("Cue() = %v, afterBeep %v, ok %v; want 4.3s, true, true", at, afterBeep, ok)
	}
	if got := d.Decision(); got.Result != Machine || got.Reason != ReasonGreeting {
		t.Errorf("Decision() = %v by %v, want machine by greeting", got.Result, got.Reason)
	}

	d = run(t, Config{}, rep(".", 400)+rep("#", 3000)+rep(".", 2000))
	if at, afterBeep, ok := d.Cue(); !ok || afterBeep || at != 4900*time.Millisecond {
		t.Errorf("no beep: Cue() = %v, afterBeep %v, ok %v; want 4.9s (1.5 s after the greeting), false, true", at, afterBeep, ok)
	}
	d = run(t, Config{}, rep(".", 400)+rep("#", 600)+rep(".", 3000))
	if _, _, ok := d.Cue(); ok {
		t.Errorf("human: Cue() ok, want no cue")
	}
}

func TestTranscript(t *testing.T) {
	d, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pattern(8000, rep(".", 400)+rep("#", 600)) {
		if _, err := d.Frame(f.pcm, f.speech); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Transcript("hi you've reached dana"); got.Final {
		t.Fatalf("Transcript without a phrase decided: %+v", got)
	}
	got := d.Transcript("Please leave a message.")
	if got.Result != Machine || got.Reason != ReasonPhrase || got.Phrase != "leave a message" || got.At != time.Second {
		t.Errorf("Transcript(%q) = %+v, want machine by phrase %q at 1s", "Please leave a message.", got, "leave a message")
	}
	// Decided once: later input changes nothing.
	if got2 := d.Transcript("hello"); got2 != got {
		t.Errorf("Transcript after the decision = %+v, want %+v", got2, got)
	}
}

func TestMatchPhrase(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"Hi, you've reached Dana. Please leave a message after the tone.", "leave a message"},
		{"I'm not available right now", "not available"},
		{"YOUR CALL HAS BEEN FORWARDED TO AN AUTOMATED VOICE-MAIL SYSTEM", "voice mail"},
		{"the mailbox is full", "mailbox"},
		{"I can’t take your call", "can't take your call"},
		{"record your message at the beep", "at the beep"},
		{"hello who is this", ""},
		{"we are unavailable", "unavailable"},
		{"voicemailbox", ""}, // words, not substrings
		{"", ""},
	} {
		if got := MatchPhrase(tt.text); got != tt.want {
			t.Errorf("MatchPhrase(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, c := range []Config{{SampleRate: 44100}, {GreetingMs: -1}, {DecideByMs: 1}, {ToneRatio: 1.5}, {CueMaxMs: 1 << 30}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) = nil error, want one", c)
		}
	}
	d, _ := New(Config{SampleRate: 16000})
	if _, err := d.Frame(make([]int16, 160), false); !errors.Is(err, ErrFrame) {
		t.Errorf("Frame(160 samples) at 16 kHz: err = %v, want ErrFrame", err)
	}
}

func TestFrameAllocs(t *testing.T) {
	d, _ := New(Config{})
	fs := pattern(8000, rep("#", 200)+rep("b", 200))
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		f := fs[i%len(fs)]
		i++
		_, _ = d.Frame(f.pcm, f.speech)
	}); n != 0 {
		t.Errorf("Frame allocates %v times a frame, want 0", n)
	}
}

func BenchmarkFrame(b *testing.B) {
	d, _ := New(Config{SampleRate: 16000})
	f := pattern(16000, "#")[0]
	for b.Loop() {
		_, _ = d.Frame(f.pcm, true)
	}
}

// FuzzFrames feeds arbitrary frames and flags: the detector never fails
// on a well-sized frame, decides by the deadline, and decides once.
func FuzzFrames(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, uint8(3), false)
	f.Add(make([]byte, 640), uint8(0xff), true)
	f.Fuzz(func(t *testing.T, data []byte, flags uint8, wide bool) {
		cfg := Config{}
		if wide {
			cfg.SampleRate = 16000
		}
		d, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := d.FrameSamples()
		pcm := make([]int16, n)
		var first Decision
		for i := range 300 { // 6 s
			for j := range pcm {
				k := (i*n + j) * 2
				if len(data) > 0 {
					pcm[j] = int16(uint16(data[k%len(data)]) | uint16(data[(k+1)%len(data)])<<8)
				}
			}
			got, err := d.Frame(pcm, flags>>(i%8)&1 == 1)
			if err != nil {
				t.Fatalf("Frame #%d: %v", i, err)
			}
			if got.Final && !first.Final {
				first = got
			}
			if first.Final && got != first {
				t.Fatalf("decision changed from %+v to %+v", first, got)
			}
		}
		if !first.Final || first.At > 5*time.Second {
			t.Fatalf("after 6 s: first decision %+v, want one by 5 s", first)
		}
		if s, e, ended, ok := d.Beep(); ok && ended && e <= s {
			t.Fatalf("Beep() = %v..%v", s, e)
		}
	})
}

// TestReset: a reset detector decides afresh, as a new one would.
func TestReset(t *testing.T) {
	d := run(t, Config{}, rep(".", 400)+rep("#", 3000)+rep("b", 400))
	d.Reset()
	if got := d.Decision(); got.Final || d.Elapsed() != 0 {
		t.Fatalf("after Reset: Decision() = %+v, Elapsed() = %v, want undecided at 0", got, d.Elapsed())
	}
	if _, _, _, ok := d.Beep(); ok {
		t.Fatal("after Reset: Beep() ok")
	}
	for _, f := range pattern(8000, rep(".", 400)+rep("#", 600)+rep(".", 1000)) {
		if _, err := d.Frame(f.pcm, f.speech); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Decision(); got.Result != Human || got.At != 1800*time.Millisecond {
		t.Errorf("after Reset, hello then silence: Decision() = %v at %v, want human at 1.8s", got.Result, got.At)
	}
}
