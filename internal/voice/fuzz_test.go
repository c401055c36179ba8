package voice

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/conversation"
	"switchboard/internal/voice/voicetest"
)

// sizeCheck is a detector that records frames of the wrong size.
type sizeCheck struct {
	voicetest.Detector
	bad *atomic.Int64
}

func (d sizeCheck) IsSpeech(f []int16) (bool, error) {
	if len(f) != audio.FrameSamples {
		d.bad.Add(1)
	}
	return d.Detector.IsSpeech(f)
}

var fuzzFormats = []audio.Format{
	{Encoding: audio.PCM16, SampleRate: 8000}, {Encoding: audio.PCM16, SampleRate: 16000},
	{Encoding: audio.PCM16, SampleRate: 24000}, {Encoding: audio.PCM16, SampleRate: 48000},
	{Encoding: audio.Mulaw, SampleRate: 8000},
}

// FuzzPipelineWrite feeds arbitrary bytes, in arbitrary pieces, through a
// running pipeline's Write in every client format: it must never panic,
// every frame must reach voice activity detection whole, and the queue
// toward listen stays bounded.
func FuzzPipelineWrite(f *testing.F) {
	tone := voicetest.NewFrames(audio.PipelineFormat).Speech
	var speech []byte
	for range 30 {
		speech = append(speech, tone...)
	}
	f.Add(byte(1), byte(0), speech)
	f.Add(byte(4), byte(7), []byte{0xff, 0x7f, 0x00, 0x80})
	f.Add(byte(3), byte(255), make([]byte, 7000))
	f.Add(byte(0), byte(1), []byte{1})
	f.Fuzz(func(t *testing.T, format, piece byte, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		var bad atomic.Int64
		p, err := New(Config{
			In: fuzzFormats[int(format)%len(fuzzFormats)], Out: audio.PipelineFormat,
			Transcriber: &voicetest.Transcriber{Utterances: []voicetest.Utterance{{Final: "hello"}}},
			Synthesizer: &voicetest.Synthesizer{},
			Detector:    sizeCheck{bad: &bad},
			Input:       func(conversation.Input) bool { return true },
		}, voicetest.NewOutput(audio.PipelineFormat))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		n := int(piece) + 1
		for i := 0; i < len(data); i += n {
			if err := p.Write(data[i:min(i+n, len(data))]); err != nil {
				t.Fatalf("Write: %v", err)
			}
			if q := len(p.frames); q > framesBuffer {
				t.Fatalf("%d frames queued for listen, bound %d", q, framesBuffer)
			}
		}
		// Let listen drain what is queued (bounded), then stop.
		for deadline := time.Now().Add(2 * time.Second); len(p.frames) > 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if b := bad.Load(); b > 0 {
			t.Fatalf("%d frames of the wrong size reached the detector", b)
		}
	})
}
