package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// wavFormat is what this package needs from a WAV header.
type wavFormat struct {
	SampleRate int
	Channels   int
	// DataSize is the byte length the data chunk declares; streaming
	// writers (espeak-ng --stdout) cannot know it and put a huge
	// placeholder there, so it is an upper bound, not a promise.
	DataSize int64
}

// Limits on a header: espeak-ng writes 44 bytes; anything near these is
// not a WAV stream this package should trust.
const (
	maxFmtChunk    = 1 << 10
	maxSkippedWAV  = 1 << 16
	wavHeaderChunk = 8
)

var errNotWAV = errors.New("not a RIFF/WAVE stream")

// readWAVHeader reads a RIFF/WAVE header from r up to the first byte of
// sample data, skipping chunks it does not need (LIST, fact). It accepts
// only uncompressed PCM16, which is all espeak-ng produces; r is left at
// the start of the samples.
func readWAVHeader(r io.Reader) (wavFormat, error) {
	var f wavFormat
	var riff [12]byte
	if _, err := io.ReadFull(r, riff[:]); err != nil {
		return f, fmt.Errorf("wav: %w: %w", errNotWAV, err)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return f, fmt.Errorf("wav: %w: starts with %q", errNotWAV, riff[0:4])
	}
	haveFmt := false
	skipped := int64(0)
	for {
		var ch [wavHeaderChunk]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return f, fmt.Errorf("wav: reading chunk header: %w", err)
		}
		id := string(ch[0:4])
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		switch id {
		case "fmt ":
			if size < 16 || size > maxFmtChunk {
				return f, fmt.Errorf("wav: fmt chunk of %d bytes, want 16..%d", size, maxFmtChunk)
			}
			buf := make([]byte, size+size&1)
			if _, err := io.ReadFull(r, buf); err != nil {
				return f, fmt.Errorf("wav: reading fmt chunk: %w", err)
			}
			format := binary.LittleEndian.Uint16(buf[0:2])
			f.Channels = int(binary.LittleEndian.Uint16(buf[2:4]))
			f.SampleRate = int(binary.LittleEndian.Uint32(buf[4:8]))
			bits := binary.LittleEndian.Uint16(buf[14:16])
			// 0xFFFE is WAVE_FORMAT_EXTENSIBLE; its sub-format is not
			// checked, the bit depth below is what matters here.
			if format != 1 && format != 0xFFFE {
				return f, fmt.Errorf("wav: format tag %d, want 1 (PCM)", format)
			}
			if bits != 16 {
				return f, fmt.Errorf("wav: %d bits per sample, want 16", bits)
			}
			if f.Channels < 1 || f.Channels > 8 {
				return f, fmt.Errorf("wav: %d channels, want 1..8", f.Channels)
			}
			if f.SampleRate < 1000 || f.SampleRate > 384000 {
				return f, fmt.Errorf("wav: sample rate %d, want 1000..384000", f.SampleRate)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return f, errors.New("wav: data chunk before fmt chunk")
			}
			f.DataSize = size
			if size == 0 {
				// Some streaming writers leave 0; read to the end.
				f.DataSize = 1<<63 - 1
			}
			return f, nil
		default:
			skip := size + size&1
			skipped += skip
			if skipped > maxSkippedWAV {
				return f, fmt.Errorf("wav: more than %d bytes of chunks before the data", maxSkippedWAV)
			}
			if _, err := io.CopyN(io.Discard, r, skip); err != nil {
				return f, fmt.Errorf("wav: skipping %q chunk: %w", id, err)
			}
		}
	}
}
