package pcm

import "math"

// Resampler converts a PCM16 stream from one rate to another as it arrives:
// windowed-sinc interpolation at the exact rational ratio, with a cutoff
// below the lower of the two Nyquist rates so downsampling (a 24 kHz voice
// to an 8 kHz phone line) does not alias. It keeps the history it needs
// between calls, so chunk boundaries leave no trace: the output of a stream
// fed in pieces equals the output of the same stream fed at once.
//
// The output lags the input by a few samples (the filter's half width);
// Flush emits them at the end. A whole stream of n samples becomes
// OutputLen(n, from, to) samples.
type Resampler struct {
	up, down int // output rate / input rate, reduced: to = from * up / down
	half     int // taps on each side of the interpolation point
	phases   int // rows in table
	table    []float32

	buf     []int16 // input samples from absolute index base on
	base    int64
	inTotal int64 // samples received
	next    int64 // index of the next output sample
}

// maxPhases bounds the filter table; ratios with more phases (odd rates)
// use the nearest of maxPhases fractional positions, 1/512 of a sample off
// at worst.
const maxPhases = 512

// NewResampler returns a resampler from rate from to rate to (Hz, both > 0).
func NewResampler(from, to int) *Resampler {
	g := gcd(from, to)
	r := &Resampler{up: to / g, down: from / g}
	if r.up == r.down {
		return r
	}
	// Cutoff relative to the input's Nyquist frequency: below the output's
	// Nyquist when downsampling, with a little margin for the short filter.
	fc := min(1, float64(to)/float64(from)) * 0.95
	r.half = min(64, int(math.Ceil(8/fc)))
	r.phases = min(r.up, maxPhases)
	width := 2 * r.half
	r.table = make([]float32, r.phases*width)
	for p := range r.phases {
		frac := float64(p) / float64(r.phases)
		row := r.table[p*width : (p+1)*width]
		var sum float64
		w := make([]float64, width)
		for j := range width {
			// Tap j weighs input sample i0-half+1+j, at distance d from
			// the interpolation point i0+frac.
			d := float64(j-r.half+1) - frac
			w[j] = fc * sinc(fc*d) * blackman(d, float64(r.half))
			sum += w[j]
		}
		for j := range width {
			row[j] = float32(w[j] / sum) // unity gain at DC for every phase
		}
	}
	return r
}

// OutputLen is how many samples a whole stream of n samples at from becomes
// at to: one per output instant before the end of the input.
func OutputLen(n, from, to int) int {
	if from == to {
		return n
	}
	g := gcd(from, to)
	up, down := int64(to/g), int64(from/g)
	return int((int64(n)*up + down - 1) / down)
}

// Process appends to dst the output samples the input so far allows.
func (r *Resampler) Process(dst, in []int16) []int16 {
	if r.up == r.down {
		return append(dst, in...)
	}
	r.buf = append(r.buf, in...)
	r.inTotal += int64(len(in))
	for {
		i0 := r.next * int64(r.down) / int64(r.up)
		if i0+int64(r.half) >= r.inTotal {
			break
		}
		dst = append(dst, r.sample(i0))
		r.next++
	}
	r.trim()
	return dst
}

// Flush appends the last output samples, reading silence past the end of
// the input, and resets the resampler for a new stream.
func (r *Resampler) Flush(dst []int16) []int16 {
	if r.up == r.down {
		return dst
	}
	for r.next*int64(r.down) < r.inTotal*int64(r.up) {
		i0 := r.next * int64(r.down) / int64(r.up)
		dst = append(dst, r.sample(i0))
		r.next++
	}
	r.buf, r.base, r.inTotal, r.next = r.buf[:0], 0, 0, 0
	return dst
}

// sample computes output r.next, whose position lies between input i0 and
// i0+1.
func (r *Resampler) sample(i0 int64) int16 {
	width := 2 * r.half
	p := int(r.next * int64(r.down) % int64(r.up))
	if r.phases != r.up {
		p = int(int64(p) * int64(r.phases) / int64(r.up))
	}
	row := r.table[p*width : (p+1)*width]
	first := i0 - int64(r.half) + 1
	var acc float32
	if lo := int(first - r.base); lo >= 0 && lo+width <= len(r.buf) {
		// The whole window is in the history: the common case.
		win := r.buf[lo : lo+width]
		win = win[:len(row)]
		for j, w := range row {
			acc += w * float32(win[j])
		}
		return clamp16(float64(acc))
	}
	for j, w := range row {
		idx := first + int64(j)
		if idx < r.base || idx >= r.inTotal {
			// Before the stream and (when flushing) past its end read as
			// silence; Process never reaches past the input.
			continue
		}
		acc += w * float32(r.buf[idx-r.base])
	}
	return clamp16(float64(acc))
}

// trim drops the input no future output reaches.
func (r *Resampler) trim() {
	keep := r.next*int64(r.down)/int64(r.up) - int64(r.half) + 1
	drop := int(keep - r.base)
	if drop <= 0 {
		return
	}
	drop = min(drop, len(r.buf))
	n := copy(r.buf, r.buf[drop:])
	r.buf = r.buf[:n]
	r.base += int64(drop)
}

func clamp16(v float64) int16 {
	v = math.Round(v)
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

// blackman is the Blackman window over (-half, half).
func blackman(d, half float64) float64 {
	if math.Abs(d) >= half {
		return 0
	}
	x := (d/half + 1) / 2 // 0..1 across the window
	return 0.42 - 0.5*math.Cos(2*math.Pi*x) + 0.08*math.Cos(4*math.Pi*x)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
