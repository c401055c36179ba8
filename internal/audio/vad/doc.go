// Package vad decides when the caller is speaking. It has three layers, each
// usable alone:
//
//   - a Detector says whether one frame holds speech: WebRTC's GMM detector
//     (NewWebRTC), or Energy, an adaptive-threshold detector that is the
//     fallback and the test oracle;
//   - an Endpointer turns per-frame decisions into utterance events
//     (SpeechStarted, SpeechStopped) with hysteresis, keeps the audio from
//     just before the start (PreRoll) so the first syllable reaches STT, and
//     ends turns sooner when the transcript already ends a sentence;
//   - a BargeIn decides when caller speech over the assistant is a real
//     interruption rather than a backchannel ("uh-huh", "okay").
//
// Everything works on the pipeline's one frame type (package audio): 16 kHz
// PCM16 mono in 20 ms frames of audio.FrameSamples samples. Every decision is
// counted in frames, so the same input always yields the same events at the
// same frame index.
// Nothing here starts a goroutine or grows without bound. Values are not safe
// for concurrent use: each call owns its own.
package vad
