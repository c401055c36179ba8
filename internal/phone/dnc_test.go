package phone

import (
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

func TestNormalizePhrase(t *testing.T) {
	for in, want := range map[string]string{
		"Stop calling me!":          "stop calling me",
		"  Don't   CALL me...again": "dont call me again",
		"Don’t call me":             "dont call me",
		"¿Por qué? ¡No!":            "por qué no",
		"":                          "",
		"...":                       "",
	} {
		if got := NormalizePhrase(in); got != want {
			t.Errorf("NormalizePhrase(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestSaysOptOut(t *testing.T) {
	phrases := []string{"stop calling me", "take me off your list", "Don't call me again"}
	for _, c := range []struct {
		turn string
		want bool
	}{
		{"Please stop calling me.", true},
		{"STOP, calling me is pointless", true}, // punctuation is not a word
		{"Okay. Take me off your list, thanks", true},
		{"dont call me again", true},
		{"Don’t call me again!", true},
		{"stop calling meadows", false},
		{"nonstop calling me", false},
		{"please call me again", false},
		{"", false},
	} {
		if got := SaysOptOut(c.turn, phrases); got != c.want {
			t.Errorf("SaysOptOut(%q) = %v; want %v", c.turn, got, c.want)
		}
	}
	if SaysOptOut("stop calling me", nil) || SaysOptOut("stop calling me", []string{"", "!!"}) {
		t.Error("SaysOptOut with no (or only blank) phrases = true; want false")
	}
}

func TestCheckDNCNumbers(t *testing.T) {
	var errs apperr.Fields
	got, at := CheckDNCNumbers([]string{"+1 (415) 555-0123", "+14155550123", "4155550124", "+33 6 12 34 56 78"}, &errs)
	if !slices.Equal(got, []string{"+14155550123", "+33612345678"}) || !slices.Equal(at, []int{0, 3}) {
		t.Errorf("CheckDNCNumbers = %v at %v; want [+14155550123 +33612345678] at [0 3]", got, at)
	}
	if len(errs) != 1 || errs[0].Field != "numbers[2]" {
		t.Errorf("CheckDNCNumbers errors = %v; want one on numbers[2]", errs)
	}
	errs = nil
	CheckDNCNumbers(nil, &errs)
	CheckDNCNumbers(make([]string, MaxDNCPerRequest+1), &errs)
	if len(errs) != 2 || errs[0].Field != "numbers" || errs[1].Field != "numbers" {
		t.Errorf("CheckDNCNumbers(none), (too many) errors = %v; want two on numbers", errs)
	}
}

func TestCheckDNCSearchAndReason(t *testing.T) {
	for s, ok := range map[string]bool{"": true, "+1415": true, "5550123": true, "+": false, "1-415": false, "abc": false, "%": false,
		strings.Repeat("1", MaxDNCSearch): true, strings.Repeat("1", MaxDNCSearch+1): false} {
		var errs apperr.Fields
		CheckDNCSearch(s, &errs)
		if (len(errs) == 0) != ok {
			t.Errorf("CheckDNCSearch(%q) errors = %v; want ok = %v", s, errs, ok)
		}
	}
	for r, ok := range map[string]bool{"": true, "asked by email": true, strings.Repeat("x", MaxDNCReason+1): false, "nul\x00": false} {
		var errs apperr.Fields
		CheckDNCReason(r, &errs)
		if (len(errs) == 0) != ok || (!ok && errs[0].Field != "reason") {
			t.Errorf("CheckDNCReason(%.20q) errors = %v; want ok = %v", r, errs, ok)
		}
	}
}

// FuzzSaysOptOut: caller text is untrusted. Normalizing is idempotent and
// leaves single spaces between words; a turn that ends with a phrase, as
// words of their own, says it.
func FuzzSaysOptOut(f *testing.F) {
	for _, s := range []string{"Please stop calling me!", "Don’t call me", "¿Qué?", "", "a'b  c", "\x00\xff"} {
		f.Add(s, "stop calling me")
	}
	f.Fuzz(func(t *testing.T, turn, phrase string) {
		n := NormalizePhrase(turn)
		if again := NormalizePhrase(n); again != n {
			t.Fatalf("NormalizePhrase not idempotent: %q → %q → %q", turn, n, again)
		}
		if strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") || strings.Contains(n, "  ") {
			t.Fatalf("NormalizePhrase(%q) = %q: stray spaces", turn, n)
		}
		if NormalizePhrase(phrase) != "" && !SaysOptOut(turn+" "+phrase, []string{phrase}) {
			t.Fatalf("SaysOptOut(%q + %q) = false; want true", turn, phrase)
		}
	})
}
