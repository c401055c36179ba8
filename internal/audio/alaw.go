package audio

import "math/bits"

// G.711 A-law (ITU-T G.711, table 1), the law of European and most
// international phone networks; SIP peers offer it as PCMA (RTP payload type
// 8). Written out like μ-law rather than imported.
//
// A-law works on the 13-bit magnitude (the 16-bit sample shifted right by 3).
// Segment 0 is linear with the same step as segment 1, so small signals keep
// full resolution; above that each segment doubles the step. Decoded values
// are the midpoints of their intervals, scaled back to 16 bits, so the
// round-trip error is at most half a step (8 below 512, 512 at the loudest).
// Even bits are inverted on the wire (XOR 0x55), as the standard requires:
// 0xD5 is +8 (the quietest positive step) and 0x55 is −8; there is no zero.
const alawXor = 0x55

// alawTable maps each A-law code word to its linear value.
var alawTable = func() (t [256]int16) {
	for i := range t {
		a := byte(i) ^ alawXor
		mag := int(a&0x0F)<<4 + 8 // the interval's midpoint in segment 0
		if seg := (a & 0x70) >> 4; seg > 0 {
			mag = (mag + 0x100) << (seg - 1)
		}
		if a&0x80 != 0 {
			t[i] = int16(mag)
		} else {
			t[i] = int16(-mag)
		}
	}
	return t
}()

// alawEncodeSample compresses one linear sample to its A-law code word.
func alawEncodeSample(s int16) byte {
	x := int(s) >> 3 // 13-bit domain; arithmetic shift keeps the sign
	mask := byte(0x80 | alawXor)
	if x < 0 {
		x = -x - 1 // one's complement, as in G.711's reference code
		mask = alawXor
	}
	// x is 0..4095: the segment is the position of the highest set bit above
	// bit 4 (segment 0 ends at 0x1F, then each ends at twice the last), and
	// segments 0 and 1 share a step of 2 in this domain.
	seg := bits.Len(uint(x >> 5))
	var mant int
	if seg < 2 {
		mant = x >> 1 & 0x0F
	} else {
		mant = x >> seg & 0x0F
	}
	return (byte(seg)<<4 | byte(mant)) ^ mask
}

// AlawEncode appends the G.711 A-law code of each sample of pcm to dst and
// returns the extended slice, like MulawEncode.
func AlawEncode(dst []byte, pcm []int16) []byte {
	n := len(dst)
	dst = grow(dst, len(pcm))
	out := dst[n:]
	for i, s := range pcm {
		out[i] = alawEncodeSample(s)
	}
	return dst
}

// AlawDecode appends the linear value of each A-law code word in alaw to dst
// and returns the extended slice; one table lookup per sample.
func AlawDecode(dst []int16, alaw []byte) []int16 {
	n := len(dst)
	dst = grow(dst, len(alaw))
	out := dst[n:]
	for i, a := range alaw {
		out[i] = alawTable[a]
	}
	return dst
}
