package vad

import (
	"slices"
	"strings"
	"testing"
)

func TestBargeInObserve(t *testing.T) {
	tests := []struct {
		name    string
		minMs   int
		pattern string // one frame each: '#' caller speech, '.' not
		want    []int  // frames at which Observe decides
	}{
		{"default 300 ms: decides on the 15th frame", 0, strings.Repeat("#", 30), []int{14}},
		{"shorter than MinSpeech", 0, strings.Repeat("#", 14) + "." + strings.Repeat("#", 14), nil},
		{"a gap starts the count over", 0, strings.Repeat("#", 10) + "." + strings.Repeat("#", 15), []int{25}},
		{"once per run", 0, strings.Repeat("#", 20) + ".." + strings.Repeat("#", 20), []int{14, 36}},
		{"silence only", 0, strings.Repeat(".", 40), nil},
		{"MinSpeechMs rounds up to frames", 110, "#######", []int{5}},
		{"one frame", 20, ".#.##", []int{1, 3}},
		{"negative is the default", -5, strings.Repeat("#", 16), []int{14}},
	}
	for _, tt := range tests {
		b := BargeIn{MinSpeechMs: tt.minMs}
		var got []int
		for i, c := range tt.pattern {
			if b.Observe(c == '#') {
				got = append(got, i)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("BargeIn{MinSpeechMs: %d}.Observe over %q (%s) decided at frames %v, want %v", tt.minMs, tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestBargeInReset(t *testing.T) {
	var b BargeIn
	for range 10 {
		b.Observe(true)
	}
	b.Reset()
	for i := range 15 {
		if got := b.Observe(true); got != (i == 14) {
			t.Fatalf("BargeIn.Observe(true) #%d after 10 frames and Reset = %v, want %v", i+1, got, i == 14)
		}
	}
}

func TestBargeInValidate(t *testing.T) {
	for _, tt := range []struct {
		ms    int
		field string
	}{{0, ""}, {300, ""}, {2000, ""}, {-1, "minSpeechMs"}, {2001, "minSpeechMs"}} {
		b := BargeIn{MinSpeechMs: tt.ms}
		if err := b.Validate(); !fieldErr(err, tt.field) {
			t.Errorf("BargeIn{MinSpeechMs: %d}.Validate() = %v, want %s", tt.ms, err, wantField(tt.field))
		}
	}
}

func TestIsBackchannel(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"uh-huh", true},
		{"Uh huh.", true},
		{"uhhuh", true},
		{"Mm-hmm.", true},
		{"mhm", true},
		{"MM HMM!", true},
		{"yeah", true},
		{"Yes.", true},
		{"okay", true},
		{"OK", true},
		{"O.K.", true},
		{"ok...", true},
		{"Right.", true},
		{"sure", true},
		{"Got it.", true},
		{"I see.", true},
		{"Okay, got it.", true},
		{"yeah yeah yeah", true},
		{"Uh-huh, right, I see!", true},
		{"  yes  ", true},
		{"«Okay»", true},

		{"", false},
		{"...", false},
		{"no", false},
		{"wait", false},
		{"stop", false},
		{"yeah but", false},
		{"Okay, stop.", false},
		{"yes please", false},
		{"right now", false},
		{"I see a problem", false},
		{"got", false},
		{"see", false},
		{"uh", false},   // a hesitation: usually the start of a real turn
		{"hmm", false},  // thinking, or about to object
		{"huh?", false}, // asks for a repeat
		{"um yeah", false},
		{"yes " + strings.Repeat("okay ", 30), false}, // too long to be a backchannel
		{"okay1", false},
	}
	var b BargeIn
	for _, tt := range tests {
		if got := b.IsBackchannel(tt.text); got != tt.want {
			t.Errorf("BargeIn.IsBackchannel(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// FuzzIsBackchannel: transcripts are untrusted text. IsBackchannel must not
// panic, and must ignore case and surrounding punctuation.
func FuzzIsBackchannel(f *testing.F) {
	for _, s := range []string{"uh-huh", "Okay, got it.", "yes please", "", "I see", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		var b BargeIn
		got := b.IsBackchannel(text)
		if len(text) > maxBackchannelLen-4 {
			return
		}
		for _, variant := range []string{"(" + text + ")", text + "?!", " " + text} {
			if again := b.IsBackchannel(variant); again != got {
				t.Fatalf("BargeIn.IsBackchannel(%q) = %v but IsBackchannel(%q) = %v; punctuation must not matter", text, got, variant, again)
			}
		}
		if upper := strings.ToUpper(text); strings.EqualFold(upper, text) && len(upper) <= maxBackchannelLen {
			if again := b.IsBackchannel(upper); again != got {
				t.Fatalf("BargeIn.IsBackchannel(%q) = %v but IsBackchannel(%q) = %v; case must not matter", text, got, upper, again)
			}
		}
	})
}
