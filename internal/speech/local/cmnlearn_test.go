package local

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

var learnCMN = flag.Bool("learn-cmn", false, "print the cepstral-mean priors learned from espeak-ng speech (see cmnprior.go)")

// cmnTrainingSentences are what the priors in cmnprior.go were learned
// from. None of them is a test sentence.
var cmnTrainingSentences = []string{
	"thank you for calling, how can I help you today",
	"please hold while I check the schedule",
	"your appointment is confirmed for next monday at ten in the morning",
	"could you spell your last name for me",
	"we are open from nine to five on weekdays",
	"I can move your booking to another day if you prefer",
	"the doctor will see you in twenty minutes",
	"is there anything else I can do for you",
}

// TestLearnCMNPrior regenerates the priors in cmnprior.go:
//
//	go test -tags speech_native -run TestLearnCMNPrior -learn-cmn ./internal/speech/local/
//
// One fresh decoder per rate, starting from the en-us model's own
// -cmninit, decodes the training sentences (the espeak-ng program, en-us,
// 150 wpm, through the same path a stream uses) twice with the language model,
// letting live CMN adapt after each; the mean it ends with is the prior.
func TestLearnCMNPrior(t *testing.T) {
	if !*learnCMN {
		t.Skip("run with -learn-cmn to print new priors")
	}
	tr := newTestTranscriber(t, 1)
	synth := newProgramSynthesizer(t)
	var src strings.Builder
	for _, rate := range []int{16000, 8000} {
		d, err := tr.pool.create()
		if err != nil {
			t.Fatalf("creating a decoder: %v", err)
		}
		start := modelCMNInit
		cmn := start[:]
		for pass := range 2 {
			for _, sentence := range cmnTrainingSentences {
				pcm := speak(t, synth, sentence, rate)
				if rate == 8000 {
					pcm = resampleAll(mulaw(pcm), 8000, decodeRate)
				}
				hyp := decodeWith(t, d, "", cmn, pcm)
				t.Logf("%d Hz pass %d: %q → %q", rate, pass, sentence, hyp)
			}
		}
		d.free()
		fmt.Fprintf(&src, "cmnPrior%dk = [cmnLen]float32{", rate/1000)
		for i, v := range cmn {
			if i > 0 {
				src.WriteString(", ")
			}
			fmt.Fprintf(&src, "%.2f", v)
		}
		src.WriteString("}\n")
	}
	t.Logf("new priors for cmnprior.go:\n%s", src.String())
}

// decodeWith runs one utterance through d in 20 ms chunks and returns its
// final hypothesis; cmn is set before and updated after.
func decodeWith(t testing.TB, d decoder, grammar string, cmn []float32, pcm []int16) string {
	t.Helper()
	if err := d.begin(grammar, cmn); err != nil {
		t.Fatalf("begin: %v", err)
	}
	for i := 0; i < len(pcm); i += chunkSamples {
		if err := d.process(pcm[i:min(i+chunkSamples, len(pcm))]); err != nil {
			t.Fatalf("process: %v", err)
		}
	}
	text, _, err := d.end(cmn)
	if err != nil {
		t.Fatalf("end: %v", err)
	}
	return text
}
