package audio

import (
	"errors"
	"slices"
	"testing"
)

// decodeParts writes parts in order and returns the frames concatenated,
// failing if any frame has the wrong length.
func decodeParts(t testing.TB, d *Decoder, parts [][]byte) []int16 {
	t.Helper()
	var out []int16
	for _, p := range parts {
		frames, err := d.Write(p)
		if err != nil {
			t.Fatalf("Decoder(%v).Write(%d bytes) error: %v", d.Format(), len(p), err)
		}
		for _, f := range frames {
			if len(f) != FrameSamples {
				t.Fatalf("Decoder(%v).Write: frame of %d samples, want %d", d.Format(), len(f), FrameSamples)
			}
			out = append(out, f...)
		}
	}
	return out
}

func bytesOf(b []byte, size int) [][]byte {
	var parts [][]byte
	for len(b) > 0 {
		n := min(size, len(b))
		parts = append(parts, b[:n])
		b = b[n:]
	}
	return parts
}

// TestDecoderSplits: however a client cuts its stream (even in single bytes,
// splitting PCM16 samples), the frames are the same as from one write.
func TestDecoderSplits(t *testing.T) {
	for _, f := range allFormats {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			stream := encodeClient(f, sine(f.SampleRate, 440, 10000, f.SampleRate)) // 1 s
			want := decodeParts(t, NewDecoder(f), [][]byte{stream})
			if len(want) < 49*FrameSamples {
				t.Fatalf("Decoder(%v) of 1 s in one write: %d frames, want ≥ 49", f, len(want)/FrameSamples)
			}
			splits := map[string][][]byte{
				"1-byte writes": bytesOf(stream, 1),
				"3-byte writes": bytesOf(stream, 3),
				"odd frames":    bytesOf(stream, f.BytesPerFrame()+1),
				"random splits": splitRandom(stream, 42, 2*f.BytesPerFrame()),
				"empty writes":  append([][]byte{{}, {}}, append(bytesOf(stream, 777), []byte{})...),
			}
			for name, parts := range splits {
				if got := decodeParts(t, NewDecoder(f), parts); !slices.Equal(got, want) {
					t.Errorf("Decoder(%v) with %s: %d samples differ from one write's %d", f, name, len(got), len(want))
				}
			}
		})
	}
}

// TestDecoderQuality: decoded audio is the client's audio at 16 kHz, time
// aligned (a 1 kHz sine comes out as the same sine).
func TestDecoderQuality(t *testing.T) {
	for _, f := range allFormats {
		in := sine(f.SampleRate, 1000, 12000, f.SampleRate/2)
		got := decodeParts(t, NewDecoder(f), [][]byte{encodeClient(f, in)})
		ref := sine(PipelineRate, 1000, 12000, len(got))
		minSNR := 40.0
		if f.Encoding == Mulaw {
			minSNR = 30 // G.711 itself is about 38 dB
		}
		if snr := snrDB(ref[160:], got[160:]); snr < minSNR {
			t.Errorf("Decoder(%v) of a 1 kHz sine: SNR %.1f dB against the ideal 16 kHz sine, want ≥ %v", f, snr, minSNR)
		}
	}
}

// TestDecoderBound: one write of more than 2 s keeps the newest 2 s (whole
// frames) and counts the rest as dropped.
func TestDecoderBound(t *testing.T) {
	ramp := func(n int) []int16 { // sample i holds i mod 30000: shows what was kept
		s := make([]int16, n)
		for i := range s {
			s[i] = int16(i % 30000)
		}
		return s
	}
	tests := []struct {
		name        string
		prefix      []byte // written first
		samples     int    // then a ramp of this many 16 kHz samples
		wantFrames  int
		wantDropped uint64
		wantFirst   int16 // first sample of the first frame of the big write
	}{
		{"exactly 2 s", nil, 32000, 100, 0, 0},
		{"3 s", nil, 48000, 100, 50, 16000},
		{"2 s + 1 sample", nil, 32001, 99, 1, 320}, // the odd sample waits for its frame
		// The odd byte starts the stream, so the 16000 dropped samples
		// take it and 31999 bytes of the ramp: the first kept sample is
		// the high byte of ramp[15999] (0x3E7F) and the low byte of
		// ramp[16000] (0x3E80), 0x803E.
		{"3 s after an odd byte", []byte{0x00}, 48000, 100, 50, -0x7FC2},
	}
	for _, tt := range tests {
		d := NewDecoder(PipelineFormat)
		if _, err := d.Write(tt.prefix); err != nil {
			t.Fatalf("Decoder.Write(prefix) error: %v", err)
		}
		frames, err := d.Write(EncodePCM16(nil, ramp(tt.samples)))
		if err != nil {
			t.Fatalf("Decoder.Write(%s) error: %v", tt.name, err)
		}
		if len(frames) != tt.wantFrames || d.Dropped() != tt.wantDropped {
			t.Errorf("Decoder.Write(%s): %d frames, Dropped %d; want %d, %d", tt.name, len(frames), d.Dropped(), tt.wantFrames, tt.wantDropped)
			continue
		}
		if got := frames[0][0]; got != tt.wantFirst {
			t.Errorf("Decoder.Write(%s): first kept sample %d, want %d (the newest audio)", tt.name, got, tt.wantFirst)
		}
		if tt.prefix != nil {
			continue // samples straddle ramp values; the first one proves the alignment
		}
		last := frames[len(frames)-1]
		if got, want := last[len(last)-1], int16((int(tt.wantFirst)+tt.wantFrames*FrameSamples-1)%30000); got != want {
			t.Errorf("Decoder.Write(%s): last sample %d, want %d", tt.name, got, want)
		}
	}
}

func TestDecoderBoundMulaw(t *testing.T) {
	d := NewDecoder(Format{Mulaw, 8000})
	frames, err := d.Write(make([]byte, 8000*5)) // 5 s
	if err != nil || len(frames) < 99 || d.Dropped() != 150 {
		t.Errorf("Decoder(mulaw/8000).Write(5 s): %d frames, Dropped %d, err %v; want ≈100, 150, nil", len(frames), d.Dropped(), err)
	}
}

func TestDecoderInvalidFormat(t *testing.T) {
	for _, f := range []Format{{}, {PCM16, 44100}, {Mulaw, 16000}} {
		d := NewDecoder(f)
		frames, err := d.Write(make([]byte, 640))
		if !errors.Is(err, ErrInvalidFormat) || frames != nil {
			t.Errorf("NewDecoder(%v).Write = %d frames, %v; want none and ErrInvalidFormat", f, len(frames), err)
		}
	}
}

// TestDecoderFramesIndependent: frames returned by one write are not
// overwritten by the next, so they can be handed to other goroutines.
func TestDecoderFramesIndependent(t *testing.T) {
	d := NewDecoder(PipelineFormat)
	a, _ := d.Write(EncodePCM16(nil, sine(16000, 500, 1000, 640)))
	keep := slices.Clone(a[1])
	d.Write(EncodePCM16(nil, noise(1, 640)))
	if !slices.Equal(a[1], keep) {
		t.Errorf("Decoder.Write: a returned frame changed after the next Write")
	}
	if cap(a[0]) != FrameSamples {
		t.Errorf("Decoder.Write: frame cap %d, want %d (appending must not clobber the next frame)", cap(a[0]), FrameSamples)
	}
}
