package audio

import (
	"math"
	"math/rand/v2"
)

// sine returns n samples of a freq-Hz sine at rate with peak amplitude amp,
// phase 0 at sample 0 (the resampler keeps time alignment, so ideal outputs
// can be generated directly at the output rate).
func sine(rate int, freq, amp float64, n int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}

// noise returns n uniformly random samples from a fixed seed.
func noise(seed uint64, n int) []int16 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(r.IntN(65536) - 32768)
	}
	return out
}

// snrDB is the signal-to-noise ratio of got against ref in dB, over their
// common length.
func snrDB(ref, got []int16) float64 {
	var sig, errp float64
	for i := range min(len(ref), len(got)) {
		r, g := float64(ref[i]), float64(got[i])
		sig += r * r
		errp += (g - r) * (g - r)
	}
	return 10 * math.Log10(sig/errp)
}

// zeroCrossings counts sign changes, a crude but independent frequency check.
func zeroCrossings(pcm []int16) int {
	n := 0
	for i := 1; i < len(pcm); i++ {
		if (pcm[i-1] < 0) != (pcm[i] < 0) {
			n++
		}
	}
	return n
}

// goertzel is the power of pcm at freq Hz (one DFT bin), normalized so a
// full-scale sine gives about (32767/2)^2.
func goertzel(pcm []int16, rate int, freq float64) float64 {
	w := 2 * math.Pi * freq / float64(rate)
	c := 2 * math.Cos(w)
	var s1, s2 float64
	for _, x := range pcm {
		s := float64(x) + c*s1 - s2
		s2, s1 = s1, s
	}
	p := s1*s1 + s2*s2 - c*s1*s2
	n := float64(len(pcm))
	return p / (n * n)
}

// db is 20·log10(a/b).
func db(a, b float64) float64 { return 20 * math.Log10(a/b) }

// splitRandom cuts b into pieces of random length 0..maxLen (at least 1)
// from seed; empty pieces are empty writes.
func splitRandom(b []byte, seed uint64, maxLen int) [][]byte {
	maxLen = max(maxLen, 1)
	r := rand.New(rand.NewPCG(seed, 2))
	var parts [][]byte
	for len(b) > 0 {
		n := min(r.IntN(maxLen+1), len(b))
		parts = append(parts, b[:n])
		b = b[n:]
	}
	return parts
}

// allFormats is every valid client format.
var allFormats = []Format{
	{PCM16, 8000}, {PCM16, 16000}, {PCM16, 24000}, {PCM16, 48000}, {Mulaw, 8000},
}

// encodeClient renders pcm as f's wire bytes.
func encodeClient(f Format, pcm []int16) []byte {
	if f.Encoding == Mulaw {
		return MulawEncode(nil, pcm)
	}
	return EncodePCM16(nil, pcm)
}
