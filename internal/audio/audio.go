// Package audio is the voice pipeline's one audio frame type and the
// conversions at its edges.
//
// Inside the pipeline every stage (VAD, speech-to-text, text-to-speech,
// recording) sees the same thing: mono PCM16 at PipelineRate, cut into
// FrameDuration frames of FrameSamples samples, held as []int16. Clients
// speak other formats (PCM16 at 8–48 kHz from browsers, G.711 μ-law at
// 8 kHz from phone networks), so conversion happens exactly twice: a Decoder
// turns client bytes into pipeline frames on the way in, and an Encoder turns
// pipeline audio into client frames on the way out. A Pacer then releases
// those frames in real time so that barge-in can still cancel audio the
// caller has not heard.
//
// Nothing here imports a transport (the Pacer's send function is its only
// I/O); every buffer is bounded and drops the oldest audio when full,
// counting each drop.
package audio

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// FrameDuration is the length of one frame everywhere in the pipeline and on
// the wire. 20 ms is the G.711/RTP and Twilio Media Streams packetization
// (50 frames/s), so one pipeline frame maps to exactly one network packet.
const FrameDuration = 20 * time.Millisecond

// PipelineRate is the sample rate (Hz) of all audio inside the pipeline.
// 16 kHz is what speech recognizers and VADs are trained on; it keeps speech
// up to 8 kHz at a third of the cost of 48 kHz.
const PipelineRate = 16000

// FrameSamples is the number of samples in one pipeline frame (320), so
// per-frame stages can size buffers without recomputing it.
const FrameSamples = PipelineRate * int(FrameDuration/time.Millisecond) / 1000

// Encoding names how samples are stored on the wire. The values match the
// "encoding" strings of the web-client protocol, so a client's choice converts
// with a plain Encoding(s).
type Encoding string

const (
	// PCM16 is signed 16-bit little-endian linear PCM, mono: lossless and
	// what browsers produce from the Web Audio API.
	PCM16 Encoding = "pcm16"
	// Mulaw is ITU-T G.711 μ-law, 8 bits per sample, mono, 8 kHz only: what
	// phone networks and Twilio Media Streams carry.
	Mulaw Encoding = "mulaw"
	// Alaw is ITU-T G.711 A-law, 8 bits per sample, mono, 8 kHz only: the
	// other law of phone networks (PCMA on SIP trunks outside North America).
	Alaw Encoding = "alaw"
)

// ErrInvalidFormat is wrapped by every error Format.Validate returns, so a
// caller can classify a bad client format with errors.Is.
var ErrInvalidFormat = errors.New("audio: invalid format")

// Format is a client's audio format: the only two things that vary between
// clients, since all audio here is mono.
type Format struct {
	Encoding   Encoding
	SampleRate int // Hz
}

// PipelineFormat is the format of pipeline frames; a client that speaks it
// needs no resampling.
var PipelineFormat = Format{Encoding: PCM16, SampleRate: PipelineRate}

// Validate reports whether the pipeline can convert f, naming the bad field
// and the allowed values, because f usually comes from a client and the error
// goes back to it. PCM16 allows 8000, 16000, 24000 and 48000 Hz; Mulaw and
// Alaw only 8000 Hz (G.711 is defined at 8 kHz).
func (f Format) Validate() error {
	switch f.Encoding {
	case PCM16:
		switch f.SampleRate {
		case 8000, 16000, 24000, 48000:
			return nil
		}
		return fmt.Errorf("%w: sampleRate must be one of 8000, 16000, 24000, 48000 for pcm16, got %d", ErrInvalidFormat, f.SampleRate)
	case Mulaw, Alaw:
		if f.SampleRate == 8000 {
			return nil
		}
		return fmt.Errorf("%w: sampleRate must be 8000 for %s, got %d", ErrInvalidFormat, f.Encoding, f.SampleRate)
	case "":
		return fmt.Errorf("%w: encoding is required (pcm16 or mulaw)", ErrInvalidFormat)
	default:
		return fmt.Errorf("%w: encoding must be pcm16 or mulaw, got %q", ErrInvalidFormat, string(f.Encoding))
	}
}

// SamplesPerFrame is the number of samples in one FrameDuration frame at f's
// rate (160 at 8 kHz, 960 at 48 kHz): the unit the Encoder emits.
func (f Format) SamplesPerFrame() int {
	return f.SampleRate * int(FrameDuration/time.Millisecond) / 1000
}

// BytesPerFrame is the wire size of one FrameDuration frame in f (160 for
// μ-law, 1920 for PCM16 at 48 kHz), for sizing buffers and checking frames.
func (f Format) BytesPerFrame() int {
	return f.SamplesPerFrame() * f.bytesPerSample()
}

func (f Format) bytesPerSample() int {
	if f.Encoding == Mulaw || f.Encoding == Alaw {
		return 1
	}
	return 2
}

// String renders f as "pcm16/16000" for logs and error messages.
func (f Format) String() string {
	return fmt.Sprintf("%s/%d", f.Encoding, f.SampleRate)
}

// Silence returns n zero samples: padding for partial frames and comfort
// audio, allocated fresh so the caller may own and modify it.
func Silence(n int) []int16 {
	return make([]int16, n)
}

// RMS is the root-mean-square level of pcm in sample units (0 to 32768), the
// usual measure of loudness for levels, VAD thresholds and tests. An empty
// slice has RMS 0.
func RMS(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		v := float64(s)
		sum += v * v
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// DBFS is the RMS level of pcm in decibels relative to full scale, where a
// full-scale square wave is 0 dBFS (a full-scale sine is about −3 dBFS).
// Decibels make thresholds readable ("speech above −45 dBFS"). Digital
// silence is −Inf, which compares below any threshold.
func DBFS(pcm []int16) float64 {
	return 20 * math.Log10(RMS(pcm)/32768)
}
