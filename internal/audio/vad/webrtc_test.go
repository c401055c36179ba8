package vad

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/audio"
)

// hangoverFrames is how long libwebrtc keeps saying speech after speech
// ends (its "overhang"); measured up to 11 frames in mode 0.
const hangoverFrames = 12

// score runs d over s and returns the fraction of speech frames called
// speech and of silence frames called silence. Silence frames within
// hangoverFrames after speech are not scored: the detector holds speech
// there on purpose.
func score(t *testing.T, name string, d Detector, s *signal) (speechOK, silenceOK float64, pattern string) {
	t.Helper()
	var speech, speechHit, silence, silenceHit, since int
	since = hangoverFrames
	var pat []byte
	for i, f := range s.frames() {
		got, err := d.IsSpeech(f)
		if err != nil {
			t.Fatalf("%s.IsSpeech(frame %d) error %v", name, i, err)
		}
		pat = append(pat, map[bool]byte{true: '#', false: '.'}[got])
		switch {
		case s.labels[i]:
			speech++
			since = 0
			if got {
				speechHit++
			}
		default:
			since++
			if since <= hangoverFrames {
				continue
			}
			silence++
			if !got {
				silenceHit++
			}
		}
	}
	return float64(speechHit) / float64(max(speech, 1)), float64(silenceHit) / float64(max(silence, 1)), string(pat)
}

func TestWebRTCSpeechAndSilence(t *testing.T) {
	for mode := range 4 {
		t.Run(fmt.Sprintf("mode%d", mode), func(t *testing.T) {
			t.Parallel()
			d, err := NewWebRTC(mode)
			if err != nil {
				t.Fatalf("NewWebRTC(%d) error %v", mode, err)
			}
			// 2 s silence, 2 s speech, 1 s silence, 1 s speech, 2 s silence.
			s := newSignal(uint64(mode)).noise(100).voiced(100).noise(50).voiced(50).noise(100)
			speech, silence, pat := score(t, "WebRTC", d, s)
			if speech < 0.9 || silence < 0.9 {
				t.Errorf("NewWebRTC(%d).IsSpeech on silence/voice/silence/voice/silence: right on %.0f%% of speech and %.0f%% of silence frames, want ≥ 90%% each\n%s",
					mode, 100*speech, 100*silence, pat)
			}
		})
	}
}

// TestWebRTCGuards covers the two faults NewWebRTC guards against: the
// start-up burst and false speech after digital silence.
func TestWebRTCGuards(t *testing.T) {
	tests := []struct {
		name string
		sig  func(*signal) *signal
	}{
		{"noise from the first frame", func(s *signal) *signal { return s.noise(150) }},
		{"digital silence then noise", func(s *signal) *signal { return s.zeros(50).noise(150) }},
		{"noise, digital silence, noise", func(s *signal) *signal {
			return s.noise(50).zeros(50).noise(150)
		}},
		{"noise, −80 dBFS, noise", func(s *signal) *signal {
			return s.noise(50).tone(50, 440, -80, false).noise(150)
		}},
	}
	for _, tt := range tests {
		for mode := range 4 {
			d, err := NewWebRTC(mode)
			if err != nil {
				t.Fatalf("NewWebRTC(%d) error %v", mode, err)
			}
			_, silence, pat := score(t, "WebRTC", d, tt.sig(newSignal(7)))
			if silence != 1 {
				t.Errorf("NewWebRTC(%d).IsSpeech on %s: %.1f%% of frames right, want 100%%\n%s", mode, tt.name, 100*silence, pat)
			}
		}
	}
}

func TestNewWebRTCMode(t *testing.T) {
	for _, mode := range []int{-1, 4, 100} {
		_, err := NewWebRTC(mode)
		if !apperr.Is(err, apperr.Invalid) {
			t.Errorf("NewWebRTC(%d) error = %v, want an Invalid error naming mode", mode, err)
		}
	}
}

func TestDetectorFrameSize(t *testing.T) {
	webrtc, err := NewWebRTC(2)
	if err != nil {
		t.Fatalf("NewWebRTC(2) error %v", err)
	}
	energy, err := NewEnergy(EnergyConfig{})
	if err != nil {
		t.Fatalf("NewEnergy(EnergyConfig{}) error %v", err)
	}
	for name, d := range map[string]Detector{"WebRTC": webrtc, "Energy": energy} {
		for _, n := range []int{0, 1, 160, 319, 321, 480, 640} {
			got, err := d.IsSpeech(make([]int16, n))
			if got || !errors.Is(err, ErrFrameSize) {
				t.Errorf("%s.IsSpeech(%d samples) = %v, %v; want false, ErrFrameSize", name, n, got, err)
			}
		}
	}
}

// FuzzWebRTC feeds arbitrary audio to the port: it must never panic or fail
// on a well-sized frame.
func FuzzWebRTC(f *testing.F) {
	f.Add(uint8(2), uint64(1), []byte{0})
	f.Add(uint8(0), uint64(2), []byte{0x7f, 0xff, 0x80, 0x00})
	f.Add(uint8(3), uint64(3), make([]byte, 64))
	f.Fuzz(func(t *testing.T, mode uint8, seed uint64, pattern []byte) {
		d, err := NewWebRTC(int(mode % 4))
		if err != nil {
			t.Fatalf("NewWebRTC(%d) error %v", mode%4, err)
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		frame := make([]int16, audio.FrameSamples)
		for i, b := range pattern {
			if i == 64 {
				break
			}
			fillFrame(frame, b, rng)
			if _, err := d.IsSpeech(frame); err != nil {
				t.Fatalf("WebRTC.IsSpeech(frame %d of pattern %x) error %v", i, pattern, err)
			}
		}
	})
}

// fillFrame fills frame with audio chosen by b: its low 4 bits pick a
// level from digital silence to full scale, its next 2 bits a shape (noise,
// a square wave, a constant offset, noise with clipped extremes).
func fillFrame(frame []int16, b byte, rng *rand.Rand) {
	amp := int64(0)
	if lv := b & 15; lv > 0 {
		amp = 1<<lv - 1 // up to 32767
	}
	for i := range frame {
		var v int64
		switch b >> 4 & 3 {
		case 0:
			v = int64(rng.NormFloat64() * float64(amp))
		case 1:
			if i/20%2 == 0 {
				v = amp
			} else {
				v = -amp - 1
			}
		case 2:
			v = amp
		case 3:
			v = rng.Int64N(2*amp+2) - amp - 1
		}
		frame[i] = int16(max(-32768, min(32767, v)))
	}
}

func BenchmarkWebRTC(b *testing.B) {
	for _, mode := range []int{0, 2, 3} {
		b.Run(fmt.Sprintf("mode%d", mode), func(b *testing.B) {
			d, err := NewWebRTC(mode)
			if err != nil {
				b.Fatal(err)
			}
			frames := newSignal(1).noise(50).voiced(50).frames()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := d.IsSpeech(frames[i]); err != nil {
					b.Fatal(err)
				}
				i = (i + 1) % len(frames)
			}
		})
	}
}
