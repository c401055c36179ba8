package voice

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/voice/voicetest"
)

// The barge-in decision in two steps (see vad.BargeIn): caller speech for
// MinSpeechMs over the assistant pauses its audio within a frame; the
// words that follow cut the turn, or let it resume where it paused. The
// tests run in a synctest bubble, so every time below is exact; bargeInSetup's
// MinSpeechMs is 200 ms (10 frames) and the story starts at askStory's
// audio.start, the caller 300 ms into it.

// pauseOf returns turn_2's audio.pause, failing the test without one.
func pauseOf(t *testing.T, c *testCall) voicetest.Event {
	t.Helper()
	e, ok := c.out.Find(voicetest.Is("audio.pause", "turn_2"))
	if !ok {
		t.Fatalf("no audio.pause for turn_2; events:\n%s", c.dump())
	}
	return e
}

// checkPausedAtOnce: the pause came MinSpeechMs after the caller's first
// voiced frame (written at onset), give or take a frame, after 300 ms of
// the story plus that, and at most one frame went out after it.
func checkPausedAtOnce(t *testing.T, c *testCall, onset time.Time) voicetest.Event {
	t.Helper()
	pause := pauseOf(t, c)
	if d := pause.At.Sub(onset); d < 180*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("audio.pause %s after the caller's first voiced frame, want the 10th frame's 180–200 ms", d)
	}
	if pause.PlayedMs < 460 || pause.PlayedMs > 520 {
		t.Errorf("audio.pause after %d ms of the story, want 300 ms of it + 10 frames of speech (460–520)", pause.PlayedMs)
	}
	if a := c.out.TurnAudio("turn_2"); a.WhilePaused > 1 {
		t.Errorf("turn_2 sent %d frames while paused, want at most the one on its way", a.WhilePaused)
	}
	return pause
}

// storyUntilOnset asks for the story, lets 300 ms of it play, and returns
// when the caller's first frame of speech over it is written.
func storyUntilOnset(c *testCall) time.Time {
	c.speak(600 * time.Millisecond)
	c.silenceUntil("the story's audio", voicetest.Is("audio.start", "turn_2"), 10*time.Second)
	c.silence(300 * time.Millisecond)
	return time.Now()
}

// TestBargeInPausesThenCuts: words over the assistant. Its audio pauses
// at MinSpeechMs and stays paused while the caller talks; the final's
// words cut the turn, whose heard text is what was sent before the pause
// — although the cut comes much later.
func TestBargeInPausesThenCuts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One word in the partial: not yet enough to cut; the final decides.
		c := startCall(t, bargeInSetup(voicetest.Utterance{Partial: "wait", Final: "wait I have a question"}, false))
		defer c.close()
		onset := storyUntilOnset(c)
		c.speak(900 * time.Millisecond)
		c.silenceUntil("the answer to the interruption", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		pause := checkPausedAtOnce(t, c, onset)
		clr, ok := c.out.Find(voicetest.Is("audio.clear", "turn_2"))
		if !ok {
			t.Fatalf("no audio.clear for turn_2; events:\n%s", c.dump())
		}
		// Paused at 200 ms of speech, cut at the final: 700 ms of speech,
		// 500 ms of silence to the endpoint and the recognizer's 100 ms later.
		if d := clr.At.Sub(pause.At); d < time.Second || d > 1300*time.Millisecond {
			t.Errorf("audio.clear %s after audio.pause, want the final's (1.2–1.3 s)", d)
		}
		if _, resumed := c.out.Find(voicetest.Is("audio.resume", "turn_2")); resumed {
			t.Errorf("the cut turn was resumed first; events:\n%s", c.dump())
		}
		a := c.out.TurnAudio("turn_2")
		if clr.PlayedMs != pause.PlayedMs || int64(a.Frames)*20 != clr.PlayedMs {
			t.Errorf("audio.clear playedMs %d, pause's %d, %d frames sent: want all the same (nothing was sent while paused)", clr.PlayedMs, pause.PlayedMs, a.Frames)
		}
		// 5 frames a word, 20 a sentence: the words whose audio went out
		// before the pause.
		frames := int(pause.PlayedMs / 20)
		wantHeard := words(story, frames/20*4+4*(frames%20)/20)
		if got := c.turn(2); !got.Interrupted || got.Text != wantHeard {
			t.Errorf("turn 2 stored %q interrupted=%v, want %q (heard before the pause at %d ms)", got.Text, got.Interrupted, wantHeard, pause.PlayedMs)
		}
		if u := c.turn(3); u.Role != call.RoleUser || u.Text != "wait I have a question" {
			t.Errorf("turn 3 = %s %q, want the caller's words", u.Role, u.Text)
		}
		if st := c.p.Stats(); st.Pauses != 1 || st.BargeIns != 1 {
			t.Errorf("Stats = %+v, want 1 pause and 1 barge-in", st)
		}
	})
}

// TestBargeInCutsEarly: a partial with two words that are no
// backchannel cuts the paused turn before the caller is done.
func TestBargeInCutsEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"}, voicetest.Utterance{Partial: "hold on", Final: "hold on I have a question"})
		stt.PartialAfter = 800 * time.Millisecond // of the utterance's audio, pre-roll included: after the pause
		brain := &voicetest.Brain{FirstToken: modelDelay, Replies: map[string]string{"tell me a story": story}, Default: "Sure."}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts}, brain: brain}) // MinSpeechMs: the default 300
		defer c.close()
		storyUntilOnset(c)
		c.speak(1500 * time.Millisecond)
		c.silenceUntil("the answer", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		pause := pauseOf(t, c)
		clr, _ := c.out.Find(voicetest.Is("audio.clear", "turn_2"))
		stopped, _ := c.out.Find(func(e voicetest.Event) bool { return e.Kind == "speech.stopped" && e.At.After(pause.At) })
		partial, _ := c.out.Find(func(e voicetest.Event) bool { return e.Kind == "transcript" && !e.Flag && e.Text == "hold on" })
		if clr.At.IsZero() || !clr.At.After(pause.At) || clr.At != partial.At || !clr.At.Before(stopped.At) {
			t.Errorf("audio.pause at %s, the partial %q at %s, audio.clear at %s, speech.stopped at %s: want the clear at the partial, while the caller speaks",
				pause.At.Format("05.000"), partial.Text, partial.At.Format("05.000"), clr.At.Format("05.000"), stopped.At.Format("05.000"))
		}
		if clr.PlayedMs != pause.PlayedMs {
			t.Errorf("audio.clear playedMs %d, want the pause's %d", clr.PlayedMs, pause.PlayedMs)
		}
	})
}

// TestBargeInResumesAfterBackchannel: "yeah" over the assistant pauses it
// and, once the final says it was a backchannel, it resumes where it
// paused: the whole story is played, nothing is lost or repeated, and
// the backchannel is no turn.
func TestBargeInResumesAfterBackchannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Partial: "yeah", Final: "yeah"}, false))
		defer c.close()
		onset := storyUntilOnset(c)
		c.speak(400 * time.Millisecond)
		c.silenceUntil("the story's end", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		checkResumed(t, c, onset, "yeah")
	})
}

// TestBargeInResumesAfterNothing: sound without words (a cough, noise; or
// only "um") pauses the assistant, and it resumes once the recognizer
// finds no words in it.
func TestBargeInResumesAfterNothing(t *testing.T) {
	for _, final := range []string{"", "um"} {
		t.Run("final "+final, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := startCall(t, bargeInSetup(voicetest.Utterance{Final: final}, false))
				defer c.close()
				onset := storyUntilOnset(c)
				c.speak(400 * time.Millisecond)
				c.silenceUntil("the story's end", voicetest.Is("audio.done", "turn_2"), 10*time.Second)
				c.hangup()
				c.end(10 * time.Second)

				checkResumed(t, c, onset, final)
			})
		})
	}
}

// checkResumed: the story paused at once, resumed where it paused when
// the final came, and played in full; said was no turn.
func checkResumed(t *testing.T, c *testCall, onset time.Time, said string) {
	t.Helper()
	pause := checkPausedAtOnce(t, c, onset)
	resume, ok := c.out.Find(voicetest.Is("audio.resume", "turn_2"))
	if !ok {
		t.Fatalf("turn_2 paused for %q and never resumed; events:\n%s", said, c.dump())
	}
	// 400 ms of speech, 500 ms of silence, 100 ms for the final.
	if d := resume.At.Sub(onset); d < 980*time.Millisecond || d > 1040*time.Millisecond {
		t.Errorf("audio.resume %s after the caller's onset, want at the final (~1 s)", d)
	}
	if resume.PlayedMs != pause.PlayedMs && resume.PlayedMs != pause.PlayedMs+20 {
		t.Errorf("audio.resume playedMs %d, want the pause's %d (+ the frame on its way)", resume.PlayedMs, pause.PlayedMs)
	}
	if e, ok := c.out.Find(voicetest.Is("audio.clear", "")); ok {
		t.Errorf("%q cleared the audio: %s", said, e)
	}
	a := c.out.TurnAudio("turn_2")
	if a.Frames != 24*5 || a.Loud != 24*5 || a.Pauses != 1 {
		t.Errorf("turn_2 audio = %+v, want all %d frames, one pause", a, 24*5)
	}
	// The story took its length plus the pause, no more: nothing replayed.
	if got, want := a.Last.Sub(a.First), 24*5*audio.FrameDuration-audio.FrameDuration+resume.At.Sub(pause.At); got < want-audio.FrameDuration || got > want+audio.FrameDuration {
		t.Errorf("the story's audio spanned %s, want its 2.4 s plus the %s pause", got, resume.At.Sub(pause.At))
	}
	if r := c.turn(2); r.Text != story || r.Interrupted {
		t.Errorf("turn 2 = %q interrupted=%v, want the whole story", r.Text, r.Interrupted)
	}
	if n := len(c.store.Turns()); n != 2 {
		t.Errorf("%d turns stored, want 2 (%q over the assistant is no turn): %+v", n, said, c.store.Turns())
	}
	if st := c.p.Stats(); st.Pauses != 1 || st.BargeIns != 0 {
		t.Errorf("Stats = %+v, want 1 pause and no barge-in", st)
	}
}

// TestBargeInGapsInSpeech: speech with an unvoiced frame in every five
// (plosives, the pauses between words) still pauses the assistant after
// MinSpeechMs from its first voiced frame; before, each gap started the
// count over and it never did.
func TestBargeInGapsInSpeech(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Final: "wait I have a question"}, false))
		defer c.close()
		onset := storyUntilOnset(c)
		for range 8 {
			c.speak(80 * time.Millisecond)
			c.silence(20 * time.Millisecond)
		}
		c.silenceUntil("the answer", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		// 10 frames of 4 voiced + 1 not: the 11th frame, voiced, spans
		// 220 ms (MinSpeechMs 200).
		pause := pauseOf(t, c)
		if d := pause.At.Sub(onset); d != 200*time.Millisecond {
			t.Errorf("audio.pause %s after the caller's first voiced frame, want 200 ms (the 11th frame, the first voiced one past MinSpeechMs)", d)
		}
		if r := c.turn(2); !r.Interrupted {
			t.Errorf("turn 2 = %q, want it cut by the caller's words", r.Text)
		}
	})
}

// TestBargeInPausedWithMarks: a client that reports playback (marks) and
// pauses its playback at audio.pause: the heard text stops at the pause,
// however long after it the cut comes.
func TestBargeInPausedWithMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Final: "wait I have a question"}, false))
		defer c.close()
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the story's audio", voicetest.Is("audio.start", "turn_2"), 10*time.Second)
		c.silence(100 * time.Millisecond)
		c.p.Mark("turn_2", 60) // the client plays 40 ms behind the wire
		c.silence(200 * time.Millisecond)
		c.speak(1500 * time.Millisecond) // paused 200 ms in; cut 1.8 s later
		c.silenceUntil("the cut", voicetest.Is("audio.clear", "turn_2"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		pause := pauseOf(t, c)
		// Played at the pause: the mark's 60 ms plus the 400 ms since it.
		played := 60 + 400
		if pause.PlayedMs-int64(played) != 40 {
			t.Errorf("audio.pause playedMs %d, want the mark's %d + 40 ms in the client's buffer", pause.PlayedMs, played)
		}
		frames := played / 20
		want := words(story, frames/20*4+4*(frames%20)/20)
		if got := c.turn(2); got.Text != want {
			t.Errorf("turn 2 = %q, want %q: what the client had played when it paused (%d ms)", got.Text, want, played)
		}
	})
}

// TestBargeInPausedThenTyped: the caller types while the assistant is
// paused: the engine cuts the turn, and the pacer is free again: the
// answer plays.
func TestBargeInPausedThenTyped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"}, voicetest.Utterance{})
		stt.FinalDelay = 2 * time.Second // the recognizer is slow: the pause lasts
		brain := &voicetest.Brain{FirstToken: modelDelay, Replies: map[string]string{"tell me a story": story}, Default: "Sure."}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts}, brain: brain})
		defer c.close()
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the story's audio", voicetest.Is("audio.start", "turn_2"), 10*time.Second)
		// The first final came after 2 s: the story started late but plays.
		c.silence(300 * time.Millisecond)
		c.speak(500 * time.Millisecond)
		c.silenceUntil("the pause", voicetest.Is("audio.pause", "turn_2"), 5*time.Second)
		c.in <- conversation.Input{Kind: conversation.UserText, Text: "typed instead"}
		c.silenceUntil("the answer's audio", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		got := kinds(c.out.Events())
		i := slices.Index(got, "audio.clear turn_2")
		if i < 0 || !slices.Contains(got[i:], "audio.start turn_4") {
			t.Errorf("events %q, want turn_2 cleared, then turn_4's audio", got)
		}
		if a := c.out.TurnAudio("turn_4"); a.Frames != 5 {
			t.Errorf("turn_4 sent %d frames, want its one word's 5: the pacer must not stay paused", a.Frames)
		}
		if r := c.turn(2); !r.Interrupted {
			t.Errorf("turn 2 = %q, want it interrupted", r.Text)
		}
	})
}

// TestBargeInSlowRecognizer: a recognizer that takes longer than
// maxWaitWords to give the final after the caller stopped does not keep
// the assistant silent: it resumes; the late final's words still cut it.
func TestBargeInSlowRecognizer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"}, voicetest.Utterance{Partial: "wait", Final: "wait I have a question"})
		stt.FinalDelay = 5 * time.Second
		long := strings.Repeat("One two three four. ", 30) // 12 s of audio
		brain := &voicetest.Brain{Replies: map[string]string{"tell me a story": long}, Default: "Sure."}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts}, brain: brain})
		defer c.close()
		storyUntilOnset(c)
		c.speak(400 * time.Millisecond)
		c.silenceUntil("the cut", voicetest.Is("audio.clear", "turn_2"), 15*time.Second)
		c.hangup()
		c.end(10 * time.Second)

		pause := pauseOf(t, c)
		resume, _ := c.out.Find(voicetest.Is("audio.resume", "turn_2"))
		clr, _ := c.out.Find(voicetest.Is("audio.clear", "turn_2"))
		stopped, _ := c.out.Find(func(e voicetest.Event) bool { return e.Kind == "speech.stopped" && e.At.After(pause.At) })
		if d := resume.At.Sub(stopped.At); resume.At.IsZero() || d < maxWaitWords || d > maxWaitWords+audio.FrameDuration {
			t.Errorf("audio.resume %s after speech.stopped, want maxWaitWords (%s) with no final yet; events:\n%s", d, maxWaitWords, c.dump())
		}
		if d := clr.At.Sub(stopped.At); d != stt.FinalDelay {
			t.Errorf("audio.clear %s after speech.stopped, want at the late final (%s)", d, stt.FinalDelay)
		}
		if a := c.out.TurnAudio("turn_2"); int64(a.Frames)*20 != clr.PlayedMs || clr.PlayedMs <= pause.PlayedMs {
			t.Errorf("turn_2 sent %d frames, clear at %d ms, pause at %d ms: want it resumed, then cut", a.Frames, clr.PlayedMs, pause.PlayedMs)
		}
	})
}

// TestBargeInResumesWhenAudioStops: a caller whose audio stops altogether
// while it speaks over the assistant (a client that stops sending, a line
// gone quiet) ends the utterance for no one; the pause does not hold the
// assistant silent for good: it resumes maxWaitWords after the last frame.
func TestBargeInResumesWhenAudioStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := startCall(t, bargeInSetup(voicetest.Utterance{Final: ""}, false))
		defer c.close()
		onset := storyUntilOnset(c)
		c.speak(400 * time.Millisecond) // then no frame at all
		last := time.Now()
		time.Sleep(maxWaitWords + time.Second)
		pause := checkPausedAtOnce(t, c, onset)
		resume, ok := c.out.Find(voicetest.Is("audio.resume", "turn_2"))
		if !ok {
			t.Fatalf("the caller's audio stopped and turn_2 stayed paused; events:\n%s", c.dump())
		}
		if d := resume.At.Sub(last); d < maxWaitWords || d > maxWaitWords+pauseCheck+audio.FrameDuration {
			t.Errorf("audio.resume %s after the last frame, want within %s of %s", d, pauseCheck, maxWaitWords)
		}
		if resume.PlayedMs < pause.PlayedMs {
			t.Errorf("audio.resume playedMs %d before the pause's %d", resume.PlayedMs, pause.PlayedMs)
		}
		c.hangup()
		c.end(10 * time.Second)
	})
}
