package pcm

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"testing"
)

func TestDecoderCarriesOddBytes(t *testing.T) {
	samples := []int16{0, 1, -1, 32767, -32768, 12345, -2}
	raw := AppendBytes(nil, samples)
	for cut := range len(raw) + 1 {
		var d Decoder
		got := d.Decode(nil, raw[:cut])
		got = d.Decode(got, raw[cut:])
		if !slices.Equal(got, samples) || d.Pending() {
			t.Errorf("Decode cut at byte %d = %v (pending %v), want %v", cut, got, d.Pending(), samples)
		}
	}
	var d Decoder
	var got []int16
	for _, b := range raw {
		got = d.Decode(got, []byte{b})
	}
	if !slices.Equal(got, samples) {
		t.Errorf("Decode a byte at a time = %v, want %v", got, samples)
	}
}

func TestWAVHeader(t *testing.T) {
	h := WAVHeader(16000, 8000)
	if len(h) != WAVHeaderSize {
		t.Fatalf("WAVHeader is %d bytes, want %d", len(h), WAVHeaderSize)
	}
	le := binary.LittleEndian
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"RIFF size", le.Uint32(h[4:]), 36 + 16000},
		{"fmt size", le.Uint32(h[16:]), 16},
		{"format", uint32(le.Uint16(h[20:])), 1},
		{"channels", uint32(le.Uint16(h[22:])), 1},
		{"rate", le.Uint32(h[24:]), 16000},
		{"byte rate", le.Uint32(h[28:]), 32000},
		{"block align", uint32(le.Uint16(h[32:])), 2},
		{"bits", uint32(le.Uint16(h[34:])), 16},
		{"data size", le.Uint32(h[40:]), 16000},
	} {
		if c.got != c.want {
			t.Errorf("WAVHeader(16000, 8000) %s = %d, want %d", c.name, c.got, c.want)
		}
	}
	rate, start, err := ParseWAVHeader(h)
	if rate != 16000 || start != WAVHeaderSize || err != nil {
		t.Errorf("ParseWAVHeader(WAVHeader) = %d, %d, %v; want 16000, 44, nil", rate, start, err)
	}
}

// wav builds a header with the chunks given before "data".
func wav(chunks ...[]byte) []byte {
	b := []byte("RIFF\xff\xff\xff\xffWAVE")
	for _, c := range chunks {
		b = append(b, c...)
	}
	return append(b, "data\xff\xff\xff\xff"...)
}

func chunk(id string, body []byte) []byte {
	b := binary.LittleEndian.AppendUint32([]byte(id), uint32(len(body)))
	b = append(b, body...)
	if len(body)%2 == 1 {
		b = append(b, 0)
	}
	return b
}

func fmtChunk(format, channels uint16, rate uint32, bits uint16) []byte {
	le := binary.LittleEndian
	f := le.AppendUint16(nil, format)
	f = le.AppendUint16(f, channels)
	f = le.AppendUint32(f, rate)
	f = le.AppendUint32(f, rate*uint32(channels)*uint32(bits)/8)
	f = le.AppendUint16(f, channels*bits/8)
	f = le.AppendUint16(f, bits)
	return chunk("fmt ", f)
}

func TestParseWAVHeader(t *testing.T) {
	tests := []struct {
		name      string
		b         []byte
		rate      int
		wantError bool
	}{
		{"streamed sizes", wav(fmtChunk(1, 1, 24000, 16)), 24000, false},
		{"LIST chunk with odd size before data", wav(fmtChunk(1, 1, 22050, 16), chunk("LIST", []byte("INFOabc"))), 22050, false},
		{"extensible format", wav(fmtChunk(0xFFFE, 1, 16000, 16)), 16000, false},
		{"stereo", wav(fmtChunk(1, 2, 16000, 16)), 0, true},
		{"8-bit", wav(fmtChunk(1, 1, 8000, 8)), 0, true},
		{"float", wav(fmtChunk(3, 1, 16000, 16)), 0, true},
		{"data before fmt", wav(), 0, true},
		{"not WAVE", []byte("RIFF\x00\x00\x00\x00AVI LIST"), 0, true},
		{"huge chunk", wav(chunk("junk", nil)[:4], []byte{0xff, 0xff, 0xff, 0x7f}), 0, true},
	}
	for _, tt := range tests {
		rate, start, err := ParseWAVHeader(tt.b)
		if tt.wantError {
			if err == nil || errors.Is(err, ErrShortHeader) {
				t.Errorf("ParseWAVHeader(%s) = %d, %d, %v; want a format error", tt.name, rate, start, err)
			}
			continue
		}
		if err != nil || rate != tt.rate || start != len(tt.b) {
			t.Errorf("ParseWAVHeader(%s) = %d, %d, %v; want %d, %d, nil", tt.name, rate, start, err, tt.rate, len(tt.b))
		}
		for n := range len(tt.b) {
			if _, _, err := ParseWAVHeader(tt.b[:n]); !errors.Is(err, ErrShortHeader) {
				t.Errorf("ParseWAVHeader(%s[:%d]) = %v, want ErrShortHeader", tt.name, n, err)
				break
			}
		}
	}
}

func FuzzParseWAVHeader(f *testing.F) {
	f.Add(WAVHeader(16000, 10))
	f.Add(wav(fmtChunk(1, 1, 22050, 16), chunk("LIST", []byte("INFOabc"))))
	f.Add(wav(fmtChunk(1, 2, 16000, 16)))
	f.Add([]byte("RIFF"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rate, start, err := ParseWAVHeader(b)
		if err != nil {
			return
		}
		if rate <= 0 || start < 12 || start > len(b) || start > MaxWAVHeader+8 {
			t.Fatalf("ParseWAVHeader(%q) = %d, %d, nil: rate or offset out of range", b, rate, start)
		}
	})
}

func tone(rate, n int, freq, amp float64) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(amp * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return out
}

func resampleChunks(from, to int, in []int16, chunk int) []int16 {
	r := NewResampler(from, to)
	var out []int16
	for len(in) > 0 {
		k := min(chunk, len(in))
		out = r.Process(out, in[:k])
		in = in[k:]
	}
	return r.Flush(out)
}

func TestResamplerLengthAndChunking(t *testing.T) {
	pairs := [][2]int{
		{24000, 16000}, {24000, 8000}, {24000, 48000}, {24000, 22050}, {24000, 44100},
		{16000, 8000}, {8000, 16000}, {22050, 16000}, {16000, 16000}, {44100, 44101},
	}
	for _, p := range pairs {
		from, to := p[0], p[1]
		for _, n := range []int{0, 1, 7, 480, from / 3, from + 13} {
			in := tone(from, n, 440, 8000)
			whole := resampleChunks(from, to, in, max(1, n))
			if want := OutputLen(n, from, to); len(whole) != want {
				t.Errorf("resample %d→%d of %d samples: %d out, want %d", from, to, n, len(whole), want)
			}
			for _, c := range []int{1, 3, 160, 479} {
				if c < 160 && n > 480 {
					continue // slow under -race, and nothing new
				}
				if got := resampleChunks(from, to, in, c); !slices.Equal(got, whole) {
					t.Errorf("resample %d→%d of %d samples in chunks of %d differs from the whole", from, to, n, c)
				}
			}
		}
	}
}

func TestResamplerReuseAfterFlush(t *testing.T) {
	in := tone(24000, 2400, 440, 8000)
	r := NewResampler(24000, 16000)
	first := r.Flush(r.Process(nil, in))
	second := r.Flush(r.Process(nil, in))
	if !slices.Equal(first, second) {
		t.Errorf("a second stream through the same Resampler differs from the first")
	}
}

func rms(s []int16) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(s)))
}

func TestResamplerKeepsSpeechBandRejectsAliases(t *testing.T) {
	tests := []struct {
		from, to int
		freq     float64
		gainMin  float64
		gainMax  float64
	}{
		{24000, 16000, 440, 0.97, 1.03},
		{24000, 16000, 3000, 0.95, 1.03},
		{24000, 8000, 440, 0.97, 1.03},
		{24000, 8000, 3000, 0.9, 1.03},   // near the new Nyquist, still passed
		{24000, 8000, 6000, 0, 0.05},     // above 4 kHz: would alias to 2 kHz
		{24000, 16000, 10000, 0, 0.05},   // above 8 kHz: would alias to 6 kHz
		{16000, 48000, 1000, 0.97, 1.03}, // upsampling
	}
	for _, tt := range tests {
		in := tone(tt.from, tt.from, tt.freq, 10000)
		out := resampleChunks(tt.from, tt.to, in, 480)
		mid := out[len(out)/5 : len(out)*4/5]
		gain := rms(mid) / rms(in[len(in)/5:len(in)*4/5])
		if gain < tt.gainMin || gain > tt.gainMax {
			t.Errorf("resample %d→%d of a %v Hz tone: gain %.3f, want %.2f..%.2f", tt.from, tt.to, tt.freq, gain, tt.gainMin, tt.gainMax)
		}
	}
}

func TestResamplerClampsInsteadOfWrapping(t *testing.T) {
	// A full-scale square wave overshoots full scale after filtering
	// (Gibbs ringing); the peaks must clamp, not wrap to the other sign.
	in := make([]int16, 2400)
	for i := range in {
		in[i] = math.MaxInt16
		if i/60%2 == 1 {
			in[i] = math.MinInt16
		}
	}
	out := resampleChunks(24000, 16000, in, 2400)
	// Each half period is 60 input samples = 40 output samples; the middle
	// of every plateau keeps the plateau's sign.
	for i := 20; i+20 < len(out); i += 40 {
		want := in[i*3/2]
		if (out[i] < 0) != (want < 0) || abs(int(out[i])) < 30000 {
			t.Fatalf("resample of a full-scale square wave: sample %d = %d, want near %d", i, out[i], want)
		}
	}
}

func abs(v int) int { return max(v, -v) }

func BenchmarkResampler20ms(b *testing.B) {
	for _, p := range [][2]int{{24000, 16000}, {24000, 8000}, {24000, 44100}} {
		b.Run(strconv.Itoa(p[0])+"to"+strconv.Itoa(p[1]), func(b *testing.B) {
			r := NewResampler(p[0], p[1])
			frame := tone(p[0], p[0]/50, 440, 8000)
			out := make([]int16, 0, p[1]/25)
			b.ReportAllocs()
			for b.Loop() {
				out = r.Process(out[:0], frame)
			}
		})
	}
}
