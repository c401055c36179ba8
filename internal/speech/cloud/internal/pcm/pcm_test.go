package pcm

import (
	"encoding/binary"
	"errors"
	"slices"
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
