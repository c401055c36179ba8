package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/speech/local"
)

func TestScriptFrame(t *testing.T) {
	s := script{speech: [][]byte{{1}, {2}}, silence: []byte{0}, cycle: 4}
	var got []byte
	for n := range 9 {
		got = append(got, s.frame(n)[0])
	}
	if string(got) != "\x01\x02\x00\x00\x01\x02\x00\x00\x01" {
		t.Errorf("frames = %v, want the speech then silence, on a loop", got)
	}
}

func TestQuantile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for q, want := range map[float64]time.Duration{0: 1, .5: 3, .95: 5, 1: 5} {
		if got := quantile(ds, q); got != want {
			t.Errorf("quantile(%v) = %d, want %d", q, got, want)
		}
	}
	if quantile(nil, .5) != 0 {
		t.Errorf("quantile(nil) != 0")
	}
}

// TestPlatformSmoke runs the platform part small: two calls, one turn each.
func TestPlatformSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: a few seconds")
	}
	tts, err := local.NewSynthesizer(local.SynthesizerOptions{})
	if err != nil {
		t.Skipf("no espeak-ng: %v", err)
	}
	utterance, err := synthesize(tts, "A table for two, please.", 16000)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runPlatform(options{platformCalls: 2, platformTurns: 1}, utterance)
	if err != nil {
		t.Fatalf("runPlatform: %v", err)
	}
	if len(r.bds) != 2 {
		t.Fatalf("%d breakdowns, want 2", len(r.bds))
	}
	for _, b := range r.bds {
		if b.Transcriber < platformSTT || b.Model < platformModel || b.Voice < platformTTS || b.Platform < 0 {
			t.Errorf("breakdown %+v, want at least the fakes' latencies", b)
		}
	}
	var doc strings.Builder
	r.write(func(f string, a ...any) { doc.WriteString(strings.TrimSpace(f)) })
	if !strings.Contains(doc.String(), "Platform share") {
		t.Errorf("section = %q", doc.String())
	}
}
