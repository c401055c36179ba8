package local

import "math"

// resampler converts PCM16 mono between two rates with a windowed-sinc
// (Blackman) polyphase filter, keeping its state between calls so a stream
// can be fed in chunks of any size. It is deliberately small and private:
// internal/audio owns the pipeline's resampling; this one only bridges
// espeak-ng's 22050 Hz to the caller's rate and 8 kHz to pocketsphinx's
// 16 kHz inside this package.
//
// Why not audio.Resampler: the cepstral-mean priors (cmnprior.go) and the
// accuracy figures there were made with this filter, and recognition at
// 8 kHz is sensitive to the band edge. Moving every use to audio.Resampler
// and relearning both priors (2026-11-21) kept 16 kHz and the grammar
// turns as they were and the 8 kHz first utterance at 89%, but the 8 kHz
// booking sentence after a warm-up utterance fell from 89% to 56%
// (TestTranscribeBooking's bar is 70%); without relearning, the 8 kHz
// first utterance fell to 33%. Moving only the stream's 8 → 16 kHz step
// (espeak-ng still through this filter) and relearning the 8 kHz prior
// (53.92, 31.82, -39.39, 59.54, -16.15, -8.04, 11.24, -41.81, 8.10,
// -16.53, -3.99, 11.92, -18.87) lost nothing: 8 kHz booking 100% then
// 89%, held-out 35% at both rates, grammar 6/6.
type resampler struct {
	l, m int // output/input rate ratio in lowest terms: l/m
	half int // filter half-width in input samples
	// taps[p] weighs hist[i-half+1 .. i+half] for the output sample whose
	// input position is i + p/l.
	taps [][]float32
	hist []float32 // unconsumed input; hist[pos] is the current sample
	pos  int
	frac int // current phase: position is pos + frac/l

	nIn, nOut int64 // counts, so that flush emits exactly the right tail
}

// Filter quality: zero crossings of the sinc on each side at the lower of
// the two rates, and the cutoff as a fraction of that rate's Nyquist.
const (
	resampleZeroCrossings = 10
	resampleCutoff        = 0.92
	resampleMaxPhases     = 1024
)

func newResampler(in, out int) *resampler {
	g := gcd(in, out)
	r := &resampler{l: out / g, m: in / g}
	if r.l == r.m {
		return r
	}
	ratio := math.Min(1, float64(out)/float64(in))
	r.half = int(math.Ceil(resampleZeroCrossings / ratio))
	fc := 0.5 * ratio * resampleCutoff // cycles per input sample
	phases := min(r.l, resampleMaxPhases)
	r.taps = make([][]float32, phases)
	for p := range phases {
		frac := float64(p) / float64(phases)
		taps := make([]float32, 2*r.half)
		sum := 0.0
		w := make([]float64, 2*r.half)
		for k := range w {
			x := float64(k-r.half+1) - frac // distance from the output instant
			w[k] = 2 * fc * sinc(2*fc*x) * blackman(x/float64(r.half))
			sum += w[k]
		}
		for k := range w {
			taps[k] = float32(w[k] / sum) // unity gain at DC for every phase
		}
		r.taps[p] = taps
	}
	// Start centred on the first input sample, with silence before it.
	r.hist = make([]float32, r.half-1, 4096)
	r.pos = r.half - 1
	return r
}

// process appends the resampled form of in to dst and returns it.
func (r *resampler) process(dst, in []int16) []int16 {
	if r.taps == nil {
		return append(dst, in...)
	}
	r.nIn += int64(len(in))
	for _, s := range in {
		r.hist = append(r.hist, float32(s))
	}
	return r.drain(dst, -1)
}

// flush appends the last samples, those still waiting for input after
// them, treating what follows as silence. The resampler is spent after it.
func (r *resampler) flush(dst []int16) []int16 {
	if r.taps == nil {
		return dst
	}
	want := (r.nIn*int64(r.l) + int64(r.m) - 1) / int64(r.m)
	for range r.half + 1 {
		r.hist = append(r.hist, 0)
	}
	return r.drain(dst, want)
}

func (r *resampler) drain(dst []int16, limit int64) []int16 {
	phases := len(r.taps)
	for r.pos+r.half < len(r.hist) && (limit < 0 || r.nOut < limit) {
		taps := r.taps[r.frac*phases/r.l]
		win := r.hist[r.pos-r.half+1 : r.pos+r.half+1]
		var acc float32
		for k, t := range taps {
			acc += win[k] * t
		}
		dst = append(dst, clamp16(acc))
		r.nOut++
		r.frac += r.m
		r.pos += r.frac / r.l
		r.frac %= r.l
	}
	// Drop what no future output can reach.
	if drop := r.pos - r.half + 1; drop > 0 {
		if drop > len(r.hist) {
			drop = len(r.hist)
		}
		n := copy(r.hist, r.hist[drop:])
		r.hist = r.hist[:n]
		r.pos -= drop
	}
	return dst
}

func clamp16(v float32) int16 {
	v = float32(math.Round(float64(v)))
	switch {
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < math.MinInt16:
		return math.MinInt16
	}
	return int16(v)
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// blackman is the Blackman window on [-1, 1].
func blackman(u float64) float64 {
	if u <= -1 || u >= 1 {
		return 0
	}
	return 0.42 + 0.5*math.Cos(math.Pi*u) + 0.08*math.Cos(2*math.Pi*u)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
