package voice

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/speech"
	"switchboard/internal/voice/voicetest"
)

// Latencies of the fake providers in these tests.
const (
	sttDelay   = 100 * time.Millisecond
	modelDelay = 150 * time.Millisecond
	ttsDelay   = 80 * time.Millisecond
	wordAudio  = 100 * time.Millisecond // 5 frames a word
)

// story is a reply of six four-word sentences: 2.4 s of audio, each
// sentence 400 ms (20 frames), so a barge-in lands in a known place.
const story = "One two three four. Five six seven eight. Nine ten eleven twelve. " +
	"Thirteen fourteen fifteen sixteen. Seventeen eighteen nineteen twenty. Twenty-one twenty-two twenty-three twenty-four."

func fakes(utts ...voicetest.Utterance) (*voicetest.Transcriber, *voicetest.Synthesizer) {
	return &voicetest.Transcriber{Utterances: utts, FinalDelay: sttDelay},
		&voicetest.Synthesizer{FirstAudio: ttsDelay, WordDuration: wordAudio}
}

// TestTurn: caller speech → speech.started/stopped → final transcript →
// the engine's reply → assistant.audio.start, frames, assistant.audio.done
// → turn.done; the stored turn carries the latency breakdown.
func TestTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Partial: "what time", Final: "what time is it"})
		brain := &voicetest.Brain{FirstToken: modelDelay, Replies: map[string]string{"what time is it": "It is noon. Goodbye for now."}}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts}, brain: brain})
		defer c.close()

		c.silence(200 * time.Millisecond)
		c.speak(600 * time.Millisecond)
		c.silenceUntil("assistant.audio.done", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
		c.hangup()
		if reason := c.end(10 * time.Second); reason != call.ReasonCustomerEnded {
			t.Errorf("ended %q, want %s", reason, call.ReasonCustomerEnded)
		}

		got := kinds(c.out.Events())
		want := []string{"speech.started", "speech.stopped", "transcript user", "audio.start turn_2", "audio.done turn_2", "turn.done turn_2", "transcript assistant", "ended"}
		if !slices.Equal(got, want) {
			t.Errorf("events:\n got %q\nwant %q\n%s", got, want, c.dump())
		}
		if e, ok := c.out.Find(func(e voicetest.Event) bool { return e.Kind == "transcript" && !e.Flag }); !ok || e.Text != "what time" {
			t.Errorf("partial transcript = %+v (found %v), want %q", e, ok, "what time")
		}
		// Six words of 100 ms: 30 frames, all of them tone, all whole frames.
		if a := c.out.TurnAudio("turn_2"); a.Frames != 30 || a.Loud != 30 || a.Cleared {
			t.Errorf("turn_2 audio = %+v, want 30 loud frames, not cleared", a)
		}
		if n := c.out.BadFrames(); n != 0 {
			t.Errorf("%d frames were not 20 ms of pcm16/16000", n)
		}

		user, reply := c.turn(1), c.turn(2)
		if user.Role != call.RoleUser || user.Text != "what time is it" {
			t.Errorf("turn 1 = %s %q, want the caller's final", user.Role, user.Text)
		}
		if reply.Role != call.RoleAssistant || reply.Text != "It is noon. Goodbye for now." || reply.Interrupted {
			t.Errorf("turn 2 = %s %q interrupted=%v, want the whole reply", reply.Role, reply.Text, reply.Interrupted)
		}
		bd := reply.Breakdown
		if bd == nil {
			t.Fatalf("turn 2 has no Breakdown")
		}
		// The bubble's clock makes every stage exact: silence to the endpoint
		// (SilenceMs), then each fake's latency; nothing is left for the
		// platform because computation takes no fake time.
		silence := time.Duration(vad.DefaultSilenceMs) * time.Millisecond
		if bd.Endpointing < silence || bd.Endpointing > silence+2*audio.FrameDuration ||
			bd.Transcriber != sttDelay || bd.Model != modelDelay || bd.Voice != ttsDelay || bd.Platform < 0 {
			t.Errorf("Breakdown = %+v, want endpointing ≈ %s, transcriber %s, model %s, voice %s, platform ≥ 0", *bd, silence, sttDelay, modelDelay, ttsDelay)
		}
		if sum := bd.Endpointing + bd.Transcriber + bd.Model + bd.Voice + bd.Platform; bd.Total != sum {
			t.Errorf("Breakdown.Total = %s, want the sum of the stages %s", bd.Total, sum)
		}
		if reply.Latency != bd.Total {
			t.Errorf("turn 2 Latency = %s, want Breakdown.Total %s", reply.Latency, bd.Total)
		}
		if got := stt.Started(); len(got) != 1 || got[0].SampleRate != 16000 {
			t.Errorf("STT streams = %+v, want one at 16000 Hz", got)
		}
		if got := tts.Texts(); !slices.Equal(got, []string{"It is noon.", "Goodbye for now."}) {
			t.Errorf("synthesized %q, want the reply sentence by sentence", got)
		}
	})
}

// TestPhoneLine: μ-law 8 kHz both ways (a phone line) is recognized at
// 8 kHz and spoken in 160-byte frames.
func TestPhoneLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "hello"})
		phone := audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}
		brain := &voicetest.Brain{Replies: map[string]string{"hello": "Hi there."}, Expect: []string{"yes", "no"}}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts, In: phone, Out: phone}, brain: brain})
		defer c.close()
		c.speak(500 * time.Millisecond)
		c.silenceUntil("assistant.audio.done", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
		c.speak(300 * time.Millisecond) // the next utterance takes the flow's hints
		c.silence(100 * time.Millisecond)
		c.hangup()
		c.end(10 * time.Second)
		if got := stt.Started(); len(got) != 1 || got[0].SampleRate != 8000 {
			t.Errorf("STT streams = %+v, want one at 8000 Hz", got)
		}
		if a := c.out.TurnAudio("turn_2"); a.Frames != 10 || a.Loud != 10 || a.Bytes != 10*160 {
			t.Errorf("turn_2 audio = %+v, want 10 loud μ-law frames of 160 bytes", a)
		}
		if n := c.out.BadFrames(); n != 0 {
			t.Errorf("%d frames were not 20 ms of μ-law", n)
		}
		// Each utterance with its 200 ms pre-roll and the silence up to its
		// endpoint or the hang-up: 0.5+0.2+0.5 s and 0.3+0.2+0.1 s, less
		// the frames before the onset decision, at 8 kHz.
		if n := stt.Samples(); n < 8000*14/10 || n > 8000*18/10 {
			t.Errorf("STT got %d samples, want about 1.6 s at 8 kHz", n)
		}
		if h := stt.Hints(); len(h) == 0 || !slices.Equal(h[len(h)-1], []string{"yes", "no"}) {
			t.Errorf("STT hints = %q, want the brain's expected answers before the next utterance", h)
		}
	})
}

// bargeInSetup is a call that tells a story (turn_2) when asked, and says
// "Sure." to anything else; then is the caller's second utterance.
func bargeInSetup(then voicetest.Utterance, bargeInDisabled bool) callSetup {
	stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"}, then)
	brain := &voicetest.Brain{FirstToken: modelDelay, Replies: map[string]string{"tell me a story": story}, Default: "Sure."}
	return callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts, BargeIn: vad.BargeIn{MinSpeechMs: 200}, BargeInDisabled: bargeInDisabled}, brain: brain}
}

// askStory asks for the story and talks over it for talk, from 300 ms into
// its audio.
func askStory(c *testCall, talk time.Duration) {
	c.speak(600 * time.Millisecond)
	c.silenceUntil("the story's audio", voicetest.Is("audio.start", "turn_2"), 10*time.Second)
	c.silence(300 * time.Millisecond)
	c.speak(talk)
}

// TestBargeIn: the caller talks over the assistant for longer than
// BargeIn.MinSpeechMs with real words: the audio pauses at once and is
// cleared when the words come (bargein_test.go times each step), at most
// one frame in flight follows the clear, the turn is stored interrupted
// with the words the caller heard, the brain's history is truncated to
// them, and the caller's words are answered.
func TestBargeIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Partial: "wait", Final: "wait stop please"}, false))
		defer c.close()
		askStory(c, 500*time.Millisecond)
		clr := c.silenceUntil("assistant.audio.clear", voicetest.Is("audio.clear", "turn_2"), 5*time.Second)
		c.silenceUntil("the answer to the interruption", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		// MinSpeechMs is 10 frames: the audio stops within them of the
		// caller's first voiced frame, 300 ms into the story (+ up to a frame
		// each way), and the clear says so.
		if clr.PlayedMs < 300 || clr.PlayedMs > 300+200+40 {
			t.Errorf("audio.clear after %d ms of the story, want 300–540", clr.PlayedMs)
		}
		a := c.out.TurnAudio("turn_2")
		if !a.Cleared || a.AfterClear > 1 {
			t.Errorf("turn_2 audio = %+v, want cleared with at most one frame after the clear", a)
		}
		if a.Frames > int(clr.PlayedMs/20)+1 {
			t.Errorf("turn_2 sent %d frames, but the clear said %d ms were played", a.Frames, clr.PlayedMs)
		}
		if _, ok := c.out.Find(voicetest.Is("audio.done", "turn_2")); ok {
			t.Errorf("the cut turn also got assistant.audio.done")
		}
		t.Logf("cut after %d ms: %s", clr.PlayedMs, c.turn(2).Text)
		// 5 frames a word, 20 a sentence: the words whose audio went out.
		frames := int(clr.PlayedMs / 20)
		wantHeard := words(story, frames/20*4+4*(frames%20)/20)
		stored := c.turn(2)
		if !stored.Interrupted || stored.Text != wantHeard {
			t.Errorf("turn 2 stored %q interrupted=%v, want %q interrupted (played %d ms)", stored.Text, stored.Interrupted, wantHeard, clr.PlayedMs)
		}
		if done, _ := c.out.Find(voicetest.Is("turn.done", "turn_2")); done.Text != wantHeard || !done.Flag {
			t.Errorf("turn.done turn_2 = %s, want %q interrupted", done, wantHeard)
		}
		if h := c.brain.HeardTexts(); !slices.Equal(h, []string{wantHeard}) {
			t.Errorf("brain.Heard got %q, want [%q]", h, wantHeard)
		}
		if stored.Breakdown == nil || stored.Breakdown.Total <= 0 {
			t.Errorf("turn 2 Breakdown = %+v, want the cut turn's latencies", stored.Breakdown)
		}
		if u := c.turn(3); u.Role != call.RoleUser || u.Text != "wait stop please" {
			t.Errorf("turn 3 = %s %q, want the caller's interruption", u.Role, u.Text)
		}
		if r := c.turn(4); r.Text != "Sure." || r.Interrupted {
			t.Errorf("turn 4 = %q interrupted=%v, want the answer, whole", r.Text, r.Interrupted)
		}
	})
}

// TestBackchannel: "okay" over the assistant's audio neither interrupts it
// nor becomes a caller turn.
func TestBackchannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Final: "okay"}, false))
		defer c.close()
		askStory(c, 400*time.Millisecond)
		c.silenceUntil("the story's end", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
		c.silence(500 * time.Millisecond)
		c.hangup()
		c.end(10 * time.Second)

		if e, ok := c.out.Find(voicetest.Is("audio.clear", "")); ok {
			t.Errorf("a backchannel cleared the audio: %s", e)
		}
		if a := c.out.TurnAudio("turn_2"); a.Frames != 24*5 {
			t.Errorf("turn_2 sent %d frames, want all %d", a.Frames, 24*5)
		}
		if r := c.turn(2); r.Text != story || r.Interrupted {
			t.Errorf("turn 2 = %q interrupted=%v, want the whole story", r.Text, r.Interrupted)
		}
		if n := len(c.store.Turns()); n != 2 {
			t.Errorf("%d turns stored, want 2 (the backchannel is no turn): %+v", n, c.store.Turns())
		}
		if asked := c.brain.Asked(); !slices.Equal(asked, []string{"tell me a story"}) {
			t.Errorf("the brain was asked %q, want only the story", asked)
		}
		// The backchannel was heard: the endpointer saw it.
		if n := strings.Count(strings.Join(kinds(c.out.Events()), "|"), "speech.stopped"); n != 2 {
			t.Errorf("events %q, want two utterances endpointed", kinds(c.out.Events()))
		}
	})
}

// TestBargeInDisabled: with barge-in off, what the caller says over the
// assistant is held until the turn has played, then answered.
func TestBargeInDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Final: "hold on"}, true))
		defer c.close()
		askStory(c, 500*time.Millisecond)
		c.silenceUntil("the answer to the held words", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		if e, ok := c.out.Find(voicetest.Is("audio.clear", "")); ok {
			t.Errorf("barge-in is disabled, yet: %s", e)
		}
		story2, held, answer := c.turn(2), c.turn(3), c.turn(4)
		if story2.Text != story || story2.Interrupted {
			t.Errorf("turn 2 = %q interrupted=%v, want the whole story", story2.Text, story2.Interrupted)
		}
		if held.Role != call.RoleUser || held.Text != "hold on" || held.StartedAt.Before(story2.EndedAt) {
			t.Errorf("turn 3 = %s %q at %s (story ended %s), want the held words after the story", held.Role, held.Text, held.StartedAt, story2.EndedAt)
		}
		if answer.Text != "Sure." {
			t.Errorf("turn 4 = %q, want the answer to the held words", answer.Text)
		}
		// The final came while the story played (it was held, not late).
		final, _ := c.out.Find(func(e voicetest.Event) bool { return e.Kind == "speech.stopped" && e.At.After(story2.StartedAt) })
		if done, _ := c.out.Find(voicetest.Is("audio.done", "turn_2")); !final.At.Before(done.At) {
			t.Errorf("the caller's utterance ended at %s, after the story (%s): nothing was held", final.At, done.At)
		}
	})
}

// TestProviderFailures: a failing synthesizer or recognizer ends the call
// failed with its reason, in bounded time.
func TestProviderFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stt    *voicetest.Transcriber
		tts    *voicetest.Synthesizer
		reason string
	}{
		{"synthesizer fails at once", &voicetest.Transcriber{}, &voicetest.Synthesizer{Err: errors.New("tts down")}, call.ReasonVoiceFailed},
		{"synthesizer fails mid-turn", &voicetest.Transcriber{}, &voicetest.Synthesizer{Err: errors.New("tts down"), FailAfter: 1, FirstAudio: ttsDelay}, call.ReasonVoiceFailed},
		{"recognizer's stream fails", &voicetest.Transcriber{FailAfter: 300 * time.Millisecond}, &voicetest.Synthesizer{}, call.ReasonTranscriberFailed},
		{"recognizer does not start", &voicetest.Transcriber{StartErr: errors.New("stt down")}, &voicetest.Synthesizer{}, call.ReasonTranscriberFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startCall(t, callSetup{cfg: Config{Transcriber: tt.stt, Synthesizer: tt.tts}, firstMessage: "Hello there. How can I help you today?"})
				defer c.close()
				c.silenceUntilEnd(5 * time.Second)
				if reason := c.end(time.Second); reason != tt.reason {
					t.Errorf("ended %q, want %s", reason, tt.reason)
				}
				if outcome, reason := c.store.Ended(); outcome != call.Failed || reason != tt.reason {
					t.Errorf("call record ended %s %q, want failed %s", outcome, reason, tt.reason)
				}
				if tt.stt.StartErr != nil && c.runErr == nil {
					t.Errorf("Run returned nil although the recognizer did not start")
				}
			})
		})
	}
}

// TestRealClock runs a turn on the wall clock (system timers, the pacer's
// real schedule) and checks that every goroutine is gone after the call.
func TestRealClock(t *testing.T) {
	before := runtime.NumGoroutine()
	stt, tts := fakes(voicetest.Utterance{Final: "hi"})
	brain := &voicetest.Brain{FirstToken: 20 * time.Millisecond, Replies: map[string]string{"hi": "Hello to you."}}
	c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts, Endpointing: vad.Config{SilenceMs: 200, FastSilenceMs: 100}}, brain: brain})
	defer c.close()
	c.speak(300 * time.Millisecond)
	c.silenceUntil("assistant.audio.done", voicetest.Is("audio.done", "turn_2"), 20*time.Second)
	c.hangup()
	c.end(20 * time.Second)

	reply := c.turn(2)
	if bd := reply.Breakdown; bd == nil || bd.Endpointing <= 0 || bd.Transcriber <= 0 || bd.Model <= 0 || bd.Voice <= 0 || bd.Platform < 0 ||
		bd.Total != bd.Endpointing+bd.Transcriber+bd.Model+bd.Voice+bd.Platform {
		t.Errorf("turn 2 Breakdown = %+v, want every stage > 0 and Total their sum", bd)
	}
	if a := c.out.TurnAudio("turn_2"); a.Frames != 15 {
		t.Errorf("turn_2 sent %d frames, want 15", a.Frames)
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after the call, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTransportFails: when the transport fails mid-reply, the pipeline
// stops and reports the turn cut where its audio stopped, so the engine
// does not wait for a Played that cannot come.
func TestTransportFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"})
		brain := &voicetest.Brain{Replies: map[string]string{"tell me a story": story}}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts}, brain: brain, failAudioAfter: 30})
		defer c.close()
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the cut turn", voicetest.Is("turn.done", "turn_2"), 10*time.Second)
		got := c.turn(2)
		if !got.Interrupted || got.Text != "One two three four. Five six" {
			t.Errorf("turn after the transport failed at 600 ms = %q interrupted=%v; want the words of its first 600 ms", got.Text, got.Interrupted)
		}
		c.hangup()
		c.end(10 * time.Second)
	})
}

// TestSlowUtterance: a recognizer that misses one utterance's deadline (a
// loaded machine slows it down) does not end the call: the utterance is
// dropped and counted, the assistant asks the caller to say it again, the
// engine's late final is discarded, and the caller's next utterance is
// answered.
func TestSlowUtterance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "next tuesday", Delay: 8 * time.Second}, voicetest.Utterance{Final: "next tuesday"})
		slow := speech.FailoverTranscriber(stt, speech.TranscriberFallback{}, speech.TranscriberFailoverOptions{})
		brain := &voicetest.Brain{Replies: map[string]string{"next tuesday": "Tuesday it is."}}
		c := startCall(t, callSetup{cfg: Config{Transcriber: slow, Synthesizer: tts}, brain: brain})
		defer c.close()
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the assistant asking again", voicetest.Is("audio.done", "turn_1"), 20*time.Second)
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the answer", voicetest.Is("audio.done", "turn_3"), 10*time.Second)
		c.silence(10 * time.Second) // past the first utterance's late final
		c.hangup()
		if reason := c.end(10 * time.Second); reason != call.ReasonCustomerEnded {
			t.Errorf("ended %q, want %s", reason, call.ReasonCustomerEnded)
		}
		var got []string
		for _, tr := range c.store.Turns() {
			got = append(got, fmt.Sprintf("%d %s %q interrupted=%v", tr.Seq, tr.Role, tr.Text, tr.Interrupted))
		}
		want := []string{
			fmt.Sprintf("1 assistant %q interrupted=false", conversation.MissedPrompt),
			`2 user "next tuesday" interrupted=false`,
			`3 assistant "Tuesday it is." interrupted=false`,
		}
		if !slices.Equal(got, want) {
			t.Errorf("turns:\n got %q\nwant %q", got, want)
		}
		if st := c.p.Stats(); st.UtterancesDropped != 1 {
			t.Errorf("Stats().UtterancesDropped = %d, want 1", st.UtterancesDropped)
		}
	})
}
