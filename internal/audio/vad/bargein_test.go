package vad

import (
	"slices"
	"strings"
	"testing"
)

func TestBargeInObserve(t *testing.T) {
	gap := strings.Repeat(".", BargeInGapMs/20)    // the longest gap inside a run
	long := strings.Repeat(".", BargeInGapMs/20+1) // a gap that ends the run
	tests := []struct {
		name    string
		minMs   int
		pattern string // one frame each: '#' caller speech, '.' not
		want    []int  // frames at which Observe decides
	}{
		{"default 300 ms: decides on the 15th frame", 0, strings.Repeat("#", 30), []int{14}},
		{"shorter than MinSpeech", 0, strings.Repeat("#", 14) + long + strings.Repeat("#", 14), nil},
		{"a gap longer than BargeInGapMs starts the count over", 0, strings.Repeat("#", 10) + long + strings.Repeat("#", 15), []int{10 + len(long) + 14}},
		{"one unvoiced frame does not start it over, and counts", 0, strings.Repeat("#", 10) + "." + strings.Repeat("#", 15), []int{14}},
		{"plosives and pauses between words are bridged", 0, "####" + gap + "###.##..###" + gap + "##", []int{14}},
		{"sparse speech: one voiced frame in each gap's length", 0, strings.Repeat("#"+gap, 4) + "#", []int{3 * (len(gap) + 1)}},
		{"the run never ends in the gap after it", 0, strings.Repeat("#", 10) + strings.Repeat(".", 20), nil},
		{"once per run", 0, strings.Repeat("#", 20) + ".." + strings.Repeat("#", 20), []int{14}},
		{"once per run, again after a long gap", 0, strings.Repeat("#", 20) + long + strings.Repeat("#", 20), []int{14, 20 + len(long) + 14}},
		{"silence only", 0, strings.Repeat(".", 40), nil},
		{"MinSpeechMs rounds up to frames", 110, "#######", []int{5}},
		{"one frame", 20, ".#" + long + "##", []int{1, 2 + len(long)}},
		{"negative is the default", -5, strings.Repeat("#", 16), []int{14}},
	}
	for _, tt := range tests {
		b := BargeIn{MinSpeechMs: tt.minMs}
		var got []int
		for i, c := range tt.pattern {
			if b.Observe(c == '#') {
				got = append(got, i)
				if !b.Decided() {
					t.Errorf("BargeIn.Observe over %q (%s) decided at frame %d but Decided() = false", tt.pattern, tt.name, i)
				}
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("BargeIn{MinSpeechMs: %d}.Observe over %q (%s) decided at frames %v, want %v", tt.minMs, tt.pattern, tt.name, got, tt.want)
		}
	}
}

// TestBargeInDecided: Decided holds from the decision through the gaps
// inside the run, and ends with the run.
func TestBargeInDecided(t *testing.T) {
	var b BargeIn
	frames := strings.Repeat("#", 15) + strings.Repeat(".", BargeInGapMs/20) + "#" + strings.Repeat(".", BargeInGapMs/20+1)
	var got strings.Builder
	for _, c := range frames {
		b.Observe(c == '#')
		got.WriteString(map[bool]string{true: "D", false: "-"}[b.Decided()])
	}
	want := strings.Repeat("-", 14) + strings.Repeat("D", 1+BargeInGapMs/20+1+BargeInGapMs/20) + "-"
	if got.String() != want {
		t.Errorf("BargeIn.Decided() over %q = %q, want %q", frames, got.String(), want)
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
		{"aha", true},
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

func TestBargeInJudge(t *testing.T) {
	tests := []struct {
		text string
		want Verdict
	}{
		{"", NoWords},
		{"...", NoWords},
		{"uh", NoWords},
		{"Um, hmm.", NoWords},
		{"oh", NoWords},
		{"uh-huh", Backchannel},
		{"aha", Backchannel},
		{"Yeah.", Backchannel},
		{"um yeah", Backchannel},
		{"oh okay, got it", Backchannel},
		{"mm hmm", Backchannel},
		{"wait", Interruption},
		{"huh?", Interruption}, // asks for a repeat
		{"no", Interruption},
		{"yeah but", Interruption},
		{"uh wait", Interruption},
		{"hold on I have a question", Interruption},
		{"yes " + strings.Repeat("okay ", 30), Interruption}, // too long to be a backchannel
	}
	var b BargeIn
	for _, tt := range tests {
		if got := b.Judge(tt.text); got != tt.want {
			t.Errorf("BargeIn.Judge(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestBargeInInterruptsEarly(t *testing.T) {
	tests := []struct {
		partial string
		want    bool
	}{
		{"", false},
		{"oh", false},
		{"wait", false}, // one word: perhaps a misheard "uh-huh"; the final decides
		{"you", false},
		{"yeah yeah okay", false},
		{"oh oh", false},
		{"uh yeah wait", false},
		{"wait stop", true},
		{"way to ah", true},
		{"oh oh have a", true},
		{"I have a question", true},
		{strings.Repeat("yeah ", 40), true}, // longer than any backchannel
	}
	var b BargeIn
	for _, tt := range tests {
		if got := b.InterruptsEarly(tt.partial); got != tt.want {
			t.Errorf("BargeIn.InterruptsEarly(%q) = %v, want %v", tt.partial, got, tt.want)
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
