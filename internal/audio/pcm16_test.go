package audio

import (
	"bytes"
	"slices"
	"testing"
)

func TestDecodePCM16(t *testing.T) {
	tests := []struct {
		in   []byte
		want []int16
	}{
		{nil, []int16{}},
		{[]byte{0x00, 0x00}, []int16{0}},
		{[]byte{0x01, 0x00}, []int16{1}},
		{[]byte{0x00, 0x01}, []int16{256}},
		{[]byte{0xFF, 0x7F}, []int16{32767}},
		{[]byte{0x00, 0x80}, []int16{-32768}},
		{[]byte{0xFF, 0xFF}, []int16{-1}},
		{[]byte{0x34, 0x12, 0xCC, 0xED}, []int16{0x1234, -0x1234}},
	}
	for _, tt := range tests {
		got, err := DecodePCM16(nil, tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("DecodePCM16(% x) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
		if back := EncodePCM16(nil, tt.want); !bytes.Equal(back, tt.in) {
			t.Errorf("EncodePCM16(%v) = % x, want % x", tt.want, back, tt.in)
		}
	}
}

func TestDecodePCM16OddLength(t *testing.T) {
	for _, n := range []int{1, 3, 641} {
		dst := []int16{5}
		got, err := DecodePCM16(dst, make([]byte, n))
		if err == nil || !slices.Equal(got, dst) {
			t.Errorf("DecodePCM16(%d bytes) = %v, %v; want [5] unchanged and an error", n, got, err)
		}
	}
}

func TestPCM16RoundTripAppends(t *testing.T) {
	pcm := noise(1, 1000)
	b := EncodePCM16([]byte{9}, pcm)
	if len(b) != 2001 || b[0] != 9 {
		t.Fatalf("EncodePCM16([9], 1000 samples): len %d, first %d; want 2001, 9", len(b), b[0])
	}
	got, err := DecodePCM16([]int16{-7}, b[1:])
	if err != nil || got[0] != -7 || !slices.Equal(got[1:], pcm) {
		t.Errorf("DecodePCM16([-7], EncodePCM16(noise)) = %v…, %v; want [-7] + the noise", got[:min(4, len(got))], err)
	}
}
