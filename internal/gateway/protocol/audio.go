package protocol

import (
	"fmt"
	"time"

	"switchboard/internal/audio"
)

// Audio sessions. A session that sent session.update {"textOnly": false}
// carries raw audio in binary websocket frames, both ways, in the session's
// Audio format; the caller's voice activity, partial transcripts and the
// assistant's audio are framed by the events below. See "Audio" in
// docs/gateway-protocol.md for the rules the gateway follows.

// Encoding names an audio sample encoding. The values are those of
// internal/audio's Encoding, so Audio.Format converts without a table.
type Encoding string

// Audio encodings.
const (
	// PCM16 is signed 16-bit little-endian linear PCM, mono.
	PCM16 Encoding = "pcm16"
	// Mulaw is G.711 μ-law, mono, at 8 kHz: what phone networks carry.
	Mulaw Encoding = "mulaw"
)

// sampleRates lists the sample rates (Hz) each encoding allows, and
// defaultRate the one used when session.update's audio gives none.
var (
	sampleRates = map[Encoding][]int{PCM16: {8000, 16000, 24000, 48000}, Mulaw: {8000}}
	defaultRate = map[Encoding]int{PCM16: 16000, Mulaw: 8000}
)

// DefaultAudio is the audio format of a session that never chose one: what
// a browser's Web Audio API produces after resampling, and the pipeline's own
// format, so it costs no conversion.
var DefaultAudio = Audio{Encoding: PCM16, SampleRate: 16000}

// Audio is the format of binary audio frames, in both directions. Decode
// only returns valid ones.
type Audio struct {
	Encoding   Encoding `json:"encoding"`
	SampleRate int      `json:"sampleRate"`
}

// Format converts a to the audio pipeline's format type, for building the
// session's audio.Decoder and audio.Encoder. Every Audio that Decode returns
// passes audio.Format.Validate.
func (a Audio) Format() audio.Format {
	return audio.Format{Encoding: audio.Encoding(a.Encoding), SampleRate: a.SampleRate}
}

// CheckBinary applies the protocol's rules to a binary frame of size bytes
// from the client, before the gateway decodes it as audio. audioOn is whether
// the session has turned audio on (session.update textOnly false, accepted).
// It returns nil, or a fatal *Error for which the gateway closes with
// CloseProtocolAbuse: CodeUnexpectedBinary in a text-only session (whatever
// the size), CodeFrameTooLarge for a frame over MaxFrame. Any other length is
// fine, including an odd number of PCM16 bytes: audio is a byte stream, and a
// sample split across frames is completed by the next one.
func CheckBinary(size int, audioOn bool) error {
	switch {
	case !audioOn:
		return frameError(CodeUnexpectedBinary,
			"binary frame in a text-only session: send session.update with \"textOnly\": false before sending audio")
	case size > MaxFrame:
		return frameError(CodeFrameTooLarge, "binary frame is %d bytes; the limit is %d", size, MaxFrame)
	}
	return nil
}

// The session.update refusals of audio sessions: each is a non-fatal
// CodeUnsupported error whose message names the field, and the gateway
// answers with it and changes nothing of that session.update.

// AudioUnavailable refuses textOnly false on a server (or for an assistant)
// without speech engines: the session stays text-only, and the client can go
// on typing.
func AudioUnavailable() *Error {
	return unsupported("textOnly", "cannot be false: this server has no speech engines for this assistant; the session stays text-only")
}

// AudioStaysOn refuses textOnly true once audio is on: turning it off would
// leave the caller's audio in flight to be judged abuse, so it stays on for
// the rest of the call.
func AudioStaysOn() *Error {
	return unsupported("textOnly", "cannot be true once audio is on: audio stays on for the rest of the call")
}

// AudioLocked refuses a new audio format after the session's first binary
// frame (in either direction): the decoder, the encoder and the client's
// buffers already hold audio in the current one. The same format again is
// not an error; the gateway accepts it as no change.
func AudioLocked(current Audio) *Error {
	return unsupported("audio", "cannot change once audio has flowed: the session keeps %s", current.Format())
}

func unsupported(field, format string, args ...any) *Error {
	return &Error{
		Code:    CodeUnsupported,
		Message: fmt.Sprintf("%s: field %q ", TypeSessionUpdate, field) + fmt.Sprintf(format, args...),
		Field:   field,
	}
}

// SpeechStarted says the caller started speaking (voice activity detected;
// the first syllables are already in the audio the server keeps). It is not
// by itself an interruption: speech over the assistant pauses it
// (AudioPause), and the words decide whether they cut it off (AudioClear)
// or were a backchannel or noise (AudioResume).
type SpeechStarted struct {
	Seq int64
	At  time.Time
}

// Type returns "speech.started".
func (SpeechStarted) Type() string { return TypeSpeechStarted }

// SpeechStopped says the caller stopped speaking: the end of the utterance
// that SpeechStarted began. Its final transcript, if the speech was words,
// follows.
type SpeechStopped struct {
	Seq int64
	At  time.Time
}

// Type returns "speech.stopped".
func (SpeechStopped) Type() string { return TypeSpeechStopped }

// AudioStart precedes the first binary frame of assistant turn TurnID: the
// binary frames from here to the turn's AudioDone or AudioClear are that
// turn's speech, which is how a client attributes frames that carry no
// header.
type AudioStart struct {
	Seq    int64
	At     time.Time
	TurnID string
}

// Type returns "assistant.audio.start".
func (AudioStart) Type() string { return TypeAudioStart }

// AudioDone follows the last binary frame of turn TurnID: all of its audio
// has been sent (in real time, so the client has at most its own buffer left
// to play).
type AudioDone struct {
	Seq    int64
	At     time.Time
	TurnID string
}

// Type returns "assistant.audio.done".
func (AudioDone) Type() string { return TypeAudioDone }

// AudioClear cuts turn TurnID's audio short, usually because the caller
// barged in: the client drops whatever it has buffered of that turn at once.
// PlayedMs is how much of the turn's audio the server had sent when it
// cleared (whole 20 ms frames), so a client that buffers less than that knows
// where the turn stopped. It replaces AudioDone for that turn.
type AudioClear struct {
	Seq      int64
	At       time.Time
	TurnID   string
	PlayedMs int64
}

// Type returns "assistant.audio.clear".
func (AudioClear) Type() string { return TypeAudioClear }

// AudioPause says turn TurnID's audio stopped because the caller is
// speaking over it: the client stops playing at once but keeps what it has
// buffered of the turn, and buffers what still arrives (at most the one
// frame that was on its way), because the server may resume it. PlayedMs is
// how much of the turn's audio the server had sent. AudioResume or
// AudioClear ends the pause. Clients that ignore it (v1 clients written
// before it) play out their buffer and then get no frames until the resume
// or the clear.
type AudioPause struct {
	Seq      int64
	At       time.Time
	TurnID   string
	PlayedMs int64
}

// Type returns "assistant.audio.pause".
func (AudioPause) Type() string { return TypeAudioPause }

// AudioResume ends an AudioPause of turn TurnID: the caller's speech was a
// backchannel ("uh-huh") or no words, and the turn carries on where it
// paused. The client plays on from where it stopped, its buffer first;
// frames follow in real time. PlayedMs is what the server had sent of the
// turn, as at the pause.
type AudioResume struct {
	Seq      int64
	At       time.Time
	TurnID   string
	PlayedMs int64
}

// Type returns "assistant.audio.resume".
func (AudioResume) Type() string { return TypeAudioResume }
