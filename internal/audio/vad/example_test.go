package vad_test

import (
	"fmt"
	"math"

	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
)

// The loop a call pipeline runs: every frame goes to the Endpointer; at
// SpeechStarted the pre-roll goes to STT, then each frame until
// SpeechStopped, when STT is told the utterance ended.
func ExampleEndpointer() {
	det, err := vad.NewWebRTC(2)
	if err != nil {
		panic(err)
	}
	ep, err := vad.NewEndpointer(det, vad.Config{})
	if err != nil {
		panic(err)
	}
	sent := 0
	for i, frame := range caller() {
		switch ev := ep.Process(frame); {
		case ev == vad.SpeechStarted:
			sent += len(ep.PreRoll()) // stt.Write each
			fmt.Printf("frame %d: %v, pre-roll %d frames\n", i, ev, sent)
		case ev == vad.SpeechStopped:
			sent++ // stt.Write(frame); stt.Finish()
			fmt.Printf("frame %d: %v, %d frames to STT\n", i, ev, sent)
		case ep.Speaking():
			sent++ // stt.Write(frame)
		}
	}
	// Output:
	// frame 30: speech.started, pre-roll 16 frames
	// frame 105: speech.stopped, 91 frames to STT
}

// caller is 0.5 s of quiet line (frames 0–24), 1 s of a buzzy 150 Hz
// voice-like sound (25–74), then 1 s of quiet. Speech starts after
// MinSpeechMs (6 frames) and stops 500 ms (25 frames) after the detector's
// own hangover (6 frames here) lets go.
func caller() [][]int16 {
	var frames [][]int16
	for i := range 125 {
		frame := make([]int16, audio.FrameSamples)
		for j := range frame {
			t := float64(i*audio.FrameSamples+j) / audio.PipelineRate
			v := 40 * math.Sin(2*math.Pi*3001*t) // faint line hiss
			if i >= 25 && i < 75 {
				for k := 1.0; k < 20; k++ {
					v += 4000 / k * math.Sin(2*math.Pi*150*k*t)
				}
			}
			frame[j] = int16(v)
		}
		frames = append(frames, frame)
	}
	return frames
}
