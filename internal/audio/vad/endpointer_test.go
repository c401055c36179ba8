package vad

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"switchboard/internal/audio"
)

// at is an event and the index of the frame whose Process returned it.
type at struct {
	Frame int
	Event Event
}

func (a at) String() string { return fmt.Sprintf("%v@%d", a.Event, a.Frame) }

// oracle wraps Energy and fails the test as soon as it disagrees with the
// signal's labels, so an Endpointer test that fails is about endpointing.
type oracle struct {
	t      testing.TB
	e      *Energy
	labels []bool
	i      int
}

func (o *oracle) IsSpeech(frame []int16) (bool, error) {
	got, err := o.e.IsSpeech(frame)
	if err == nil && got != o.labels[o.i] {
		o.t.Fatalf("Energy.IsSpeech(frame %d at %.1f dBFS) = %v, want %v: the oracle is wrong, not the Endpointer",
			o.i, audio.DBFS(frame), got, o.labels[o.i])
	}
	o.i++
	return got, err
}

// run feeds s to a new Endpointer, calling SetSentenceEnded(v) before the
// frames in sentence, and returns its events.
func run(t *testing.T, cfg Config, s *signal, sentence map[int]bool) []at {
	t.Helper()
	ep, err := NewEndpointer(&oracle{t: t, e: newEnergy(t), labels: s.labels}, cfg)
	if err != nil {
		t.Fatalf("NewEndpointer(%+v) error %v", cfg, err)
	}
	var got []at
	for i, f := range s.frames() {
		if v, ok := sentence[i]; ok {
			ep.SetSentenceEnded(v)
		}
		if ev := ep.Process(f); ev != None {
			got = append(got, at{i, ev})
		}
	}
	return got
}

func started(f int) at { return at{f, SpeechStarted} }
func stopped(f int) at { return at{f, SpeechStopped} }

// The default configuration in frames: MinSpeech 6, Silence 25,
// FastSilence 13, MaxWait 125, PreRoll 10. An utterance whose first voiced
// frame is v starts at v+5; one whose last voiced frame is l stops at l+25.
func TestEndpointerEvents(t *testing.T) {
	strays := newSignal(14).noise(50).voiced(50)
	for range 8 {
		strays.noise(19).blip() // a stray voiced frame every 400 ms
	}
	strays.noise(50)

	tests := []struct {
		name     string
		cfg      Config
		sig      *signal
		sentence map[int]bool
		want     []at
	}{
		{name: "line noise only", sig: newSignal(1).noise(200)},
		{name: "digital silence only", sig: newSignal(1).zeros(100)},
		{name: "noise burst shorter than MinSpeech", sig: newSignal(2).noise(50).voiced(5).noise(100)},
		{name: "stray voiced frames", sig: newSignal(3).noise(20).blip().noise(3).blip().noise(10).blip().blip().noise(20)},
		{
			name: "burst of exactly MinSpeech",
			sig:  newSignal(4).noise(50).voiced(6).noise(50),
			want: []at{started(55), stopped(80)},
		},
		{
			name: "1 s utterance",
			sig:  newSignal(5).noise(50).voiced(50).noise(100),
			want: []at{started(55), stopped(124)},
		},
		{
			name: "speech from the first frame",
			sig:  newSignal(6).voiced(50).noise(50),
			want: []at{started(5), stopped(74)},
		},
		{
			name: "mid-utterance pause one frame shorter than SilenceMs",
			sig:  newSignal(7).noise(50).voiced(25).noise(24).voiced(25).noise(50),
			want: []at{started(55), stopped(148)},
		},
		{
			name: "pause of SilenceMs splits the utterance",
			sig:  newSignal(8).noise(50).voiced(25).noise(25).voiced(25).noise(50),
			want: []at{started(55), stopped(99), started(105), stopped(149)},
		},
		{
			name: "one-frame dropout in the onset",
			sig:  newSignal(9).noise(50).voiced(3).noise(1).voiced(20).noise(50),
			want: []at{started(55), stopped(98)},
		},
		{
			name: "two-frame dropout in the onset",
			sig:  newSignal(10).noise(50).voiced(2).noise(2).voiced(20).noise(50),
			want: []at{started(55), stopped(98)},
		},
		{
			name: "three-frame dropout restarts the onset",
			sig:  newSignal(11).noise(50).voiced(3).noise(3).voiced(20).noise(50),
			want: []at{started(61), stopped(100)},
		},
		{
			name: "MinSpeech reached on a dropout starts at the next voiced frame",
			sig:  newSignal(12).noise(50).voiced(5).noise(2).voiced(20).noise(50),
			want: []at{started(57), stopped(101)},
		},
		{
			name:     "FastSilence once the sentence ended during speech",
			sig:      newSignal(13).noise(50).voiced(50).noise(100),
			sentence: map[int]bool{90: true},
			want:     []at{started(55), stopped(112)},
		},
		{
			name:     "sentence ended after FastSilence had passed stops at once",
			sig:      newSignal(13).noise(50).voiced(50).noise(100),
			sentence: map[int]bool{115: true},
			want:     []at{started(55), stopped(115)},
		},
		{
			name:     "sentence end retracted by a later partial",
			sig:      newSignal(13).noise(50).voiced(50).noise(100),
			sentence: map[int]bool{90: true, 105: false},
			want:     []at{started(55), stopped(124)},
		},
		{
			name:     "sentence end set before the utterance is ignored",
			sig:      newSignal(13).noise(50).voiced(50).noise(100),
			sentence: map[int]bool{10: true},
			want:     []at{started(55), stopped(124)},
		},
		{
			name:     "sentence end does not carry over to the next utterance",
			sig:      newSignal(13).noise(50).voiced(50).noise(50).voiced(50).noise(50),
			sentence: map[int]bool{90: true},
			want:     []at{started(55), stopped(112), started(155), stopped(224)},
		},
		{
			name: "MaxWait ends a turn held open by stray voiced frames",
			sig:  strays,
			want: []at{started(55), stopped(99 + 125)},
		},
		{
			name: "an utterance longer than MaxWait is not cut",
			cfg:  Config{MaxWaitMs: 1000},
			sig:  newSignal(15).noise(50).voiced(100).noise(50),
			want: []at{started(55), stopped(174)},
		},
		{
			name: "short settings, rounded up to frames",
			cfg:  Config{MinSpeechMs: 20, SilenceMs: 90, FastSilenceMs: 50, MaxWaitMs: 100, PreRollMs: 40},
			sig:  newSignal(16).noise(10).voiced(10).noise(20).blip().noise(20),
			want: []at{started(10), stopped(24), started(40), stopped(45)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := run(t, tt.cfg, tt.sig, tt.sentence)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Endpointer(%+v).Process over %s, sentence ended %v: events %v, want %v", tt.cfg, tt.name, tt.sentence, got, tt.want)
			}
		})
	}
}

// TestEndpointerPreRoll checks which frames PreRoll returns: the onset
// candidate up to the SpeechStarted frame, after up to PreRollMs before it.
func TestEndpointerPreRoll(t *testing.T) {
	tests := []struct {
		name        string
		sig         *signal
		start       int // the SpeechStarted frame
		first, last int // the frames PreRoll returns
	}{
		{"1 s utterance", newSignal(1).noise(50).voiced(50).noise(30), 55, 40, 55},
		{"speech 60 ms in", newSignal(2).noise(3).voiced(50).noise(30), 8, 0, 8},
		{"speech from the first frame", newSignal(3).voiced(50).noise(30), 5, 0, 5},
		{"onset with a dropout", newSignal(4).noise(50).voiced(5).noise(1).voiced(20).noise(30), 56, 40, 56},
		{"longest onset", newSignal(5).noise(50).voiced(5).noise(2).voiced(20).noise(30), 57, 40, 57},
		// The second onset's pre-roll starts after the first utterance's
		// last frame (124), which STT already had.
		{"second utterance soon after the first", newSignal(6).noise(50).voiced(50).noise(30).voiced(20).noise(30), 135, 125, 135},
	}
	for _, tt := range tests {
		ep, err := NewEndpointer(&oracle{t: t, e: newEnergy(t), labels: tt.sig.labels}, Config{})
		if err != nil {
			t.Fatalf("NewEndpointer error %v", err)
		}
		frames := tt.sig.frames()
		want := frames[tt.first : tt.last+1]
		for i, f := range frames {
			ev := ep.Process(f)
			pre := ep.PreRoll()
			switch {
			case i < tt.start:
				continue
			case i == tt.start && ev != SpeechStarted:
				t.Fatalf("Endpointer.Process(%s, frame %d) = %v, want %v", tt.name, i, ev, SpeechStarted)
			case ep.Speaking() && !slices.EqualFunc(pre, want, slices.Equal):
				t.Fatalf("Endpointer.PreRoll() at frame %d of %s: %d frames, want %d (frames %d to %d)", i, tt.name, len(pre), len(want), tt.first, tt.last)
			case !ep.Speaking() && pre != nil:
				t.Fatalf("Endpointer.PreRoll() at frame %d of %s, after the utterance = %d frames, want nil", i, tt.name, len(pre))
			}
			if !ep.Speaking() {
				break
			}
		}
	}
}

// TestEndpointerPreRollIsACopy: the caller may reuse its frame buffer.
func TestEndpointerPreRollIsACopy(t *testing.T) {
	s := newSignal(1).noise(20).voiced(20)
	ep, err := NewEndpointer(newEnergy(t), Config{})
	if err != nil {
		t.Fatalf("NewEndpointer error %v", err)
	}
	buf := make([]int16, audio.FrameSamples)
	for _, f := range s.frames() {
		copy(buf, f)
		ep.Process(buf)
		clear(buf)
	}
	pre := ep.PreRoll()
	if len(pre) != 16 || !slices.Equal(pre[15], s.frames()[25]) {
		t.Fatalf("Endpointer.PreRoll() with a reused frame buffer: %d frames, last equal to frame 25: %v; want 16, true", len(pre), len(pre) > 0 && slices.Equal(pre[len(pre)-1], s.frames()[25]))
	}
	pre[0][0] = 12345
	if again := ep.PreRoll(); again[0][0] == 12345 {
		t.Errorf("Endpointer.PreRoll() returned its own buffer: a write through one result shows in the next")
	}
}

func TestEndpointerDetectorErrors(t *testing.T) {
	ep, err := NewEndpointer(newEnergy(t), Config{})
	if err != nil {
		t.Fatalf("NewEndpointer error %v", err)
	}
	frames := newSignal(1).noise(10).voiced(30).frames()
	for i, f := range frames {
		if i == 20 || i == 30 {
			f = f[:160] // a mis-sized frame while speaking counts as unvoiced
		}
		ep.Process(f)
	}
	n, last := ep.DetectorErrors()
	if n != 2 || !errors.Is(last, ErrFrameSize) {
		t.Errorf("Endpointer.DetectorErrors() after 2 half frames = %d, %v; want 2, ErrFrameSize", n, last)
	}
	if ev := ep.Process(nil); ev != None || !ep.Speaking() {
		t.Errorf("Endpointer.Process(nil) while speaking = %v, speaking %v; want none, true", ev, ep.Speaking())
	}
	ep.Reset()
	if n, last := ep.DetectorErrors(); n != 0 || last != nil || ep.Speaking() || ep.PreRoll() != nil {
		t.Errorf("after Endpointer.Reset(): errors %d, %v, speaking %v, pre-roll %d frames; want 0, nil, false, 0", n, last, ep.Speaking(), len(ep.PreRoll()))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg   Config
		field string // "" for valid
	}{
		{Config{}, ""},
		{DefaultConfig(), ""},
		{Config{SilenceMs: 800, FastSilenceMs: 800, MaxWaitMs: 800}, ""},
		{Config{MinSpeechMs: 2000, PreRollMs: 2000, MaxWaitMs: 60000}, ""},
		{Config{SilenceMs: -1}, "silenceMs"},
		{Config{MinSpeechMs: -20}, "minSpeechMs"},
		{Config{MinSpeechMs: 2001}, "minSpeechMs"},
		{Config{PreRollMs: -1}, "preRollMs"},
		{Config{PreRollMs: 2001}, "preRollMs"},
		{Config{MaxWaitMs: 60001}, "maxWaitMs"},
		{Config{FastSilenceMs: -5}, "fastSilenceMs"},
		{Config{SilenceMs: 3000}, "silenceMs"},        // above the default MaxWait
		{Config{MaxWaitMs: 400}, "silenceMs"},         // below the default Silence
		{Config{FastSilenceMs: 600}, "fastSilenceMs"}, // above the default Silence
		{Config{SilenceMs: 200}, "fastSilenceMs"},     // below the default FastSilence
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if !fieldErr(err, tt.field) {
			t.Errorf("%+v.Validate() = %v, want %s", tt.cfg, err, wantField(tt.field))
		}
		if _, err := NewEndpointer(newEnergy(t), tt.cfg); (err == nil) != (tt.field == "") {
			t.Errorf("NewEndpointer(Energy, %+v) error = %v, want %s", tt.cfg, err, wantField(tt.field))
		}
	}
	if _, err := NewEndpointer(nil, Config{}); !fieldErr(err, "detector") {
		t.Errorf("NewEndpointer(nil, Config{}) error = %v, want %s", err, wantField("detector"))
	}
}

// TestEndpointerWebRTC runs the real detector: events land where the
// labels put them, late by at most libwebrtc's hangover.
func TestEndpointerWebRTC(t *testing.T) {
	for mode := range 4 {
		d, err := NewWebRTC(mode)
		if err != nil {
			t.Fatalf("NewWebRTC(%d) error %v", mode, err)
		}
		ep, err := NewEndpointer(d, Config{})
		if err != nil {
			t.Fatalf("NewEndpointer error %v", err)
		}
		var got []at
		for i, f := range newSignal(uint64(mode)).noise(50).voiced(50).noise(100).voiced(100).noise(100).frames() {
			if ev := ep.Process(f); ev != None {
				got = append(got, at{i, ev})
			}
		}
		ok := len(got) == 4
		for i, w := range []at{started(55), stopped(124), started(205), stopped(324)} {
			ok = ok && got[i].Event == w.Event && got[i].Frame >= w.Frame && got[i].Frame <= w.Frame+hangoverFrames
		}
		if !ok {
			t.Errorf("Endpointer(WebRTC mode %d).Process over two utterances: events %v, want started@55, stopped@124, started@205, stopped@324, each late by at most %d frames",
				mode, got, hangoverFrames)
		}
	}
}

// FuzzEndpointer feeds random frames (and sentence-end flips and mis-sized
// frames) under random settings: Process must never panic, events must
// alternate starting with SpeechStarted, and PreRoll must stay in bounds.
func FuzzEndpointer(f *testing.F) {
	f.Add(uint64(1), []byte{0, 1, 2, 3}, []byte{0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0x0c, 0, 0, 0})
	f.Add(uint64(2), []byte{1, 1, 1, 1}, []byte{0x4f, 0x8f, 0x8f, 0x8f, 0xcf, 0x2f, 0x2f, 0x2f, 0x00, 0x80})
	f.Add(uint64(3), []byte{255, 255, 255, 255, 255}, []byte("speech, silence, speech"))
	f.Fuzz(func(t *testing.T, seed uint64, knobs, script []byte) {
		knob := func(i int, scale int) int {
			if i < len(knobs) {
				return int(knobs[i]) * scale
			}
			return 0
		}
		cfg := Config{
			MinSpeechMs: knob(0, 8), SilenceMs: knob(1, 20), FastSilenceMs: knob(2, 10),
			MaxWaitMs: knob(3, 200), PreRollMs: knob(4, 8),
		}
		if cfg.Validate() != nil {
			cfg = Config{}
		}
		var det Detector = newEnergy(t)
		if seed%2 == 1 {
			var err error
			if det, err = NewWebRTC(int(seed / 2 % 4)); err != nil {
				t.Fatalf("NewWebRTC error %v", err)
			}
		}
		ep, err := NewEndpointer(det, cfg)
		if err != nil {
			t.Fatalf("NewEndpointer(%+v) error %v", cfg, err)
		}
		ring := framesFor(cfg.withDefaults().PreRollMs) + framesFor(cfg.withDefaults().MinSpeechMs) + onsetSlack
		rng := newSignal(seed).rng
		frame := make([]int16, audio.FrameSamples)
		speaking := false
		// Each script byte is 1 to 8 frames of audio chosen by fillFrame;
		// the top bit of every other byte flips the sentence-end flag.
		for i, b := range script {
			if i%2 == 1 && b&0x80 != 0 {
				ep.SetSentenceEnded(b&0x40 != 0)
			}
			for range 1 + int(b>>6&1)*7 {
				fillFrame(frame, b, rng)
				in := frame
				if b == 0xff {
					in = frame[:rng.IntN(audio.FrameSamples)]
				}
				ev := ep.Process(in)
				switch {
				case ev == SpeechStarted && speaking, ev == SpeechStopped && !speaking:
					t.Fatalf("Endpointer(%+v).Process(script %x, byte %d) = %v while speaking=%v: events must alternate", cfg, script, i, ev, speaking)
				case ev == SpeechStarted:
					speaking = true
				case ev == SpeechStopped:
					speaking = false
				}
				if ep.Speaking() != speaking {
					t.Fatalf("Endpointer.Speaking() = %v after the events said %v", ep.Speaking(), speaking)
				}
				pre := ep.PreRoll()
				if speaking && (len(pre) == 0 || len(pre) > ring) || !speaking && pre != nil {
					t.Fatalf("Endpointer(%+v).PreRoll() = %d frames while speaking=%v, want 1 to %d while speaking and nil otherwise", cfg, len(pre), speaking, ring)
				}
				for _, p := range pre {
					if len(p) != audio.FrameSamples {
						t.Fatalf("Endpointer.PreRoll() frame of %d samples, want %d", len(p), audio.FrameSamples)
					}
				}
			}
		}
	})
}

func BenchmarkEndpointer(b *testing.B) {
	for _, name := range []string{"Energy", "WebRTC"} {
		b.Run(name, func(b *testing.B) {
			var d Detector = newEnergy(b)
			if name == "WebRTC" {
				var err error
				if d, err = NewWebRTC(2); err != nil {
					b.Fatal(err)
				}
			}
			ep, err := NewEndpointer(d, Config{})
			if err != nil {
				b.Fatal(err)
			}
			frames := newSignal(1).noise(50).voiced(50).noise(50).frames()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ep.Process(frames[i])
				i = (i + 1) % len(frames)
			}
		})
	}
}
