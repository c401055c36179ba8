package siptest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// WAV is mono 16-bit PCM audio: what the peers play (baresip's aufile
// source) and record (baresip's sndfile dumps), read and written by
// ReadWAV and WriteWAV.
type WAV struct {
	Rate    int // samples per second
	Samples []int16
}

// Duration returns how long the audio lasts.
func (w WAV) Duration() time.Duration {
	if w.Rate <= 0 {
		return 0
	}
	return time.Duration(len(w.Samples)) * time.Second / time.Duration(w.Rate)
}

// maxWAVBytes bounds what ReadWAV loads: ten minutes of 48 kHz audio,
// far more than any test call.
const maxWAVBytes = 64 << 20

// ReadWAV reads a mono PCM16 WAV file. A data chunk that claims more
// bytes than the file holds (espeak-ng --stdout writes a placeholder
// size, and a peer killed mid-call may leave one) is read to the end.
func ReadWAV(path string) (WAV, error) {
	f, err := os.Open(path)
	if err != nil {
		return WAV{}, err
	}
	defer f.Close()
	w, err := decodeWAV(io.LimitReader(f, maxWAVBytes))
	if err != nil {
		return WAV{}, fmt.Errorf("siptest: %s: %w", path, err)
	}
	return w, nil
}

func decodeWAV(r io.Reader) (WAV, error) {
	var riff [12]byte
	if _, err := io.ReadFull(r, riff[:]); err != nil {
		return WAV{}, fmt.Errorf("not a WAV file: %w", err)
	}
	if string(riff[0:4]) != "RIFF" || string(riff[8:12]) != "WAVE" {
		return WAV{}, errors.New("not a RIFF/WAVE file")
	}
	var w WAV
	for {
		var ch [8]byte
		if _, err := io.ReadFull(r, ch[:]); err != nil {
			return WAV{}, fmt.Errorf("no data chunk: %w", err)
		}
		size := int64(binary.LittleEndian.Uint32(ch[4:8]))
		switch string(ch[0:4]) {
		case "fmt ":
			if size < 16 || size > 1024 {
				return WAV{}, fmt.Errorf("fmt chunk of %d bytes", size)
			}
			buf := make([]byte, size+size&1)
			if _, err := io.ReadFull(r, buf); err != nil {
				return WAV{}, fmt.Errorf("fmt chunk: %w", err)
			}
			format := binary.LittleEndian.Uint16(buf[0:2])
			channels := binary.LittleEndian.Uint16(buf[2:4])
			bits := binary.LittleEndian.Uint16(buf[14:16])
			if (format != 1 && format != 0xFFFE) || channels != 1 || bits != 16 {
				return WAV{}, fmt.Errorf("format %d, %d channels, %d bits; want mono 16-bit PCM", format, channels, bits)
			}
			w.Rate = int(binary.LittleEndian.Uint32(buf[4:8]))
		case "data":
			if w.Rate == 0 {
				return WAV{}, errors.New("data chunk before fmt chunk")
			}
			data, err := io.ReadAll(io.LimitReader(r, size))
			if err != nil {
				return WAV{}, fmt.Errorf("data chunk: %w", err)
			}
			w.Samples = make([]int16, len(data)/2)
			for i := range w.Samples {
				w.Samples[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
			}
			return w, nil
		default:
			if _, err := io.CopyN(io.Discard, r, size+size&1); err != nil {
				return WAV{}, fmt.Errorf("%q chunk: %w", ch[0:4], err)
			}
		}
	}
}

// WriteWAV writes w as a mono PCM16 WAV file with a 44-byte header.
func WriteWAV(path string, w WAV) error {
	data := 2 * len(w.Samples)
	buf := make([]byte, 44+data)
	copy(buf[0:], "RIFF")
	binary.LittleEndian.PutUint32(buf[4:], uint32(36+data))
	copy(buf[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(buf[16:], 16)
	binary.LittleEndian.PutUint16(buf[20:], 1) // PCM
	binary.LittleEndian.PutUint16(buf[22:], 1) // mono
	binary.LittleEndian.PutUint32(buf[24:], uint32(w.Rate))
	binary.LittleEndian.PutUint32(buf[28:], uint32(2*w.Rate))
	binary.LittleEndian.PutUint16(buf[32:], 2)
	binary.LittleEndian.PutUint16(buf[34:], 16)
	copy(buf[36:], "data")
	binary.LittleEndian.PutUint32(buf[40:], uint32(data))
	for i, s := range w.Samples {
		binary.LittleEndian.PutUint16(buf[44+2*i:], uint16(s))
	}
	return os.WriteFile(path, buf, 0o644)
}
