package audio

import "fmt"

// Encoder turns pipeline audio (PCM16 at PipelineRate, in pieces of any
// length, as text-to-speech produces it) into client frames of exactly
// FrameDuration each, ready for a Pacer: the client's jitter buffer and
// Twilio both expect one fixed-size frame every 20 ms, and barge-in can only
// cancel audio at frame granularity.
//
// An Encoder is not safe for concurrent use; each outbound stream owns one.
type Encoder struct {
	// Headroom is how many free bytes precede each frame: a frame Encode
	// or Flush returns is then Headroom+BytesPerFrame bytes, the audio at
	// frame[Headroom:], and the caller may write its own header in front
	// without copying the frame (the voice pipeline tags frames so).
	Headroom int

	f   Format
	rs  *Resampler // PipelineRate → client rate
	acc []int16    // client-rate samples not yet a whole frame
}

// NewEncoder returns an Encoder to client format f. f must be valid (run
// Validate on anything a client chose, as the Decoder for the same stream
// does); an invalid format is a programming error and panics, because Encode
// has no error to return.
func NewEncoder(f Format) *Encoder {
	if err := f.Validate(); err != nil {
		panic(fmt.Sprintf("audio: NewEncoder(%v): %v", f, err))
	}
	return &Encoder{f: f, rs: NewResampler(PipelineRate, f.SampleRate)}
}

// Format is the client format the Encoder produces.
func (e *Encoder) Format() Format { return e.f }

// Encode converts pcm and returns the client frames completed so far, each
// exactly f.BytesPerFrame() bytes and safe to retain (a Pacer takes
// ownership). A partial frame, and a few milliseconds of resampler
// look-ahead, wait for the next Encode or Flush.
func (e *Encoder) Encode(pcm []int16) [][]byte {
	e.acc = e.rs.Process(e.acc, pcm)
	return e.cut()
}

// Flush ends the utterance: it emits everything still held, padding the last
// frame with silence so the client still gets whole frames, and readies the
// Encoder for the next utterance. The utterance's frames then cover exactly
// its duration rounded up to FrameDuration.
func (e *Encoder) Flush() [][]byte {
	e.acc = e.rs.Flush(e.acc)
	if r := len(e.acc) % e.f.SamplesPerFrame(); r != 0 {
		n := len(e.acc)
		e.acc = grow(e.acc, e.f.SamplesPerFrame()-r)
		clear(e.acc[n:])
	}
	return e.cut()
}

// Reset discards held audio without emitting it: on barge-in, together with
// Pacer.Clear, so that the next utterance does not start with the remains of
// the interrupted one.
func (e *Encoder) Reset() {
	e.acc = e.acc[:0]
	e.rs.Reset()
}

// cut encodes every whole frame of acc into one fresh allocation.
func (e *Encoder) cut() [][]byte {
	spf := e.f.SamplesPerFrame()
	n := len(e.acc) / spf
	if n == 0 {
		return nil
	}
	bpf := e.f.BytesPerFrame() + e.Headroom
	backing := make([]byte, 0, n*bpf)
	frames := make([][]byte, n)
	for i := range frames {
		pcm := e.acc[i*spf : (i+1)*spf]
		backing = backing[:len(backing)+e.Headroom]
		switch e.f.Encoding {
		case Mulaw:
			backing = MulawEncode(backing, pcm)
		case Alaw:
			backing = AlawEncode(backing, pcm)
		default:
			backing = EncodePCM16(backing, pcm)
		}
		frames[i] = backing[i*bpf : (i+1)*bpf : (i+1)*bpf]
	}
	rest := copy(e.acc, e.acc[n*spf:])
	e.acc = e.acc[:rest]
	return frames
}
