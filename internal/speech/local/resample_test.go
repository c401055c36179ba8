package local

import (
	"math"
	"slices"
	"testing"
)

func sine(rate, hz, n int, amp float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*float64(hz)*float64(i)/float64(rate)))
	}
	return out
}

// TestResampler checks length, gain and fidelity on a tone well inside
// both bands, and that a tone above the output's Nyquist is removed.
func TestResampler(t *testing.T) {
	for _, c := range []struct {
		in, out, hz int
		minSNR      float64 // dB against the ideal tone; 0: want it filtered out
	}{
		{22050, 16000, 1000, 60},
		{22050, 8000, 1000, 60},
		{8000, 16000, 1000, 60},
		{16000, 8000, 440, 60},
		{16000, 16000, 1000, 90},
		{22050, 8000, 6000, 0},
	} {
		in := sine(c.in, c.hz, c.in, 10000)
		got := resampleAll(in, c.in, c.out)
		if len(got) != c.out {
			t.Errorf("resample %d→%d of 1 s: %d samples, want %d", c.in, c.out, len(got), c.out)
			continue
		}
		if c.minSNR == 0 {
			if r := rms(got[100 : len(got)-100]); r > 100 {
				t.Errorf("resample %d→%d of %d Hz: RMS %.0f, want it filtered out (< 100)", c.in, c.out, c.hz, r)
			}
			continue
		}
		want := sine(c.out, c.hz, c.out, 10000)
		var sig, noise float64
		for i := 100; i < len(got)-100; i++ {
			d := float64(got[i]) - float64(want[i])
			sig += float64(want[i]) * float64(want[i])
			noise += d * d
		}
		if snr := 10 * math.Log10(sig/max(noise, 1e-9)); snr < c.minSNR {
			t.Errorf("resample %d→%d of %d Hz: SNR %.1f dB, want ≥ %.0f", c.in, c.out, c.hz, snr, c.minSNR)
		}
	}
}

// TestResamplerChunking checks that the state carries across calls: any
// chunking gives the same output as one call.
func TestResamplerChunking(t *testing.T) {
	in := sine(22050, 700, 22050, 12000)
	whole := resampleAll(in, 22050, 8000)
	for _, size := range []int{1, 7, 160, 441, 5000} {
		r := newResampler(22050, 8000)
		var got []int16
		for i := 0; i < len(in); i += size {
			got = r.process(got, in[i:min(i+size, len(in))])
		}
		got = r.flush(got)
		if !slices.Equal(got, whole) {
			t.Errorf("resample in chunks of %d: %d samples differ from one call's %d", size, len(got), len(whole))
		}
	}
}

// TestResamplerClips checks that full-scale input saturates rather than
// wrapping around to the other sign when the filter overshoots.
func TestResamplerClips(t *testing.T) {
	in := make([]int16, 2000)
	for i := range in {
		in[i] = math.MaxInt16
		if i >= 1000 {
			in[i] = math.MinInt16
		}
	}
	got := resampleAll(in, 8000, 16000)
	for i, v := range got[40:1960] {
		if v < 30000 {
			t.Fatalf("resample of full-scale high: sample %d = %d, want ≥ 30000", i+40, v)
		}
	}
	for i, v := range got[2040:3960] {
		if v > -30000 {
			t.Fatalf("resample of full-scale low: sample %d = %d, want ≤ -30000", i+2040, v)
		}
	}
}

func BenchmarkResample8kTo16k(b *testing.B) {
	frame := sine(8000, 440, 160, 8000) // 20 ms
	r := newResampler(8000, 16000)
	out := make([]int16, 0, 400)
	b.ReportAllocs()
	for b.Loop() {
		out = r.process(out[:0], frame)
	}
}

func BenchmarkResample22kTo8k(b *testing.B) {
	frame := sine(22050, 440, 441, 8000) // 20 ms
	r := newResampler(22050, 8000)
	out := make([]int16, 0, 400)
	b.ReportAllocs()
	for b.Loop() {
		out = r.process(out[:0], frame)
	}
}
