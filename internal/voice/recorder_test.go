package voice

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/voice/voicetest"
)

// tapRecorder counts the frames a Recorder hears.
type tapRecorder struct {
	mu                 sync.Mutex
	caller, assistant  int
	loudAssistant, bad int
}

func (r *tapRecorder) Caller(pcm []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caller++
	if len(pcm) != audio.FrameSamples {
		r.bad++
	}
}

func (r *tapRecorder) Assistant(pcm []int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assistant++
	if len(pcm) != audio.FrameSamples {
		r.bad++
	}
	for _, v := range pcm {
		if v > 1000 || v < -1000 {
			r.loudAssistant++
			break
		}
	}
}

// TestRecorderTap: on a μ-law phone line the Recorder hears every caller
// frame written and every assistant frame the pacer sent, as 20 ms pipeline
// frames (decoded back to PCM16 at 16 kHz). The assistant's audio decoded
// for the recording is what the caller heard.
func TestRecorderTap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "hello"})
		phone := audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}
		brain := &voicetest.Brain{Replies: map[string]string{"hello": "Hi there."}}
		rec := &tapRecorder{}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts, In: phone, Out: phone, Recorder: rec}, brain: brain})
		defer c.close()
		c.speak(500 * time.Millisecond)
		c.silenceUntil("assistant.audio.done", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)
		written := c.out.TurnAudio("turn_2").Frames
		rec.mu.Lock()
		defer rec.mu.Unlock()
		if rec.bad != 0 {
			t.Errorf("%d recorded frames were not %d samples", rec.bad, audio.FrameSamples)
		}
		// The 8 → 16 kHz resampler holds back a few samples: the last
		// frame of a turn comes out with the next one.
		if rec.assistant < written-1 || rec.assistant > written || rec.loudAssistant != rec.assistant {
			t.Errorf("Recorder heard %d assistant frames (%d loud), want the %d loud frames sent (less one held by the resampler)", rec.assistant, rec.loudAssistant, written)
		}
		if rec.caller < 25 {
			t.Errorf("Recorder heard %d caller frames, want at least the 25 of the utterance", rec.caller)
		}
	})
}
