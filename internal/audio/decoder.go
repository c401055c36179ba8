package audio

import "time"

// MaxWriteDuration bounds how much audio one Decoder.Write keeps. A real-time
// client sends 20–100 ms at a time; anything beyond 2 s in one message is a
// backlog that would only delay the conversation (or a client trying to make
// the server buffer), so the oldest part is dropped and counted.
const MaxWriteDuration = 2 * time.Second

// Decoder turns a client's audio stream into pipeline frames: FrameSamples
// samples of PCM16 at PipelineRate. Clients may cut their stream anywhere
// (websocket messages of any byte length, even splitting a PCM16 sample), so
// the Decoder carries partial samples and partial frames across writes; the
// frames it produces do not depend on how the stream was split, as long as
// no single write exceeds MaxWriteDuration.
//
// A Decoder is not safe for concurrent use; each inbound stream owns one.
type Decoder struct {
	f       Format
	err     error      // f.Validate(), returned by every Write
	rs      *Resampler // client rate → PipelineRate
	odd     byte       // first byte of a PCM16 sample split across writes
	hasOdd  bool
	in      []int16 // scratch: this write's samples at the client rate
	acc     []int16 // pipeline-rate samples not yet a whole frame
	dropped uint64
}

// NewDecoder returns a Decoder for client format f. An invalid f (it usually
// comes from the client) does not panic: every Write then returns the
// Validate error, which names the bad field.
func NewDecoder(f Format) *Decoder {
	d := &Decoder{f: f, err: f.Validate()}
	if d.err == nil {
		d.rs = NewResampler(f.SampleRate, PipelineRate)
	}
	return d
}

// Format is the client format the Decoder was made for.
func (d *Decoder) Format() Format { return d.f }

// Write decodes b, any number of bytes of the client stream, and returns the
// pipeline frames completed so far (often none, for small writes). Each frame
// has FrameSamples samples and is freshly allocated, so it may be handed to
// another goroutine. If b holds more than MaxWriteDuration of audio, its
// oldest whole client frames are dropped until at most MaxWriteDuration
// remains; see Dropped. The error is non-nil only when the Decoder's format is invalid.
func (d *Decoder) Write(b []byte) (frames [][]int16, err error) {
	if d.err != nil {
		return nil, d.err
	}
	b = d.bound(b)
	in := d.in[:0]
	switch d.f.Encoding {
	case Mulaw:
		in = MulawDecode(in, b)
	case Alaw:
		in = AlawDecode(in, b)
	default: // PCM16
		if d.hasOdd && len(b) > 0 {
			in = append(in, int16(uint16(d.odd)|uint16(b[0])<<8))
			b = b[1:]
			d.hasOdd = false
		}
		even := len(b) &^ 1
		in, _ = DecodePCM16(in, b[:even]) // even length: cannot fail
		if even < len(b) {
			d.odd, d.hasOdd = b[even], true
		}
	}
	d.in = in
	d.acc = d.rs.Process(d.acc, in)
	return d.cut(), nil
}

// bound drops the oldest whole client frames of b (counting the pending odd
// byte as its start) so that at most MaxWriteDuration remains. It works on
// bytes, before decoding, so a huge write costs no memory.
func (d *Decoder) bound(b []byte) []byte {
	bps := d.f.bytesPerSample()
	pending := 0
	if d.hasOdd {
		pending = 1
	}
	samples := (pending + len(b)) / bps
	spf := d.f.SamplesPerFrame()
	limit := int(MaxWriteDuration/FrameDuration) * spf
	if samples <= limit {
		return b
	}
	frames := (samples - limit + spf - 1) / spf
	d.dropped += uint64(frames)
	skip := frames * spf * bps
	if d.hasOdd {
		d.hasOdd = false
		skip--
	}
	return b[skip:]
}

// cut moves every whole frame out of acc into one fresh allocation.
func (d *Decoder) cut() [][]int16 {
	n := len(d.acc) / FrameSamples
	if n == 0 {
		return nil
	}
	backing := make([]int16, n*FrameSamples)
	copy(backing, d.acc)
	frames := make([][]int16, n)
	for i := range frames {
		frames[i] = backing[i*FrameSamples : (i+1)*FrameSamples : (i+1)*FrameSamples]
	}
	rest := copy(d.acc, d.acc[n*FrameSamples:])
	d.acc = d.acc[:rest]
	return frames
}

// Dropped is the number of client frames (FrameDuration each) discarded
// because a single write held more than MaxWriteDuration: a sign of a client
// that buffers instead of streaming, worth exporting per call.
func (d *Decoder) Dropped() uint64 { return d.dropped }
