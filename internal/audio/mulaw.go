package audio

import "math/bits"

// G.711 μ-law (ITU-T G.711, table 2), written out rather than imported: it is
// forty lines, and owning it keeps the package free of dependencies.
//
// Encoding works on the 16-bit magnitude plus a bias of 0x84 (132): the bias
// makes the segment (exponent) simply the position of the highest set bit,
// and a decoded value is the midpoint of its quantization interval, so the
// round-trip error is at most half a step (4 at the quietest segment, 1024 at
// the loudest). Code words are stored inverted, as the standard requires:
// 0xFF is +0 and 0x7F is −0, 0x80 is the largest positive value and 0x00 the
// largest negative one.
const (
	mulawBias = 0x84  // 132: 33 in the 14-bit domain of G.711, shifted left 2
	mulawClip = 32635 // 0x7FFF − bias: the largest magnitude that still fits
)

// mulawTable maps each μ-law code word to its linear value; decoding is one
// load per sample.
var mulawTable = func() (t [256]int16) {
	for i := range t {
		u := ^byte(i)
		mag := (int(u&0x0F)<<3 + mulawBias) << ((u & 0x70) >> 4)
		if u&0x80 != 0 {
			t[i] = int16(mulawBias - mag)
		} else {
			t[i] = int16(mag - mulawBias)
		}
	}
	return t
}()

// mulawEncodeSample compresses one linear sample to its μ-law code word.
func mulawEncodeSample(s int16) byte {
	x := int(s)
	mask := byte(0xFF)
	if x < 0 {
		x = -x // int, so −32768 does not overflow
		mask = 0x7F
	}
	if x > mulawClip {
		x = mulawClip
	}
	x += mulawBias                        // 0x84 ≤ x ≤ 0x7FFF
	seg := bits.Len(uint(x>>8)) & 7       // 0..7: highest set bit above bit 7
	mant := byte(x>>(uint(seg)+3)) & 0x0F // the 4 bits below the highest one
	return (byte(seg)<<4 | mant) ^ mask
}

// MulawEncode appends the G.711 μ-law code of each sample of pcm to dst and
// returns the extended slice. Appending lets the per-frame path reuse one
// buffer: MulawEncode(buf[:0], frame). Magnitudes above 32635 clip, as the
// standard prescribes.
func MulawEncode(dst []byte, pcm []int16) []byte {
	n := len(dst)
	dst = grow(dst, len(pcm))
	out := dst[n:]
	for i, s := range pcm {
		out[i] = mulawEncodeSample(s)
	}
	return dst
}

// MulawDecode appends the linear value of each μ-law code word in ulaw to dst
// and returns the extended slice; one table lookup per sample, since phone
// audio is decoded on every 20 ms frame of every call.
func MulawDecode(dst []int16, ulaw []byte) []int16 {
	n := len(dst)
	dst = grow(dst, len(ulaw))
	out := dst[n:]
	for i, u := range ulaw {
		out[i] = mulawTable[u]
	}
	return dst
}

// grow extends s by n elements, reallocating at most once; the new elements
// are to be overwritten.
func grow[S ~[]E, E any](s S, n int) S {
	if cap(s)-len(s) < n {
		ns := make(S, len(s), len(s)+n+len(s)/4)
		copy(ns, s)
		s = ns
	}
	return s[:len(s)+n]
}
