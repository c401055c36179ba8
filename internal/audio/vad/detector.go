package vad

import (
	"errors"
	"fmt"
	"time"

	"switchboard/internal/audio"
)

// frameMs is the pipeline's frame duration (audio.FrameDuration) in ms.
const frameMs = int(audio.FrameDuration / time.Millisecond)

// ErrFrameSize is returned (wrapped) by detectors given a frame that is not
// audio.FrameSamples long: resampling and re-framing happen at the
// pipeline's edges (audio.Decoder), never here.
var ErrFrameSize = errors.New("vad: frame must be 320 samples (20 ms at 16 kHz)")

// Detector classifies one pipeline frame (audio.FrameSamples samples of
// 16 kHz PCM16) as speech or not. Implementations keep state between frames
// (noise models, hangover), so one Detector serves one audio stream, frame
// after frame, in order.
type Detector interface {
	IsSpeech(frame []int16) (bool, error)
}

func frameSizeError(n int) error {
	return fmt.Errorf("%w, got %d", ErrFrameSize, n)
}

// framesFor converts a duration to whole frames, rounding up, so a
// configured duration is a minimum ("at least 250 ms" is 13 frames).
func framesFor(ms int) int {
	return (ms + frameMs - 1) / frameMs
}
