package audio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// resampleAll runs pcm through r in chunks of the given size, then flushes.
func resampleAll(r *Resampler, pcm []int16, chunk int) []int16 {
	var out []int16
	for len(pcm) > 0 {
		n := min(chunk, len(pcm))
		out = r.Process(out, pcm[:n])
		pcm = pcm[n:]
	}
	return r.Flush(out)
}

// middle drops edge samples, where the stream's implicit silence before and
// after shapes the output.
func middle(pcm []int16, edge int) []int16 { return pcm[edge : len(pcm)-edge] }

func TestResampler48kTo16kTo48k(t *testing.T) {
	in := sine(48000, 1000, 16000, 48000) // 1 s
	down := resampleAll(NewResampler(48000, 16000), in, 960)
	if len(down) != 16000 {
		t.Fatalf("Resampler 48000→16000 of 48000 samples: got %d samples, want 16000", len(down))
	}
	up := resampleAll(NewResampler(16000, 48000), down, 333)
	if len(up) != 48000 {
		t.Fatalf("Resampler 16000→48000 of 16000 samples: got %d samples, want 48000", len(up))
	}
	ref, got := middle(in, 480), middle(up, 480)
	if snr := snrDB(ref, got); snr <= 40 {
		t.Errorf("1 kHz sine 48k→16k→48k: SNR %.1f dB, want > 40", snr)
	}
	if zc, want := zeroCrossings(got), zeroCrossings(ref); abs(zc-want) > 1 {
		t.Errorf("1 kHz sine 48k→16k→48k: %d zero crossings, want %d (±1)", zc, want)
	}
	// The energy stays at 1 kHz: the neighbouring bins hold almost nothing.
	p1k := goertzel(got, 48000, 1000)
	for _, f := range []float64{900, 1100, 2000, 3000} {
		if ratio := 10 * math.Log10(goertzel(got, 48000, f)/p1k); ratio > -40 {
			t.Errorf("1 kHz sine 48k→16k→48k: power at %v Hz is %.1f dB below 1 kHz, want ≥ 40", f, -ratio)
		}
	}
}

// TestResamplerPairs converts a 1 kHz sine between every supported pair and
// compares with the ideal sine at the output rate: the resampler keeps time
// alignment, so no delay needs compensating.
func TestResamplerPairs(t *testing.T) {
	rates := []int{8000, 16000, 24000, 48000}
	type pair struct{ from, to int }
	pairs := []pair{{22050, 16000}}
	for _, from := range rates {
		for _, to := range rates {
			pairs = append(pairs, pair{from, to})
		}
	}
	for _, p := range pairs {
		t.Run(fmt.Sprintf("%d→%d", p.from, p.to), func(t *testing.T) {
			t.Parallel()
			n := p.from/2 + 7 // 0.5 s and a bit, so lengths do not divide evenly
			in := sine(p.from, 1000, 12000, n)
			got := resampleAll(NewResampler(p.from, p.to), in, 317)
			wantLen := (n*p.to + p.from - 1) / p.from
			if len(got) != wantLen {
				t.Fatalf("Resampler(%d→%d) of %d samples: got %d samples, want %d", p.from, p.to, n, len(got), wantLen)
			}
			ref := sine(p.to, 1000, 12000, wantLen)
			edge := p.to / 100 // 10 ms
			if snr := snrDB(middle(ref, edge), middle(got, edge)); snr <= 40 {
				t.Errorf("Resampler(%d→%d) of a 1 kHz sine: SNR %.1f dB, want > 40", p.from, p.to, snr)
			}
		})
	}
}

// TestResamplerAntiAlias checks 16k→8k: content above the new Nyquist
// frequency (4 kHz) is removed instead of folding back, and speech-band
// content passes.
func TestResamplerAntiAlias(t *testing.T) {
	tests := []struct {
		freq           float64
		minAtt, maxAtt float64 // dB of level lost
	}{
		{300, -0.1, 0.1},
		{1000, -0.1, 0.1},
		{3000, -0.1, 0.5},
		{4500, 30, math.Inf(1)},
		{6000, 30, math.Inf(1)},
		{7500, 30, math.Inf(1)},
	}
	for _, tt := range tests {
		in := sine(16000, tt.freq, 16000, 16000)
		out := resampleAll(NewResampler(16000, 8000), in, 320)
		att := db(RMS(middle(in, 160)), RMS(middle(out, 80)))
		if att < tt.minAtt || att > tt.maxAtt {
			t.Errorf("Resampler(16000→8000) of a %v Hz sine: attenuation %.1f dB, want in [%v, %v]", tt.freq, att, tt.minAtt, tt.maxAtt)
		}
	}
}

// TestResamplerChunking: output must not depend on how input is split, or
// chunk boundaries would click and Decoder writes of different sizes would
// disagree.
func TestResamplerChunking(t *testing.T) {
	in := noise(7, 5000)
	for _, rates := range [][2]int{{48000, 16000}, {8000, 16000}, {22050, 16000}, {16000, 24000}} {
		want := resampleAll(NewResampler(rates[0], rates[1]), in, len(in))
		for _, chunk := range []int{1, 2, 3, 160, 441, 4999} {
			if got := resampleAll(NewResampler(rates[0], rates[1]), in, chunk); !slices.Equal(got, want) {
				t.Errorf("Resampler(%d→%d) in chunks of %d: output differs from one chunk (len %d vs %d)", rates[0], rates[1], chunk, len(got), len(want))
			}
		}
		// Random chunk sizes, including empty ones.
		r := NewResampler(rates[0], rates[1])
		rng := rand.New(rand.NewPCG(3, 4))
		var got []int16
		for rest := in; len(rest) > 0; {
			n := min(rng.IntN(700), len(rest))
			got = r.Process(got, rest[:n])
			rest = rest[n:]
		}
		if got = r.Flush(got); !slices.Equal(got, want) {
			t.Errorf("Resampler(%d→%d) in random chunks: output differs from one chunk", rates[0], rates[1])
		}
	}
}

func TestResamplerFlushResets(t *testing.T) {
	r := NewResampler(22050, 16000)
	in := noise(9, 2205)
	first := resampleAll(r, in, 500)
	second := resampleAll(r, in, 500)
	if !slices.Equal(first, second) {
		t.Errorf("Resampler(22050→16000): a second stream after Flush differs from the first")
	}
	// Reset discards pending input instead of emitting it.
	r.Process(nil, noise(10, 1000))
	r.Reset()
	if got := resampleAll(r, in, 500); !slices.Equal(got, first) {
		t.Errorf("Resampler(22050→16000): stream after Reset differs from a fresh one")
	}
}

func TestResamplerPassthrough(t *testing.T) {
	in := noise(11, 999)
	r := NewResampler(16000, 16000)
	got := r.Process([]int16{1}, in)
	if !slices.Equal(got[1:], in) || got[0] != 1 {
		t.Errorf("Resampler(16000→16000).Process: output is not [1]+input")
	}
	if tail := r.Flush(nil); len(tail) != 0 {
		t.Errorf("Resampler(16000→16000).Flush = %d samples, want 0", len(tail))
	}
}

// TestResamplerFullScale: filter overshoot on a full-scale square must
// saturate, never wrap around to the opposite sign.
func TestResamplerFullScale(t *testing.T) {
	in := make([]int16, 4800)
	for i := range in {
		in[i] = math.MaxInt16
		if (i/60)%2 == 1 {
			in[i] = math.MinInt16
		}
	}
	out := resampleAll(NewResampler(48000, 16000), in, 480)
	for i, v := range out[100 : len(out)-100] {
		want := in[(i+100)*3]
		if (v < 0) != (want < 0) && abs(int(v)) > 16000 {
			t.Fatalf("Resampler(48000→16000) of a full-scale square: sample %d = %d, opposite sign to input %d (wrapped)", i+100, v, want)
		}
	}
}

func TestNewResamplerPanics(t *testing.T) {
	for _, rates := range [][2]int{{0, 16000}, {16000, 0}, {-8000, 16000}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewResampler(%d, %d) did not panic", rates[0], rates[1])
				}
			}()
			NewResampler(rates[0], rates[1])
		}()
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
