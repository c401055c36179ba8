package voice

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/audio/vad"
	"switchboard/internal/voice/voicetest"
)

func TestCutSentences(t *testing.T) {
	long := strings.Repeat("word ", 20) + "and then, " + strings.Repeat("more ", 10)
	flat := strings.Repeat("x ", 30)
	for _, tt := range []struct {
		in   string
		want []string
		rest string
	}{
		{"", nil, ""},
		{"Hello", nil, "Hello"},
		{"Hello there. How", []string{"Hello there."}, " How"},
		{"Hello there.", nil, "Hello there."}, // the end may be "..." or ".5": wait for the next delta (or TextDone)
		{"Wait! Really? Yes; no: maybe\nnext", []string{"Wait!", "Really?", "Yes;", "no:", "maybe"}, "next"},
		{"Dr. Smith and Mr. Jones are in. Ok", []string{"Dr. Smith and Mr. Jones are in."}, " Ok"},
		{"Bring e.g. a pen, i.e. something. Then", []string{"Bring e.g. a pen, i.e. something."}, " Then"},
		{"It costs 3.50 today. Ok", []string{"It costs 3.50 today."}, " Ok"},
		{"Hi!! How? ", []string{"Hi!!", "How?"}, " "},
		{"a\n\nb", []string{"a"}, "b"},
		{" \n x", nil, " x"}, // an empty sentence is dropped
		// Past maxWords without an end: cut at the last comma.
		{long, []string{strings.TrimSpace(strings.Repeat("word ", 20)) + " and then,"}, " " + strings.Repeat("more ", 10)},
		// Past maxWords without a comma: cut after maxWords words.
		{flat, []string{strings.TrimSpace(strings.Repeat("x ", 24))}, " " + strings.Repeat("x ", 6)},
		// A complete sentence past maxWords is cut too.
		{strings.Repeat("y ", 30) + "end. Next", []string{strings.TrimSpace(strings.Repeat("y ", 24)), strings.TrimSpace(strings.Repeat("y ", 6)) + " end."}, " Next"},
		// One long word still being written is not cut.
		{strings.Repeat("z", 200), nil, strings.Repeat("z", 200)},
		// "No." is an answer, and a lone "." says nothing.
		{"No. We are closed. . Ok", []string{"No.", "We are closed."}, " Ok"},
	} {
		got, rest := cutSentences(tt.in)
		if !slices.Equal(got, tt.want) || rest != tt.rest {
			t.Errorf("cutSentences(%q) = %q, %q; want %q, %q", tt.in, got, rest, tt.want, tt.rest)
		}
	}
}

// TestCutSentencesStream: whatever the deltas' boundaries, the sentences
// come out the same and nothing is lost.
func TestCutSentencesStream(t *testing.T) {
	text := "Hello there. Dr. Who is in! Is it 3.5 or 4? Yes; ok. The end"
	want, wantRest := cutSentences(text)
	for size := 1; size <= len(text); size++ {
		var got []string
		pending := ""
		for i := 0; i < len(text); i += size {
			pending += text[i:min(i+size, len(text))]
			s, rest := cutSentences(pending)
			got, pending = append(got, s...), rest
		}
		if !slices.Equal(got, want) || strings.TrimSpace(pending) != strings.TrimSpace(wantRest) {
			t.Errorf("deltas of %d bytes: %q + %q, want %q + %q", size, got, pending, want, wantRest)
		}
	}
}

func TestEndsSentence(t *testing.T) {
	for in, want := range map[string]bool{"": false, "  ": false, "what time is it?": true, "ok.": true, "stop! ": true, "well,": false, "so": false} {
		if got := endsSentence(in); got != want {
			t.Errorf("endsSentence(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestHeard: what the caller heard of a turn is the sentences whose audio
// went out, and the played share of the words of the sentence under way;
// a client's playback.mark lowers it to what the client has played.
func TestHeard(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	p := &Pipeline{cfg: Config{Now: func() time.Time { return now }}}
	// Two sentences of 20 frames (5 a word), then one of 10 frames.
	sentences := []sentence{{"One two three four.", 0, 20}, {"Five six seven eight.", 20, 40}, {"Nine ten.", 40, 50}}
	for _, tt := range []struct {
		name     string
		sent     int
		mark     int64         // playback.mark, ms (0: none)
		markAgo  time.Duration // how long ago the mark came
		want     string
		playedMs int64
	}{
		{"nothing played", 0, 0, 0, "", 0},
		{"under one word", 4, 0, 0, "", 80},
		{"one word", 5, 0, 0, "One", 100},
		{"first sentence", 20, 0, 0, "One two three four.", 400},
		{"into the second", 31, 0, 0, "One two three four. Five six", 620},
		{"into the last", 45, 0, 0, "One two three four. Five six seven eight. Nine", 900},
		{"all of it", 50, 0, 0, "One two three four. Five six seven eight. Nine ten.", 1000},
		{"the client is behind", 30, 200, 100 * time.Millisecond, "One two three", 300},
		{"the client's mark is old", 30, 200, time.Second, "One two three four. Five six", 600},
	} {
		tu := &turn{sentences: sentences, queued: 50, sent: tt.sent}
		if tt.mark > 0 {
			tu.markMs, tu.markAt = tt.mark, now.Add(-tt.markAgo)
		}
		heard, playedMs := p.heardLocked(tu)
		if heard != tt.want || playedMs != tt.playedMs {
			t.Errorf("%s: heardLocked(sent %d, mark %d ms %s ago) = %q, %d ms; want %q, %d ms", tt.name, tt.sent, tt.mark, tt.markAgo, heard, playedMs, tt.want, tt.playedMs)
		}
	}
}

// TestHeardLongSentence: a barge-in during a sentence still being
// synthesized (speak runs at most 2 s ahead of playback, so any sentence
// longer than that) stores the words the caller heard.
func TestHeardLongSentence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w []string
		for i := range 60 {
			w = append(w, fmt.Sprintf("w%d", i+1))
		}
		long := strings.Join(w, " ") + "." // 6 s of audio
		stt, tts := fakes(voicetest.Utterance{Final: "tell me a story"}, voicetest.Utterance{Final: "stop"})
		brain := &voicetest.Brain{Replies: map[string]string{"tell me a story": long}, Default: "Sure."}
		c := startCall(t, callSetup{cfg: Config{Transcriber: stt, Synthesizer: tts, BargeIn: vad.BargeIn{MinSpeechMs: 200}}, brain: brain})
		defer c.close()
		c.speak(600 * time.Millisecond)
		c.silenceUntil("the story's audio", voicetest.Is("audio.start", "turn_2"), 10*time.Second)
		c.silence(800 * time.Millisecond)
		c.speak(500 * time.Millisecond)
		clr := c.silenceUntil("assistant.audio.clear", voicetest.Is("audio.clear", "turn_2"), 5*time.Second)
		c.silence(time.Second)
		c.hangup()
		c.end(10 * time.Second)
		want := words(long, int(clr.PlayedMs/wordAudio.Milliseconds()))
		if got := c.turn(2); !got.Interrupted || got.Text != want {
			t.Errorf("after %d ms of a 6 s sentence, stored %q interrupted=%v; want %q", clr.PlayedMs, got.Text, got.Interrupted, want)
		}
	})
}

// TestBargeInAsReplyEnds: a barge-in that reaches the engine while the
// brain, done writing, has not yet returned (a model client reading the
// end of its stream) still makes the turn interrupted, truncated to what
// was heard, at once.
func TestBargeInAsReplyEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := bargeInSetup(voicetest.Utterance{Final: "stop it"}, false)
		s.brain.Linger = 2 * time.Second
		c := startCall(t, s)
		defer c.close()
		askStory(c, 500*time.Millisecond)
		clr := c.silenceUntil("assistant.audio.clear", voicetest.Is("audio.clear", "turn_2"), 5*time.Second)
		c.silenceUntil("the answer to the interruption", voicetest.Is("audio.done", "turn_4"), 10*time.Second)
		c.hangup()
		c.end(10 * time.Second)
		frames := int(clr.PlayedMs / 20)
		want := words(story, frames/20*4+4*(frames%20)/20)
		if got := c.turn(2); !got.Interrupted || got.Text != want {
			t.Errorf("turn 2 stored %q interrupted=%v; want %q interrupted", got.Text, got.Interrupted, want)
		}
		if h := c.brain.HeardTexts(); !slices.Equal(h, []string{want}) {
			t.Errorf("brain.Heard got %q, want [%q]", h, want)
		}
	})
}
