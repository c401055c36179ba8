package audio

import (
	"slices"
	"testing"
)

// FuzzDecoder feeds arbitrary client bytes, cut at arbitrary points, to a
// Decoder of every format: it must never panic, every frame must have
// FrameSamples samples, and (below the 2 s bound) the frames must not depend
// on the cuts.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{}, uint64(0), uint16(1))
	f.Add([]byte{0x01}, uint64(1), uint16(1))
	f.Add(EncodePCM16(nil, sine(16000, 1000, 30000, 700)), uint64(7), uint16(3))
	f.Add(MulawEncode(nil, noise(3, 2000)), uint64(9), uint16(641))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64, maxSplit uint16) {
		for _, format := range allFormats {
			whole := NewDecoder(format)
			want := decodeParts(t, whole, [][]byte{data})
			split := NewDecoder(format)
			got := decodeParts(t, split, splitRandom(data, seed, int(maxSplit)))
			limit := int(MaxWriteDuration/FrameDuration) * format.BytesPerFrame()
			if len(data) <= limit && !slices.Equal(got, want) {
				t.Errorf("Decoder(%v) of %d bytes split by seed %d (≤ %d): %d samples, differs from one write's %d",
					format, len(data), seed, maxSplit, len(got), len(want))
			}
			if len(data) <= limit && (whole.Dropped() != 0 || split.Dropped() != 0) {
				t.Errorf("Decoder(%v) of %d bytes: Dropped %d and %d, want 0 below the bound", format, len(data), whole.Dropped(), split.Dropped())
			}
		}
	})
}

// FuzzMulaw checks G.711 invariants on arbitrary input: decoding then
// encoding gives the code back (−0 becomes +0), and encoding any sample stays
// within half a quantization step.
func FuzzMulaw(f *testing.F) {
	f.Add([]byte{0x00, 0x7F, 0x80, 0xFF})
	f.Add(EncodePCM16(nil, []int16{0, -1, 32767, -32768, 8159}))
	f.Fuzz(func(t *testing.T, data []byte) {
		lin := MulawDecode(nil, data)
		codes := MulawEncode(nil, lin)
		for i, c := range data {
			want := c
			if want == 0x7F {
				want = 0xFF
			}
			if codes[i] != want {
				t.Errorf("MulawEncode(MulawDecode(%#x)) = %#x, want %#x", c, codes[i], want)
			}
		}
		pcm, err := DecodePCM16(nil, data[:len(data)&^1])
		if err != nil {
			t.Fatalf("DecodePCM16(%d bytes) error: %v", len(data)&^1, err)
		}
		back := MulawDecode(nil, MulawEncode(nil, pcm))
		for i, v := range pcm {
			a := min(abs(int(v)), mulawClip)
			if e := abs(int(back[i]) - int(v)); e > (a+mulawBias)/32+abs(int(v))-a {
				t.Errorf("MulawDecode(MulawEncode(%d)) = %d: error %d too large", v, back[i], e)
			}
		}
	})
}
