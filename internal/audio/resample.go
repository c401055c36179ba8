package audio

import (
	"fmt"
	"math"
	"sync"
)

// Resampler design: a polyphase windowed-sinc filter.
//
// Output sample n sits at input position p = n·from/to (in input samples), so
// output and input stay aligned in time: the resampler adds buffering latency
// (K input samples, 1.7–3.4 ms for the supported rates) but no signal delay. With from/to reduced to M/L,
// p = i0 + φ/L for an integer i0 and one of L phases φ, so the filter is L
// precomputed sets of 2K taps and each output sample is one dot product over
// the 2K inputs around p.
//
// The kernel is a sinc low-pass with its cutoff at resampleRolloff of the
// lower Nyquist frequency, windowed by a Kaiser window (β = resampleBeta,
// ≈ 86 dB stopband) over resampleZeros zero crossings on each side. At that
// length the transition band ends at the lower Nyquist frequency, so
// downsampling aliases nothing audible and the passband is flat to about 40%
// of the lower rate (3.2 kHz when either side is 8 kHz, 6.4 kHz at 16 kHz).
// Each phase is normalized to unit DC gain so that no phase-rate ripple
// (an audible whine) is added. Tables depend only on the rate pair and are
// shared by every Resampler of that pair.
const (
	resampleZeros   = 24
	resampleRolloff = 0.91
	resampleBeta    = 8.6
)

// Resampler converts a mono PCM16 stream from one sample rate to another, in
// pieces of any size, keeping the filter's history between calls so chunk
// boundaries do not click. The output does not depend on how the input was
// chunked. It serves the pipeline edges (8/16/24/48 kHz clients, 22.05 kHz
// espeak-ng output) and works for any pair of positive rates; the filter
// table grows with to/gcd(from, to) phases.
//
// A Resampler is not safe for concurrent use; each stream owns one.
type Resampler struct {
	from, to int
	k        *resampleKernel // nil when from == to

	hist    []float32 // input history; hist[0] is input index base
	base    int64
	pos     int64 // input index i0 of the next output sample
	phase   int   // its phase φ in [0, L)
	inCount int64 // input samples consumed since the last reset
	out     int64 // output samples produced since the last reset
}

// resampleKernel is the immutable polyphase table for one rate pair.
type resampleKernel struct {
	l, m   int       // to/g, from/g
	half   int       // K: taps on each side of the output position
	taps   int       // 2K
	coeffs []float32 // l × taps, phase-major
}

var kernels sync.Map // [2]int{from, to} → *resampleKernel

// NewResampler returns a Resampler from rate from to rate to (Hz). Equal
// rates give a passthrough that copies samples. Rates are configuration, not
// client input, so a non-positive rate is a programming error and panics.
func NewResampler(from, to int) *Resampler {
	if from <= 0 || to <= 0 {
		panic(fmt.Sprintf("audio: NewResampler(%d, %d): rates must be positive", from, to))
	}
	r := &Resampler{from: from, to: to}
	if from != to {
		r.k = kernelFor(from, to)
		r.Reset()
	}
	return r
}

// Reset forgets the stream so far (history, partial positions) without
// emitting anything: for barge-in, when queued speech is discarded and the
// next utterance must not start with the tail of the previous one.
func (r *Resampler) Reset() {
	if r.k == nil {
		return
	}
	// K−1 zeros stand for the silence before the stream, so the first
	// output sample (at input index 0) can be computed as soon as
	// input index K has arrived.
	r.hist = append(r.hist[:0], make([]float32, r.k.half-1)...)
	r.base = -int64(r.k.half - 1)
	r.pos, r.phase, r.inCount, r.out = 0, 0, 0, 0
}

// Process appends to dst the output samples that src makes computable and
// returns the extended slice. About K input samples stay buffered until more
// input or Flush arrives. src is not retained.
func (r *Resampler) Process(dst, src []int16) []int16 {
	if r.k == nil {
		return append(dst, src...)
	}
	n := len(r.hist)
	r.hist = grow(r.hist, len(src))
	h := r.hist[n:]
	for i, s := range src {
		h[i] = float32(s)
	}
	r.inCount += int64(len(src))
	return r.run(dst, math.MaxInt64)
}

// Flush appends the rest of the stream, as if followed by silence, and resets
// the Resampler for a new stream. After Flush the stream's output has exactly
// ceil(in·to/from) samples, so a 1 s clip stays 1 s long.
func (r *Resampler) Flush(dst []int16) []int16 {
	if r.k == nil {
		return dst
	}
	n := len(r.hist)
	r.hist = grow(r.hist, r.k.half)
	clear(r.hist[n:])
	// Output n exists while its position n·M/L is inside the input.
	l, m := int64(r.k.l), int64(r.k.m)
	want := (r.inCount*l + m - 1) / m
	dst = r.run(dst, want)
	r.Reset()
	return dst
}

// run computes output samples while their inputs are buffered and fewer than
// limit have been produced, then discards history no longer needed.
func (r *Resampler) run(dst []int16, limit int64) []int16 {
	k := r.k
	last := r.base + int64(len(r.hist)) - 1 // newest buffered input index
	for r.pos+int64(k.half) <= last && r.out < limit {
		start := int(r.pos - int64(k.half) + 1 - r.base)
		x := r.hist[start : start+k.taps]
		c := k.coeffs[r.phase*k.taps : (r.phase+1)*k.taps]
		dst = append(dst, clamp16(dot(c, x)))
		r.out++
		r.phase += k.m
		r.pos += int64(r.phase / k.l)
		r.phase %= k.l
	}
	// Keep inputs from pos−K+1 on: the oldest the next output reads.
	if drop := int(min(r.pos-int64(k.half)+1-r.base, int64(len(r.hist)))); drop > 0 {
		n := copy(r.hist, r.hist[drop:])
		r.hist = r.hist[:n]
		r.base += int64(drop)
	}
	return dst
}

// dot is the filter's inner loop. Four partial sums let the CPU overlap the
// additions instead of waiting on one long dependency chain (about 2.5× faster
// than a single accumulator); the order is fixed, so results do not depend on
// how the stream was chunked.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	var a0, a1, a2, a3 float32
	i := 0
	for ; i+4 <= len(c); i += 4 {
		cc, xx := c[i:i+4:i+4], x[i:i+4:i+4]
		a0 += cc[0] * xx[0]
		a1 += cc[1] * xx[1]
		a2 += cc[2] * xx[2]
		a3 += cc[3] * xx[3]
	}
	for ; i < len(c); i++ {
		a0 += c[i] * x[i]
	}
	return (a0 + a1) + (a2 + a3)
}

// clamp16 rounds v to the nearest int16, saturating instead of wrapping:
// filter overshoot on a full-scale input must not flip sign.
func clamp16(v float32) int16 {
	switch {
	case v >= math.MaxInt16:
		return math.MaxInt16
	case v <= math.MinInt16:
		return math.MinInt16
	case v >= 0:
		return int16(v + 0.5)
	default:
		return int16(v - 0.5)
	}
}

func kernelFor(from, to int) *resampleKernel {
	key := [2]int{from, to}
	if k, ok := kernels.Load(key); ok {
		return k.(*resampleKernel)
	}
	k, _ := kernels.LoadOrStore(key, newKernel(from, to))
	return k.(*resampleKernel)
}

func newKernel(from, to int) *resampleKernel {
	g := gcd(from, to)
	l, m := to/g, from/g
	// Cutoff in cycles per input sample: below the lower Nyquist frequency.
	fc := 0.5 * resampleRolloff * min(1, float64(to)/float64(from))
	width := resampleZeros / (2 * fc) // half window, in input samples
	half := int(math.Ceil(width))
	k := &resampleKernel{l: l, m: m, half: half, taps: 2 * half, coeffs: make([]float32, l*2*half)}
	i0beta := besselI0(resampleBeta)
	row := make([]float64, k.taps)
	for ph := range l {
		frac := float64(ph) / float64(l)
		var sum float64
		for j := range row {
			// Tap j reads input i0−K+1+j, at distance t from the output.
			t := frac + float64(half-1-j)
			v := 0.0
			if r := t / width; r > -1 && r < 1 {
				v = 2 * fc * sinc(2*fc*t) * besselI0(resampleBeta*math.Sqrt(1-r*r)) / i0beta
			}
			row[j] = v
			sum += v
		}
		for j, v := range row {
			k.coeffs[ph*k.taps+j] = float32(v / sum)
		}
	}
	return k
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// besselI0 is the modified Bessel function of the first kind, order 0, by
// its power series (converges fast for the β used here).
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; term > 1e-12*sum; k++ {
		f := x / (2 * float64(k))
		term *= f * f
		sum += term
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
