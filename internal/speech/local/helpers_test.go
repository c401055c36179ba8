package local

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"switchboard/internal/speech"
)

// speak synthesizes text at rate Hz with s, failing the test on error.
func speak(t testing.TB, s speech.Synthesizer, text string, rate int) []int16 {
	t.Helper()
	var pcm []int16
	err := s.Synthesize(context.Background(), text, speech.VoiceOptions{SampleRate: rate}, func(p []int16) error {
		pcm = append(pcm, p...)
		return nil
	})
	if err != nil {
		t.Fatalf("%s Synthesize(%q, %d Hz): %v", s.Name(), text, rate, err)
	}
	return pcm
}

func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}

// G.711 μ-law, the telephone codec, to degrade test audio as a phone
// call does.
func mulawEncode(s int16) byte {
	const bias, clip = 0x84, 32635
	v := int(s)
	sign := 0
	if v < 0 {
		v, sign = -v, 0x80
	}
	v = min(v, clip) + bias
	exp := 7
	for mask := 0x4000; v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (v >> (exp + 3)) & 0x0F
	return ^byte(sign | exp<<4 | mant)
}

func mulawDecode(b byte) int16 {
	b = ^b
	exp := int(b>>4) & 7
	v := ((int(b&0x0F) << 3) + 0x84) << exp
	v -= 0x84
	if b&0x80 != 0 {
		v = -v
	}
	return int16(v)
}

func mulaw(pcm []int16) []int16 {
	out := make([]int16, len(pcm))
	for i, v := range pcm {
		out[i] = mulawDecode(mulawEncode(v))
	}
	return out
}

func resampleAll(pcm []int16, from, to int) []int16 {
	r := newResampler(from, to)
	return r.flush(r.process(nil, pcm))
}

// wordAccuracy is 1 - word error rate (substitutions, deletions and
// insertions over the reference's words), floored at 0.
func wordAccuracy(ref, hyp string) float64 {
	r, h := strings.Fields(ref), strings.Fields(hyp)
	if len(r) == 0 {
		return 0
	}
	prev := make([]int, len(h)+1)
	cur := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return max(0, 1-float64(prev[len(h)])/float64(len(r)))
}

// needEngine stops a test whose engine could not be made (err): a missing
// engine (speech.ErrUnavailable) skips it in the pure-Go build, which
// `make test-short` runs on machines that may lack the speech packages;
// in a speech_native build (`make test`, which installs them) anything
// fails it.
func needEngine(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !nativeBuild && errors.Is(err, speech.ErrUnavailable) {
		t.Skipf("%s: %v (this pure-Go build runs without it; make test runs this test)", what, err)
	}
	t.Fatalf("%s: %v (run scripts/speech-deps.sh)", what, err)
}

// newTestSynthesizer returns the synthesizer NewSynthesizer picks for
// this build; espeak-ng missing stops the test (needEngine).
func newTestSynthesizer(t testing.TB) speech.Synthesizer {
	t.Helper()
	s, err := NewSynthesizer(SynthesizerOptions{})
	needEngine(t, "NewSynthesizer", err)
	return s
}

// newProgramSynthesizer returns the synthesizer that runs the espeak-ng
// program. Recognition tests speak with it because its audio is the same
// on every run: the library keeps state between calls (its noise source
// for unvoiced sounds), so its audio for a sentence depends on what it
// said before, and so would a marginal transcript.
func newProgramSynthesizer(t testing.TB) speech.Synthesizer {
	t.Helper()
	s, err := newExecSynthesizer(SynthesizerOptions{}.withDefaults())
	needEngine(t, "newExecSynthesizer", err)
	return s
}

// newTestTranscriber returns a pocketsphinx transcriber with a pool of
// decoders, closed at the end of the test. It skips the test in a build
// without speech_native, the one case where no transcriber is expected.
func newTestTranscriber(t testing.TB, decoders int) *transcriber {
	t.Helper()
	tr, err := NewTranscriber(TranscriberOptions{Decoders: decoders})
	if err != nil {
		if !nativeBuild && errors.Is(err, speech.ErrUnavailable) {
			t.Skipf("NewTranscriber: %v", err)
		}
		t.Fatalf("NewTranscriber: %v (run scripts/speech-deps.sh)", err)
	}
	t.Cleanup(func() { tr.(*transcriber).Close() })
	return tr.(*transcriber)
}
