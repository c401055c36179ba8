package audio

import (
	"bytes"
	"math"
	"testing"

	"github.com/zaf/g711"
)

func TestAlawKnownValues(t *testing.T) {
	encode := []struct {
		in   int16
		want byte
	}{
		{0, 0xD5}, // +0 quantizes to the smallest positive step
		{-1, 0x55},
		{8, 0xD5},
		{-8, 0x55},
		{16, 0xD4},
		{256, 0xC5}, // first value of segment 1
		{32767, 0xAA},
		{-32768, 0x2A},
	}
	for _, tt := range encode {
		if got := AlawEncode(nil, []int16{tt.in}); len(got) != 1 || got[0] != tt.want {
			t.Errorf("AlawEncode(%d) = %#x, want %#x", tt.in, got, tt.want)
		}
	}
	decode := []struct {
		in   byte
		want int16
	}{
		{0xD5, 8}, {0x55, -8}, {0xD4, 24}, {0xC5, 264}, {0xAA, 32256}, {0x2A, -32256},
	}
	for _, tt := range decode {
		if got := AlawDecode(nil, []byte{tt.in}); len(got) != 1 || got[0] != tt.want {
			t.Errorf("AlawDecode(%#x) = %v, want %d", tt.in, got, tt.want)
		}
	}
}

// TestAlawMatchesReference checks every code word and every int16 against
// zaf/g711 (the codec diago uses on the wire), a port of the reference C
// implementation, so both ends of a SIP call agree bit for bit.
func TestAlawMatchesReference(t *testing.T) {
	for c := range 256 {
		if got, want := AlawDecode(nil, []byte{byte(c)})[0], g711.DecodeAlawFrame(uint8(c)); got != want {
			t.Errorf("AlawDecode(%#x) = %d, want %d (zaf/g711)", c, got, want)
		}
	}
	for v := math.MinInt16; v <= math.MaxInt16; v++ {
		if got, want := AlawEncode(nil, []int16{int16(v)})[0], g711.EncodeAlawFrame(int16(v)); got != want {
			t.Fatalf("AlawEncode(%d) = %#x, want %#x (zaf/g711)", v, got, want)
		}
	}
}

// TestAlawDecodeAll checks every code word against G.711's definition in
// its 13-bit domain: segment 0 holds (2m+1), segment e>0 holds
// (2m+33)·2^(e−1), scaled by 8 to 16 bits; even bits are inverted.
func TestAlawDecodeAll(t *testing.T) {
	for c := range 256 {
		a := byte(c) ^ 0x55
		e, m := int(a>>4&7), int(a&0xF)
		want := 8 * (2*m + 1)
		if e > 0 {
			want = 8 * ((2*m + 33) << (e - 1))
		}
		if a&0x80 == 0 {
			want = -want
		}
		if got := AlawDecode(nil, []byte{byte(c)})[0]; int(got) != want {
			t.Errorf("AlawDecode(%#x) = %d, want %d", c, got, want)
		}
	}
}

func TestAlawCodeRoundTrip(t *testing.T) {
	for c := range 256 {
		if got := AlawEncode(nil, AlawDecode(nil, []byte{byte(c)}))[0]; got != byte(c) {
			t.Errorf("AlawEncode(AlawDecode(%#x)) = %#x, want %#x", c, got, c)
		}
	}
}

// TestAlawErrorBound checks every int16 decodes back within half a
// quantization step: 8 below 512 (segments 0 and 1), then half the step of
// the value's segment.
func TestAlawErrorBound(t *testing.T) {
	pcm := make([]int16, 0, 65536)
	for v := math.MinInt16; v <= math.MaxInt16; v++ {
		pcm = append(pcm, int16(v))
	}
	got := AlawDecode(nil, AlawEncode(nil, pcm))
	for i, v := range pcm {
		a := math.Abs(float64(v))
		bound := 16.0
		if a >= 512 {
			bound = math.Exp2(math.Floor(math.Log2(a))-4) + 8 // half the step, plus the one's-complement offset
		}
		if e := math.Abs(float64(got[i]) - float64(v)); e > bound {
			t.Fatalf("AlawDecode(AlawEncode(%d)) = %d: error %v, want ≤ %v", v, got[i], e, bound)
		}
	}
}

func TestAlawSNR(t *testing.T) {
	for _, amp := range []float64{300, 3000, 16000, 32000} {
		in := sine(8000, 1000, amp, 8000)
		got := AlawDecode(nil, AlawEncode(nil, in))
		if snr := snrDB(in, got); snr < 30 {
			t.Errorf("A-law round trip of a 1 kHz sine at amplitude %v: SNR %.1f dB, want ≥ 30", amp, snr)
		}
	}
}

func TestAlawAppends(t *testing.T) {
	b := AlawEncode([]byte{1, 2}, []int16{0, 0})
	if !bytes.Equal(b, []byte{1, 2, 0xD5, 0xD5}) {
		t.Errorf("AlawEncode([1 2], [0 0]) = %v, want [1 2 213 213]", b)
	}
	s := AlawDecode([]int16{7}, []byte{0xD5, 0xAA})
	if len(s) != 3 || s[0] != 7 || s[1] != 8 || s[2] != 32256 {
		t.Errorf("AlawDecode([7], [0xD5 0xAA]) = %v, want [7 8 32256]", s)
	}
}

// TestAlawFormat checks that an A-law line's frames go through the Decoder
// and Encoder like μ-law's: 160 bytes per 20 ms, and a tone survives.
func TestAlawFormat(t *testing.T) {
	f := Format{Encoding: Alaw, SampleRate: 8000}
	if err := f.Validate(); err != nil {
		t.Fatalf("Format%+v.Validate() = %v, want nil", f, err)
	}
	if got := f.BytesPerFrame(); got != 160 {
		t.Errorf("Format%+v.BytesPerFrame() = %d, want 160", f, got)
	}
	if err := (Format{Encoding: Alaw, SampleRate: 16000}).Validate(); err == nil {
		t.Error("Format{alaw 16000}.Validate() = nil, want an error")
	}
	in := sine(8000, 440, 8000, 800) // 100 ms
	wire := AlawEncode(nil, in)
	d := NewDecoder(f)
	frames, err := d.Write(wire)
	if err != nil {
		t.Fatalf("Decoder(alaw).Write: %v", err)
	}
	if len(frames) < 4 {
		t.Fatalf("Decoder(alaw).Write(100 ms) = %d frames, want ≥ 4", len(frames))
	}
	if db := DBFS(frames[2]); db < -20 {
		t.Errorf("decoded A-law tone at %.1f dBFS, want about −15", db)
	}
}

func BenchmarkAlawEncodeFrame(b *testing.B) {
	pcm := sine(8000, 440, 8000, 160)
	buf := make([]byte, 0, 160)
	b.SetBytes(160)
	for b.Loop() {
		buf = AlawEncode(buf[:0], pcm)
	}
}
