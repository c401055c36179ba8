package audio

import (
	"context"
	"time"
)

// RealTime is a microphone: it sends one frame (len(silence) bytes) every
// FrameDuration, in real time, until ctx is done or write fails: the next
// utterance from speech when there is one, else silence (a listener's
// endpointing needs the silence to hear the end of a turn). idle, if set,
// is told how many frames of silence have followed the last utterance.
// The sandbox persona speaks through it, and tests' callers do.
func RealTime(ctx context.Context, speech <-chan []byte, silence []byte, write func([]byte) error, idle func(frames int)) {
	tick := time.NewTicker(FrameDuration)
	defer tick.Stop()
	var cur []byte
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if len(cur) == 0 {
			select {
			case cur = <-speech:
				quiet = 0
			default:
			}
		}
		frame := silence
		if len(cur) > 0 {
			n := min(len(cur), len(silence))
			frame = append(cur[:n:n], silence[n:]...)
			cur = cur[n:]
		} else if quiet++; idle != nil {
			idle(quiet)
		}
		if err := write(frame); err != nil {
			return
		}
	}
}
