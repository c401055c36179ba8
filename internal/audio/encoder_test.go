package audio

import (
	"bytes"
	"testing"
)

func TestEncoderFrameSizes(t *testing.T) {
	for _, f := range allFormats {
		for _, chunk := range []int{FrameSamples, 1, 777} {
			e := NewEncoder(f)
			pcm := sine(PipelineRate, 440, 8000, PipelineRate+160) // 1.01 s
			var frames [][]byte
			for rest := pcm; len(rest) > 0; {
				n := min(chunk, len(rest))
				frames = append(frames, e.Encode(rest[:n])...)
				rest = rest[n:]
			}
			before := len(frames)
			frames = append(frames, e.Flush()...)
			if len(frames) != 51 {
				t.Errorf("Encoder(%v) of 1.01 s in chunks of %d: %d frames (%d before Flush), want 51", f, chunk, len(frames), before)
			}
			for i, fr := range frames {
				if len(fr) != f.BytesPerFrame() {
					t.Errorf("Encoder(%v) frame %d: %d bytes, want %d", f, i, len(fr), f.BytesPerFrame())
				}
			}
			// The last frame holds 10 ms of audio, then silence.
			last := frames[len(frames)-1]
			silence := byte(0)
			if f.Encoding == Mulaw {
				silence = 0xFF
			}
			for _, b := range last[len(last)*3/4:] {
				if b != silence {
					t.Errorf("Encoder(%v).Flush: last frame not padded with silence (%#x), found %#x", f, silence, b)
					break
				}
			}
			if again := e.Flush(); again != nil {
				t.Errorf("Encoder(%v).Flush twice: second gave %d frames, want none", f, len(again))
			}
		}
	}
}

// TestEncoderDecoderRoundTrip: pipeline audio sent to a client and back keeps
// its waveform and timing for every format.
func TestEncoderDecoderRoundTrip(t *testing.T) {
	for _, f := range allFormats {
		in := sine(PipelineRate, 1000, 12000, PipelineRate/2)
		e, d := NewEncoder(f), NewDecoder(f)
		frames := append(e.Encode(in), e.Flush()...)
		var got []int16
		for _, fr := range frames {
			out, err := d.Write(fr)
			if err != nil {
				t.Fatalf("Decoder(%v).Write error: %v", f, err)
			}
			for _, o := range out {
				got = append(got, o...)
			}
		}
		minSNR := 40.0
		if f.Encoding == Mulaw {
			minSNR = 30
		}
		n := min(len(got), len(in)) - 160
		if snr := snrDB(in[160:n], got[160:n]); snr < minSNR {
			t.Errorf("Encoder→Decoder(%v) of a 1 kHz sine: SNR %.1f dB, want ≥ %v", f, snr, minSNR)
		}
	}
}

func TestEncoderReset(t *testing.T) {
	e := NewEncoder(Format{Mulaw, 8000})
	e.Encode(noise(1, 100))
	e.Reset()
	if got := e.Flush(); got != nil {
		t.Errorf("Encoder.Flush after Reset: %d frames, want none", len(got))
	}
}

func TestNewEncoderPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Errorf("NewEncoder(pcm16/44100) did not panic")
		}
	}()
	NewEncoder(Format{PCM16, 44100})
}

// TestEncoderHeadroom: with Headroom, each frame carries that many free
// bytes in front of exactly the audio it would carry without.
func TestEncoderHeadroom(t *testing.T) {
	for _, f := range []Format{{PCM16, 16000}, {Mulaw, 8000}, {PCM16, 48000}} {
		pcm := make([]int16, 3*FrameSamples+100)
		for i := range pcm {
			pcm[i] = int16(i * 37)
		}
		plain, roomy := NewEncoder(f), NewEncoder(f)
		roomy.Headroom = 5
		want := append(plain.Encode(pcm), plain.Flush()...)
		got := append(roomy.Encode(pcm), roomy.Flush()...)
		if len(got) != len(want) {
			t.Fatalf("%v: %d frames with headroom, %d without", f, len(got), len(want))
		}
		for i := range got {
			if len(got[i]) != 5+f.BytesPerFrame() || !bytes.Equal(got[i][5:], want[i]) || !bytes.Equal(got[i][:5], make([]byte, 5)) {
				t.Fatalf("%v frame %d: %d bytes, audio equal %v", f, i, len(got[i]), bytes.Equal(got[i][5:], want[i]))
			}
		}
	}
}
