package audio

import (
	"bytes"
	"math"
	"testing"
)

func TestMulawKnownValues(t *testing.T) {
	encode := []struct {
		in   int16
		want byte
	}{
		{0, 0xFF}, // +0
		{-1, 0x7F},
		{8, 0xFE},
		{-8, 0x7E},
		{120, 0xF0},
		{132, 0xEF},
		{32124, 0x80},
		{32767, 0x80}, // clips to the largest code
		{-32124, 0x00},
		{-32768, 0x00},
	}
	for _, tt := range encode {
		if got := MulawEncode(nil, []int16{tt.in}); len(got) != 1 || got[0] != tt.want {
			t.Errorf("MulawEncode(%d) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
	decode := []struct {
		in   byte
		want int16
	}{
		{0xFF, 0}, {0x7F, 0}, {0xFE, 8}, {0x7E, -8}, {0xF0, 120}, {0xEF, 132},
		{0x80, 32124}, {0x00, -32124},
	}
	for _, tt := range decode {
		if got := MulawDecode(nil, []byte{tt.in}); len(got) != 1 || got[0] != tt.want {
			t.Errorf("MulawDecode(%#x) = %v, want %d", tt.in, got, tt.want)
		}
	}
}

// TestMulawDecodeAll checks every code word against G.711's own definition in
// its 14-bit domain: magnitude (2m+33)·2^e − 33, scaled by 4 to 16 bits.
func TestMulawDecodeAll(t *testing.T) {
	for c := range 256 {
		u := ^byte(c)
		e, m := int(u>>4&7), int(u&0xF)
		want := 4 * ((2*m+33)<<e - 33)
		if u&0x80 != 0 {
			want = -want
		}
		if got := MulawDecode(nil, []byte{byte(c)})[0]; int(got) != want {
			t.Errorf("MulawDecode(%#x) = %d, want %d", c, got, want)
		}
	}
}

func TestMulawCodeRoundTrip(t *testing.T) {
	for c := range 256 {
		want := byte(c)
		if want == 0x7F { // −0 decodes to 0, which encodes as +0
			want = 0xFF
		}
		if got := MulawEncode(nil, MulawDecode(nil, []byte{byte(c)}))[0]; got != want {
			t.Errorf("MulawEncode(MulawDecode(%#x)) = %#x, want %#x", c, got, want)
		}
	}
}

// TestMulawErrorBound checks every int16: the decoded value is within half a
// quantization step, (|v|+132)/32, and values beyond the clip level decode to
// the extreme codes.
func TestMulawErrorBound(t *testing.T) {
	pcm := make([]int16, 0, 65536)
	for v := math.MinInt16; v <= math.MaxInt16; v++ {
		pcm = append(pcm, int16(v))
	}
	got := MulawDecode(nil, MulawEncode(nil, pcm))
	for i, v := range pcm {
		a := math.Abs(float64(v))
		if a > mulawClip {
			want := int16(32124)
			if v < 0 {
				want = -32124
			}
			if got[i] != want {
				t.Errorf("MulawDecode(MulawEncode(%d)) = %d, want %d (clipped)", v, got[i], want)
			}
			continue
		}
		if e := math.Abs(float64(got[i]) - float64(v)); e > (a+mulawBias)/32 {
			t.Errorf("MulawDecode(MulawEncode(%d)) = %d: error %v, want ≤ %v", v, got[i], e, (a+mulawBias)/32)
		}
	}
}

func TestMulawSNR(t *testing.T) {
	// G.711 gives about 38 dB SNR for speech-level signals over a wide range.
	for _, amp := range []float64{300, 3000, 16000, 32000} {
		in := sine(8000, 1000, amp, 8000)
		got := MulawDecode(nil, MulawEncode(nil, in))
		if snr := snrDB(in, got); snr < 30 {
			t.Errorf("μ-law round trip of a 1 kHz sine at amplitude %v: SNR %.1f dB, want ≥ 30", amp, snr)
		}
	}
}

func TestMulawAppends(t *testing.T) {
	b := MulawEncode([]byte{1, 2}, []int16{0, 0})
	if !bytes.Equal(b, []byte{1, 2, 0xFF, 0xFF}) {
		t.Errorf("MulawEncode([1 2], [0 0]) = %v, want [1 2 255 255]", b)
	}
	s := MulawDecode([]int16{7}, []byte{0xFF, 0x80})
	if len(s) != 3 || s[0] != 7 || s[1] != 0 || s[2] != 32124 {
		t.Errorf("MulawDecode([7], [0xFF 0x80]) = %v, want [7 0 32124]", s)
	}
}
