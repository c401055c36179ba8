package amdtest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"switchboard/internal/audio/amd"
)

// TestClips is the fast guard on the heuristic: a few clips of the
// labelled set (espeak-ng over μ-law, the WebRTC VAD, no recognizer) must
// be classified right, with the beep and the cue where they belong. The
// full measurement is `make bench-voicemail`.
func TestClips(t *testing.T) {
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		if nativeBuild {
			t.Fatal("espeak-ng is not installed (./scripts/speech-deps.sh installs it)")
		}
		t.Skip("espeak-ng is not installed (./scripts/speech-deps.sh installs it)")
	}
	clips := []struct {
		clip   Clip
		result amd.Result
		reason amd.Reason
	}{
		{Clip{Name: "hello", Text: "Hello?", Voice: "en-us", Speed: 150}, amd.Human, amd.ReasonShortGreeting},
		{Clip{Name: "dana", Text: "Hi, this is Dana.", Voice: "en-gb", Speed: 130}, amd.Human, amd.ReasonShortGreeting},
		{Clip{Name: "who", Text: "Hello, who is this?", Voice: "en-029", Speed: 130, Noise: true}, amd.Human, amd.ReasonShortGreeting},
		{Clip{Name: "greeting", Machine: true, Text: MachineTexts[0], Voice: "en-us", Speed: 180}, amd.Machine, amd.ReasonGreeting},
		{Clip{Name: "greeting-beep", Machine: true, Text: MachineTexts[2], Voice: "en-gb", Speed: 150, Beep: true, Noise: true}, amd.Machine, amd.ReasonGreeting},
		{Clip{Name: "short-beep", Machine: true, Text: "Leave a message.", Voice: "en-us", Speed: 150, Beep: true}, amd.Machine, amd.ReasonBeep},
	}
	ctx := context.Background()
	for _, c := range clips {
		t.Run(c.clip.Name, func(t *testing.T) {
			t.Parallel()
			a, err := Synthesize(ctx, c.clip)
			if err != nil {
				t.Fatal(err)
			}
			o, err := Run(ctx, a, Options{VADMode: 2})
			if err != nil {
				t.Fatal(err)
			}
			d := o.Decision
			if d.Result != c.result || d.Reason != c.reason || d.At > 5*time.Second {
				t.Fatalf("Run(%q, %s) = %v by %v at %v, want %v by %v by 5s", c.clip.Text, c.clip.Voice, d.Result, d.Reason, d.At, c.result, c.reason)
			}
			if !c.clip.Beep {
				if o.BeepOK {
					t.Errorf("Run(%q): a beep at %v, there is none", c.clip.Text, o.BeepStart)
				}
				if c.result == amd.Machine && (!o.CueOK || o.Cue < a.Spoken) {
					t.Errorf("Run(%q): cue %v (ok %v), want one after the greeting (%v)", c.clip.Text, o.Cue, o.CueOK, a.Spoken)
				}
				return
			}
			if off := o.BeepEnd - a.BeepEnd; !o.BeepOK || off < -20*time.Millisecond || off > 20*time.Millisecond {
				t.Errorf("Run(%q): beep %v..%v (ok %v), want it to end at %v ± 20 ms", c.clip.Text, o.BeepStart, o.BeepEnd, o.BeepOK, a.BeepEnd)
			}
			if !o.CueOK || o.Cue != o.BeepEnd {
				t.Errorf("Run(%q): cue %v (ok %v), want the beep's end %v", c.clip.Text, o.Cue, o.CueOK, o.BeepEnd)
			}
		})
	}
}

func TestSet(t *testing.T) {
	set := Set()
	var humans, machines, beeps int
	names := map[string]bool{}
	for _, c := range set {
		if names[c.Name] {
			t.Errorf("Set(): name %q twice", c.Name)
		}
		names[c.Name] = true
		switch {
		case c.Machine && c.Beep:
			machines++
			beeps++
		case c.Machine:
			machines++
		default:
			humans++
		}
	}
	if humans < 20 || machines < 30 || beeps < machines/2 {
		t.Errorf("Set(): %d people, %d machines (%d with a beep), want at least 20, 30 and half", humans, machines, beeps)
	}
}
