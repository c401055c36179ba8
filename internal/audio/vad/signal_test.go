package vad

import (
	"math"
	"math/rand/v2"

	"switchboard/internal/audio"
)

// signal builds a synthetic 16 kHz PCM16 stream frame by frame, with the
// truth (speech or not) for every frame. It is deterministic for a seed.
type signal struct {
	rng    *rand.Rand
	pcm    []int16
	labels []bool
	phase  float64 // of the voiced source's fundamental, carried across segments
	t      int     // samples since the start, for the slow f0 glide
}

const noiseDBFS = -60 // the line's background

func newSignal(seed uint64) *signal {
	return &signal{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
}

func dbfsToAmp(db float64) float64 { return 32768 * math.Pow(10, db/20) }

// noise appends Gaussian noise at noiseDBFS (RMS) for n frames: silence on
// a real line.
func (s *signal) noise(n int) *signal {
	sigma := dbfsToAmp(noiseDBFS)
	for range n * audio.FrameSamples {
		s.add(s.rng.NormFloat64() * sigma)
	}
	s.label(n, false)
	return s
}

// voiced appends n frames of a voice-like signal over the noise: harmonics
// of a fundamental gliding between 120 and 200 Hz with a 1/k tilt up to
// 3.8 kHz, amplitude-modulated at a 4 Hz syllable rate (down to −20 dB in
// the troughs), peaking near −12 dBFS.
func (s *signal) voiced(n int) *signal {
	sigma := dbfsToAmp(noiseDBFS)
	for i := range n * audio.FrameSamples {
		sec := float64(s.t) / audio.PipelineRate
		f0 := 160 + 40*math.Sin(2*math.Pi*0.7*sec)
		s.phase += 2 * math.Pi * f0 / audio.PipelineRate
		var v float64
		for k := 1; float64(k)*f0 < 3800; k++ {
			v += math.Sin(float64(k)*s.phase) / float64(k)
		}
		local := float64(i) / audio.PipelineRate
		env := 0.55 + 0.45*math.Cos(2*math.Pi*4*local)
		s.add(6000*env*v + s.rng.NormFloat64()*sigma)
	}
	s.label(n, true)
	return s
}

// tone appends n frames of a sine at hz and dbfs (RMS), labelled speech
// when speech is set.
func (s *signal) tone(n int, hz, dbfs float64, speech bool) *signal {
	amp := dbfsToAmp(dbfs) * math.Sqrt2
	for i := range n * audio.FrameSamples {
		s.add(amp * math.Sin(2*math.Pi*hz*float64(i)/audio.PipelineRate))
	}
	s.label(n, speech)
	return s
}

// zeros appends n frames of digital silence (a muted leg, a gap in RTP).
func (s *signal) zeros(n int) *signal {
	for range n * audio.FrameSamples {
		s.add(0)
	}
	s.label(n, false)
	return s
}

// blip appends one loud voiced frame: a click or a detector false alarm.
func (s *signal) blip() *signal { return s.voiced(1) }

func (s *signal) add(v float64) {
	s.pcm = append(s.pcm, int16(max(-32768, min(32767, math.Round(v)))))
	s.t++
}

func (s *signal) label(n int, speech bool) {
	for range n {
		s.labels = append(s.labels, speech)
	}
}

// frames splits the stream into 20 ms frames.
func (s *signal) frames() [][]int16 {
	out := make([][]int16, len(s.pcm)/audio.FrameSamples)
	for i := range out {
		out[i] = s.pcm[i*audio.FrameSamples : (i+1)*audio.FrameSamples]
	}
	return out
}
