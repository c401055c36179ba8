package local

import (
	"bytes"
	"encoding/binary"
	"io"
	"os/exec"
	"testing"
)

// wavBytes builds a WAV header: fmt fields, extra chunks before data, and
// the data size field.
func wavBytes(format, channels uint16, rate uint32, bits uint16, extra []byte, dataSize uint32) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(0x7ffff024))
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, format)
	binary.Write(&b, binary.LittleEndian, channels)
	binary.Write(&b, binary.LittleEndian, rate)
	binary.Write(&b, binary.LittleEndian, rate*uint32(channels)*uint32(bits/8))
	binary.Write(&b, binary.LittleEndian, channels*bits/8)
	binary.Write(&b, binary.LittleEndian, bits)
	b.Write(extra)
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, dataSize)
	return b.Bytes()
}

func TestReadWAVHeader(t *testing.T) {
	list := append([]byte("LIST\x05\x00\x00\x00abcde"), 0) // odd size, padded
	for _, c := range []struct {
		name string
		in   []byte
		want wavFormat
		ok   bool
	}{
		{"espeak streaming", wavBytes(1, 1, 22050, 16, nil, 0x7ffff000), wavFormat{22050, 1, 0x7ffff000}, true},
		{"with LIST chunk", wavBytes(1, 1, 16000, 16, list, 320), wavFormat{16000, 1, 320}, true},
		{"zero data size", wavBytes(1, 1, 8000, 16, nil, 0), wavFormat{8000, 1, 1<<63 - 1}, true},
		{"8-bit", wavBytes(1, 1, 8000, 8, nil, 10), wavFormat{}, false},
		{"mu-law", wavBytes(7, 1, 8000, 8, nil, 10), wavFormat{}, false},
		{"no channels", wavBytes(1, 0, 8000, 16, nil, 10), wavFormat{}, false},
		{"silly rate", wavBytes(1, 1, 10, 16, nil, 10), wavFormat{}, false},
		{"not RIFF", []byte("RIFX\x00\x00\x00\x00WAVE"), wavFormat{}, false},
		{"truncated", wavBytes(1, 1, 8000, 16, nil, 10)[:30], wavFormat{}, false},
		{"data first", []byte("RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00"), wavFormat{}, false},
		{"empty", nil, wavFormat{}, false},
	} {
		got, err := readWAVHeader(bytes.NewReader(c.in))
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("readWAVHeader(%s) = %+v, %v; want %+v, ok=%v", c.name, got, err, c.want, c.ok)
		}
	}
}

// TestReadWAVHeaderEspeak reads what the installed espeak-ng writes.
func TestReadWAVHeaderEspeak(t *testing.T) {
	_, err := lookEspeak("")
	needEngine(t, "espeak-ng", err)
	out, err := exec.Command("espeak-ng", "--stdout", "hello").Output()
	if err != nil {
		t.Fatalf("espeak-ng --stdout: %v (run scripts/speech-deps.sh)", err)
	}
	r := bytes.NewReader(out)
	f, err := readWAVHeader(r)
	if err != nil || f.SampleRate != 22050 || f.Channels != 1 {
		t.Fatalf("readWAVHeader(espeak-ng output) = %+v, %v; want 22050 Hz mono", f, err)
	}
	if rest, _ := io.ReadAll(r); len(rest) == 0 || len(rest)%2 != 0 {
		t.Errorf("espeak-ng data after the header: %d bytes, want a positive even number", len(rest))
	}
}

func FuzzReadWAVHeader(f *testing.F) {
	f.Add(wavBytes(1, 1, 22050, 16, nil, 0x7ffff000))
	f.Add(wavBytes(1, 2, 44100, 16, []byte("LIST\x04\x00\x00\x00abcd"), 0))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		got, err := readWAVHeader(r)
		read := len(b) - r.Len()
		if read > 12+8+maxFmtChunk+8+maxSkippedWAV+8 {
			t.Fatalf("readWAVHeader read %d bytes of header", read)
		}
		if err == nil && (got.SampleRate < 1000 || got.Channels < 1 || got.DataSize <= 0) {
			t.Fatalf("readWAVHeader accepted %+v", got)
		}
	})
}
