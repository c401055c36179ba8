package audio

import "testing"

// The per-frame paths, one 20 ms frame per iteration. A call runs each 50
// times a second, so ns/op × 50 is the CPU share per call and direction.

func BenchmarkDecoder48k(b *testing.B) {
	f := Format{PCM16, 48000}
	frame := EncodePCM16(nil, sine(48000, 440, 10000, f.SamplesPerFrame()))
	d := NewDecoder(f)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecoderMulaw(b *testing.B) {
	f := Format{Mulaw, 8000}
	frame := MulawEncode(nil, sine(8000, 440, 10000, f.SamplesPerFrame()))
	d := NewDecoder(f)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResample16to8(b *testing.B) {
	r := NewResampler(16000, 8000)
	in := sine(16000, 440, 10000, FrameSamples)
	out := make([]int16, 0, FrameSamples)
	b.ReportAllocs()
	for b.Loop() {
		out = r.Process(out[:0], in)
	}
}

func BenchmarkResample22050to16(b *testing.B) {
	r := NewResampler(22050, 16000)
	in := sine(22050, 440, 10000, 441) // 20 ms
	out := make([]int16, 0, FrameSamples+1)
	b.ReportAllocs()
	for b.Loop() {
		out = r.Process(out[:0], in)
	}
}

func BenchmarkEncoderMulaw(b *testing.B) {
	e := NewEncoder(Format{Mulaw, 8000})
	in := sine(16000, 440, 10000, FrameSamples)
	b.ReportAllocs()
	for b.Loop() {
		e.Encode(in)
	}
}

func BenchmarkEncoder48k(b *testing.B) {
	e := NewEncoder(Format{PCM16, 48000})
	in := sine(16000, 440, 10000, FrameSamples)
	b.ReportAllocs()
	for b.Loop() {
		e.Encode(in)
	}
}
