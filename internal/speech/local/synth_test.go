package local

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"switchboard/internal/speech"
)

const bookingSentence = "i would like to book an appointment for tomorrow"

// synthesizers returns every synthesizer this build has: the espeak-ng
// program always, and the linked library in a speech_native build.
func synthesizers(t *testing.T) map[string]speech.Synthesizer {
	t.Helper()
	exec, err := newExecSynthesizer(SynthesizerOptions{}.withDefaults())
	needEngine(t, "newExecSynthesizer", err)
	all := map[string]speech.Synthesizer{"program": exec}
	native, err := newNativeSynthesizer(SynthesizerOptions{}.withDefaults())
	switch {
	case err == nil:
		all["library"] = native
	case nativeBuild:
		t.Fatalf("newNativeSynthesizer in a speech_native build: %v", err)
	}
	return all
}

func TestNewSynthesizerPicksTheLibraryInNativeBuilds(t *testing.T) {
	s := newTestSynthesizer(t)
	_, native := s.(*execSynthesizer)
	native = !native
	if native != nativeBuild {
		t.Errorf("NewSynthesizer() = %T in a build with nativeBuild=%v", s, nativeBuild)
	}
	if s.Name() != "local" {
		t.Errorf("Name() = %q, want local", s.Name())
	}
	p, err := NewSynthesizer(SynthesizerOptions{Program: "espeak-ng"})
	if err != nil {
		t.Fatalf("NewSynthesizer(Program: espeak-ng): %v", err)
	}
	if _, ok := p.(*execSynthesizer); !ok {
		t.Errorf("NewSynthesizer(Program: espeak-ng) = %T, want the program", p)
	}
}

func TestNewSynthesizerWithoutProgram(t *testing.T) {
	_, err := newExecSynthesizer(SynthesizerOptions{Program: "no-such-espeak-ng"}.withDefaults())
	if !errors.Is(err, speech.ErrUnavailable) || !strings.Contains(err.Error(), "espeak-ng package") {
		t.Errorf("newExecSynthesizer(missing program) error = %v, want ErrUnavailable naming the espeak-ng package", err)
	}
}

// TestSynthesize checks that a sentence comes out as audio of plausible
// length (0.3–0.6 s a word at 150 wpm) and loudness at both call rates.
func TestSynthesize(t *testing.T) {
	t.Parallel()
	words := len(strings.Fields(bookingSentence))
	for name, s := range synthesizers(t) {
		for _, rate := range []int{8000, 16000} {
			start := time.Now()
			var chunks int
			var pcm []int16
			err := s.Synthesize(context.Background(), bookingSentence, speech.VoiceOptions{SampleRate: rate}, func(p []int16) error {
				chunks++
				pcm = append(pcm, p...)
				return nil
			})
			took := time.Since(start)
			if err != nil {
				t.Fatalf("%s Synthesize(%d Hz): %v", name, rate, err)
			}
			secs := float64(len(pcm)) / float64(rate)
			perWord := secs / float64(words)
			t.Logf("%s %d Hz: %.2f s of audio (%.2f s/word) in %d chunks, RMS %.0f, took %v", name, rate, secs, perWord, chunks, rms(pcm), took)
			if perWord < 0.3 || perWord > 0.6 {
				t.Errorf("%s Synthesize(%q, %d Hz) = %.2f s (%.2f s a word), want 0.3–0.6 s a word", name, bookingSentence, rate, secs, perWord)
			}
			if r := rms(pcm); r < 500 {
				t.Errorf("%s Synthesize(%q, %d Hz) RMS = %.0f, want ≥ 500 (not silence)", name, bookingSentence, rate, r)
			}
		}
	}
}

// TestSynthesizeCancel checks that barge-in (ctx canceled) stops a long
// reply promptly and that nothing reaches out afterwards.
func TestSynthesizeCancel(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("This is a long reply that the caller interrupts before it ends. ", 60)
	for name, s := range synthesizers(t) {
		ctx, cancel := context.WithCancel(context.Background())
		var canceledAt time.Time
		returned := false
		afterCancel := 0
		err := s.Synthesize(ctx, long, speech.VoiceOptions{SampleRate: 8000}, func(p []int16) error {
			if returned {
				t.Errorf("%s: out called after Synthesize returned", name)
			}
			if !canceledAt.IsZero() {
				afterCancel++
			} else {
				canceledAt = time.Now()
				cancel()
			}
			return nil
		})
		returned = true
		took := time.Since(canceledAt)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s Synthesize after cancel = %v, want context.Canceled", name, err)
		}
		if took > time.Second {
			t.Errorf("%s Synthesize returned %v after cancel, want < 1 s", name, took)
		}
		if afterCancel > 0 {
			t.Errorf("%s: out called %d times after cancel, want 0", name, afterCancel)
		}
		t.Logf("%s: returned %v after cancel", name, took)
	}
}

func TestSynthesizeOutError(t *testing.T) {
	t.Parallel()
	stop := errors.New("the line went away")
	for name, s := range synthesizers(t) {
		calls := 0
		err := s.Synthesize(context.Background(), strings.Repeat("One more sentence here. ", 20), speech.VoiceOptions{SampleRate: 16000}, func([]int16) error {
			calls++
			return stop
		})
		if !errors.Is(err, stop) || calls != 1 {
			t.Errorf("%s Synthesize with failing out = %v after %d calls, want %v after 1", name, err, calls, stop)
		}
	}
}

func TestSynthesizeRefuses(t *testing.T) {
	t.Parallel()
	for name, s := range synthesizers(t) {
		for _, c := range []struct {
			text string
			vo   speech.VoiceOptions
			want string
		}{
			{"hello", speech.VoiceOptions{SampleRate: 0}, "SampleRate"},
			{"hello", speech.VoiceOptions{SampleRate: 8000, Voice: "--help"}, "voice"},
			{"hello", speech.VoiceOptions{SampleRate: 8000, Voice: "../../etc/passwd"}, "voice"},
			{"hello", speech.VoiceOptions{SampleRate: 8000, Voice: "xx-nonexistent"}, "xx-nonexistent"},
			{strings.Repeat("a", maxTextBytes+1), speech.VoiceOptions{SampleRate: 8000}, "bytes"},
		} {
			err := s.Synthesize(context.Background(), c.text, c.vo, func([]int16) error { return nil })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s Synthesize(%.20q, %+v) = %v, want an error mentioning %q", name, c.text, c.vo, err, c.want)
			}
		}
		// Nothing to say is not an error, and says nothing.
		err := s.Synthesize(context.Background(), "  \n ", speech.VoiceOptions{SampleRate: 8000}, func([]int16) error {
			t.Errorf("%s: out called for blank text", name)
			return nil
		})
		if err != nil {
			t.Errorf("%s Synthesize(blank) = %v, want nil", name, err)
		}
	}
}

// TestSynthesizeText checks that text reaches espeak-ng as text: a leading
// dash is not an option and newlines do not end the speech.
func TestSynthesizeText(t *testing.T) {
	t.Parallel()
	for name, s := range synthesizers(t) {
		one := len(speak(t, s, "first line", 16000))
		two := len(speak(t, s, "first line\nsecond line", 16000))
		dash := len(speak(t, s, "-s 999 --version", 16000))
		if two < one*3/2 {
			t.Errorf("%s: two lines gave %d samples, one line %d: the second line was not spoken", name, two, one)
		}
		if dash == 0 {
			t.Errorf("%s: text starting with a dash gave no audio", name)
		}
	}
}

func TestVoiceFor(t *testing.T) {
	for _, c := range []struct {
		vo   speech.VoiceOptions
		def  string
		want string
	}{
		{speech.VoiceOptions{}, "en-us", "en-us"},
		{speech.VoiceOptions{Language: "en-US"}, "en-us", "en-us"},
		{speech.VoiceOptions{Language: "en-GB"}, "en-us+f3", "en-us+f3"},
		{speech.VoiceOptions{Language: "fr-FR"}, "en-us", "fr-fr"},
		{speech.VoiceOptions{Voice: "en-gb-x-rp", Language: "fr-FR"}, "en-us", "en-gb-x-rp"},
	} {
		got, err := voiceFor(c.vo, c.def)
		if err != nil || got != c.want {
			t.Errorf("voiceFor(%+v, %q) = %q, %v; want %q", c.vo, c.def, got, err, c.want)
		}
	}
	for _, bad := range []string{"-v", "en us", "en/us", "en;rm", strings.Repeat("a", 65)} {
		if _, err := voiceFor(speech.VoiceOptions{Voice: bad}, "en-us"); err == nil {
			t.Errorf("voiceFor(Voice %q) = nil error, want a refusal", bad)
		}
	}
}

func TestSplitSentences(t *testing.T) {
	short := "Dr. Smith will see you. Is that fine?"
	if got := splitSentences(short); len(got) != 1 || got[0] != short {
		t.Errorf("splitSentences(%q) = %q, want it whole", short, got)
	}
	sentence := strings.Repeat("word ", 30) + "end. "
	long := strings.Repeat(sentence, 5)
	got := splitSentences(long)
	if len(got) < 2 {
		t.Fatalf("splitSentences(5 sentences of %d bytes) = %d pieces, want several", len(sentence), len(got))
	}
	if joined := strings.Join(got, " "); joined != strings.TrimSpace(long) {
		t.Errorf("splitSentences lost text: got %q", joined)
	}
	for _, p := range got[:len(got)-1] {
		if !strings.HasSuffix(p, ".") || len(p) < minPiece {
			t.Errorf("splitSentences piece %q: want ≥ %d bytes ending a sentence", p, minPiece)
		}
	}
	noStops := strings.Repeat("word ", 1000)
	for _, p := range splitSentences(noStops) {
		if len(p) > maxPiece+10 {
			t.Errorf("splitSentences(no sentence ends) gave a %d-byte piece, want ≤ %d", len(p), maxPiece)
		}
	}
}

func TestAvailable(t *testing.T) {
	tts, stt, why := Available()
	t.Logf("Available() = %v, %v, %q", tts, stt, why)
	if stt != nativeBuild {
		t.Errorf("Available() stt = %v in a build with nativeBuild=%v (%s)", stt, nativeBuild, why)
	}
	_, lookErr := lookEspeak("")
	if !tts && !nativeBuild && lookErr != nil {
		t.Skipf("no espeak-ng in this pure-Go build (%v); Available() says so: %s", lookErr, why)
	}
	if !tts {
		t.Errorf("Available() tts = false (%s), want true with espeak-ng installed", why)
	}
	if !strings.Contains(why, "tts: ") || !strings.Contains(why, "stt: ") {
		t.Errorf("Available() why = %q, want both tts: and stt: explained", why)
	}
}
