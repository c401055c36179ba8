package audio

import (
	"encoding/binary"
	"fmt"
)

// DecodePCM16 appends the samples of b, signed 16-bit little-endian PCM, to
// dst and returns the extended slice. An odd length is an error (with dst
// returned unchanged) because a half sample cannot be decoded; a stream that
// may split samples across messages goes through a Decoder, which keeps the
// odd byte for the next write.
func DecodePCM16(dst []int16, b []byte) ([]int16, error) {
	if len(b)%2 != 0 {
		return dst, fmt.Errorf("audio: DecodePCM16: odd byte length %d (PCM16 needs 2 bytes per sample)", len(b))
	}
	n := len(dst)
	dst = grow(dst, len(b)/2)
	out := dst[n:]
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return dst, nil
}

// EncodePCM16 appends pcm as signed 16-bit little-endian bytes to dst and
// returns the extended slice, the byte order of the web-client protocol (and
// of WAV) whatever the host's order.
func EncodePCM16(dst []byte, pcm []int16) []byte {
	n := len(dst)
	dst = grow(dst, 2*len(pcm))
	out := dst[n:]
	for i, s := range pcm {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(s))
	}
	return dst
}
