// Package pcm is the little audio plumbing the cloud clients need at their
// edges: PCM16 little-endian to and from bytes (with an odd byte carried
// across network reads) and WAV headers to upload and to skip. Resampling
// is internal/audio's Resampler, the pipeline's one resampler.
package pcm

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// AppendBytes appends samples as little-endian PCM16.
func AppendBytes(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
	}
	return dst
}

// Decoder turns a byte stream of little-endian PCM16 into samples. A read
// can end in the middle of a sample; the odd byte is kept for the next one.
type Decoder struct {
	carry    byte
	hasCarry bool
}

// Decode appends the samples completed by p to dst.
func (d *Decoder) Decode(dst []int16, p []byte) []int16 {
	if len(p) == 0 {
		return dst
	}
	if d.hasCarry {
		dst = append(dst, int16(uint16(d.carry)|uint16(p[0])<<8))
		p = p[1:]
		d.hasCarry = false
	}
	for len(p) >= 2 {
		dst = append(dst, int16(binary.LittleEndian.Uint16(p)))
		p = p[2:]
	}
	if len(p) == 1 {
		d.carry, d.hasCarry = p[0], true
	}
	return dst
}

// Pending reports whether an odd byte is waiting for its pair: at the end
// of a stream, half a sample (which the clients drop).
func (d *Decoder) Pending() bool { return d.hasCarry }

// WAVHeaderSize is the size of the header WAVHeader writes.
const WAVHeaderSize = 44

// WAVHeader returns the canonical 44-byte header of a PCM16 mono WAV file
// holding samples samples at rate Hz.
func WAVHeader(rate, samples int) []byte {
	data := uint32(samples * 2)
	h := make([]byte, 0, WAVHeaderSize)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 36+data)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)             // fmt chunk size
	h = binary.LittleEndian.AppendUint16(h, 1)              // PCM
	h = binary.LittleEndian.AppendUint16(h, 1)              // mono
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))   // sample rate
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*2)) // byte rate
	h = binary.LittleEndian.AppendUint16(h, 2)              // block align
	h = binary.LittleEndian.AppendUint16(h, 16)             // bits per sample
	h = append(h, "data"...)
	h = binary.LittleEndian.AppendUint32(h, data)
	return h
}

// ErrShortHeader is returned by ParseWAVHeader when b ends before the data
// chunk starts: read more and call again.
var ErrShortHeader = errors.New("pcm: WAV header incomplete")

// MaxWAVHeader bounds how far ParseWAVHeader looks for the data chunk.
const MaxWAVHeader = 4 << 10

// ParseWAVHeader reads the header of a streamed WAV file from the start of
// b: the sample rate, and the offset where the samples begin. It accepts only
// PCM16 mono (the format the clients asked for) and ignores the sizes, which
// streaming servers write as 0 or 0xFFFFFFFF.
func ParseWAVHeader(b []byte) (rate, dataStart int, err error) {
	if len(b) < 12 {
		return 0, 0, ErrShortHeader
	}
	if string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return 0, 0, errors.New("pcm: not a RIFF/WAVE stream")
	}
	off := 12
	sawFmt := false
	for {
		if off > MaxWAVHeader {
			return 0, 0, fmt.Errorf("pcm: no data chunk in the first %d bytes", MaxWAVHeader)
		}
		if len(b) < off+8 {
			return 0, 0, ErrShortHeader
		}
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:off+8]))
		off += 8
		if id == "data" {
			if !sawFmt {
				return 0, 0, errors.New("pcm: data chunk before fmt chunk")
			}
			return rate, off, nil
		}
		if size < 0 || size > MaxWAVHeader {
			return 0, 0, fmt.Errorf("pcm: %q chunk of %d bytes before the data", id, size)
		}
		if len(b) < off+size {
			return 0, 0, ErrShortHeader
		}
		if id == "fmt " {
			if size < 16 {
				return 0, 0, fmt.Errorf("pcm: fmt chunk of %d bytes", size)
			}
			f := b[off : off+size]
			format := binary.LittleEndian.Uint16(f[0:])
			channels := binary.LittleEndian.Uint16(f[2:])
			r := binary.LittleEndian.Uint32(f[4:])
			bits := binary.LittleEndian.Uint16(f[14:])
			if format != 1 && format != 0xFFFE || channels != 1 || bits != 16 || r == 0 || r > 384000 {
				return 0, 0, fmt.Errorf("pcm: WAV is format %d, %d channels, %d bits at %d Hz; want PCM16 mono", format, channels, bits, r)
			}
			rate, sawFmt = int(r), true
		}
		off += size + size&1 // chunks are padded to an even size
	}
}
