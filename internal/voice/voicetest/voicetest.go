// Package voicetest has behavioural fakes for testing and benchmarking the
// voice pipeline (internal/voice) without speech engines: a Transcriber
// that "hears" a script, a Synthesizer that speaks a fixed-length tone per
// word, a Detector that calls loud frames speech, a scripted Brain, a
// TurnStore/Ender and an Output that records what a transport would get.
//
// The fakes have latencies (final transcript after Finish, first audio, the
// model's first token) measured with the time package, so under
// testing/synctest they are exact and cost no wall time.
//
// It does not import internal/voice, so that package's own tests can use it.
package voicetest

import (
	"fmt"
	"math"
	"sync"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
)

// ToneHz is the fakes' tone: a whole number of periods fits a 20 ms frame
// at every pipeline and client rate, so tone pieces join without clicks.
const ToneHz = 200

// ToneAmplitude is the tone's peak (about −12 dBFS; RMS ≈ 5,800).
const ToneAmplitude = 8192

// Tone returns d of the tone at rate Hz.
func Tone(rate int, d time.Duration) []int16 {
	n := int(int64(rate) * int64(d) / int64(time.Second))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(ToneAmplitude * math.Sin(2*math.Pi*ToneHz*float64(i)/float64(rate))))
	}
	return out
}

var tones sync.Map // toneKey → []int16, shared read-only

type toneKey struct {
	rate int
	d    time.Duration
}

// sharedTone is Tone, computed once per (rate, d); callers must not modify it.
func sharedTone(rate int, d time.Duration) []int16 {
	k := toneKey{rate, d}
	if v, ok := tones.Load(k); ok {
		return v.([]int16)
	}
	v, _ := tones.LoadOrStore(k, Tone(rate, d))
	return v.([]int16)
}

// Encode renders pcm (at f's rate) as f's wire bytes.
func Encode(f audio.Format, pcm []int16) []byte {
	if f.Encoding == audio.Mulaw {
		return audio.MulawEncode(nil, pcm)
	}
	return audio.EncodePCM16(nil, pcm)
}

// Decode parses f's wire bytes.
func Decode(f audio.Format, b []byte) []int16 {
	if f.Encoding == audio.Mulaw {
		return audio.MulawDecode(nil, b)
	}
	pcm, _ := audio.DecodePCM16(nil, b[:len(b)&^1])
	return pcm
}

// Frames is one 20 ms client frame of tone (Speech) and one of digital
// silence (Silence), in a client format: what a caller's microphone sends.
type Frames struct {
	Format          audio.Format
	Speech, Silence []byte
}

// NewFrames renders the caller frames for f.
func NewFrames(f audio.Format) Frames {
	spf := f.SamplesPerFrame()
	return Frames{
		Format:  f,
		Speech:  Encode(f, Tone(f.SampleRate, audio.FrameDuration)),
		Silence: Encode(f, make([]int16, spf)),
	}
}

// Detector is a vad.Detector that calls a frame speech when its RMS is
// above Threshold (default 500, about −36 dBFS): exact on tone and silence,
// so tests control voice activity frame by frame.
type Detector struct {
	Threshold float64
}

// IsSpeech implements vad.Detector.
func (d Detector) IsSpeech(f []int16) (bool, error) {
	if len(f) != audio.FrameSamples {
		return false, fmt.Errorf("%w, got %d", vad.ErrFrameSize, len(f))
	}
	th := d.Threshold
	if th <= 0 {
		th = 500
	}
	return audio.RMS(f) > th, nil
}

var _ vad.Detector = Detector{}

// sleep waits d or until done closes; it reports whether d passed.
func sleep(d time.Duration, done <-chan struct{}) bool {
	if d <= 0 {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}
