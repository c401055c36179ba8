package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/audio/amd"
	"switchboard/internal/audio/amd/amdtest"
)

// TestReport: the confusion matrix, the misses and the beep figures come
// from the outcomes.
func TestReport(t *testing.T) {
	s := time.Second
	outs := []amdtest.Outcome{
		{Audio: amdtest.Audio{Clip: amdtest.Clip{Name: "h1", Text: "Hello?"}}, Decision: amd.Decision{Result: amd.Human, Reason: amd.ReasonShortGreeting, At: 2 * s, Final: true}},
		{Audio: amdtest.Audio{Clip: amdtest.Clip{Name: "h2", Text: "Good afternoon"}}, Decision: amd.Decision{Result: amd.Machine, Reason: amd.ReasonGreeting, At: 3 * s, Final: true}},
		{Audio: amdtest.Audio{Clip: amdtest.Clip{Name: "m1", Machine: true, Beep: true}, BeepEnd: 5 * s},
			Decision: amd.Decision{Result: amd.Machine, Reason: amd.ReasonBeep, At: 4 * s, Final: true},
			BeepOK:   true, BeepEnd: 5*s + 20*time.Millisecond, Cue: 5*s + 20*time.Millisecond, CueOK: true},
		{Audio: amdtest.Audio{Clip: amdtest.Clip{Name: "m2", Machine: true}}, Decision: amd.Decision{Result: amd.Undecided, Reason: amd.ReasonTimeout, At: 5 * s, Final: true}},
	}
	got := report(outs, make([]string, len(outs)), false, 2, "no recognizer", time.Second, time.Now(), "0.1")
	for _, want := range []string{
		"| person (2) | **1** | 1 | 0 |",
		"| voicemail (2) | 0 | **1** | 1 |",
		"**Accuracy:** 2 of 4 (50.0%)",
		"found in 1 of 1 clips with one, end off by p50 20 ms",
		"h2 (", "m2 (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report(…) lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "h1 (") {
		t.Errorf("report(…) lists h1, which was right:\n%s", got)
	}
}
