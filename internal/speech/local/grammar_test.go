package local

import (
	"slices"
	"strings"
	"testing"
)

func TestHintWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Book an appointment!", []string{"book", "an", "appointment"}},
		{"3pm", []string{"three", "pm"}},
		{"Tuesday, 10:30", []string{"tuesday", "ten", "thirty"}},
		{"I'd like 21", []string{"i'd", "like", "twenty", "one"}},
		{"415", []string{"four", "one", "five"}},
		{"07", []string{"zero", "seven"}},
		{"'quoted'", []string{"quoted"}},
		{"Café ünïcode — ok", []string{"café", "ünïcode", "ok"}},
		{"", nil},
	} {
		if got := hintWords(c.in); !slices.Equal(got, c.want) {
			t.Errorf("hintWords(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestBuildGrammar(t *testing.T) {
	known := func(w string) bool { return w != "okonkwo" && w != "zzz" }
	if g, _ := buildGrammar(nil, known); g != "" {
		t.Errorf("buildGrammar(no hints) = %q, want \"\" (the language model)", g)
	}
	g, skipped := buildGrammar([]string{"Book an appointment", "Cancel", "Dr. Okonkwo", "zzz", "yes", "Café", DigitsHint}, known)
	want := "#JSGF V1.0;\ngrammar hints;\npublic <answer> = book an appointment | cancel | dr | yes | no | <digit>+;\n" +
		"<digit> = zero | one | two | three | four | five | six | seven | eight | nine;\n"
	if g != want {
		t.Errorf("buildGrammar() =\n%s\nwant\n%s", g, want)
	}
	if !slices.Equal(skipped, []string{"okonkwo", "zzz", "café"}) {
		t.Errorf("buildGrammar() skipped %q, want [okonkwo zzz café]", skipped)
	}
	// Without digits, filler words may surround the answer.
	g, _ = buildGrammar([]string{"Book an appointment", "Cancel"}, known)
	want = "#JSGF V1.0;\ngrammar hints;\npublic <answer> = <filler>* (book an appointment | cancel | yes | no) <filler>*;\n" +
		"<filler> = " + strings.Join(fillerWords, " | ") + ";\n"
	if g != want {
		t.Errorf("buildGrammar(no digits) =\n%s\nwant\n%s", g, want)
	}
	// Hints that are all punctuation still leave a usable yes/no grammar.
	g, _ = buildGrammar([]string{"?!", "..."}, known)
	if !strings.Contains(g, "public <answer> = <filler>* (yes | no) <filler>*;") {
		t.Errorf("buildGrammar(punctuation only) = %q, want the yes/no words", g)
	}
}

func FuzzBuildGrammar(f *testing.F) {
	f.Add("Book an appointment; 3pm", "<digits>")
	f.Add("|;<>*+=()[]{}/\\\"", "#JSGF")
	f.Fuzz(func(t *testing.T, a, b string) {
		g, _ := buildGrammar([]string{a, b}, func(string) bool { return true })
		// Only JSGF syntax of our own, words of a–z and apostrophes.
		body := strings.TrimPrefix(g, "#JSGF V1.0;\ngrammar hints;\npublic <answer> = ")
		if rest, ok := strings.CutPrefix(body, "<filler>* ("); ok {
			body = strings.Replace(rest, ") <filler>*", "", 1)
		}
		for _, r := range body {
			ok := r >= 'a' && r <= 'z' || strings.ContainsRune("' |;\n<>+=", r)
			if !ok {
				t.Fatalf("buildGrammar(%q, %q) let %q into the grammar:\n%s", a, b, r, g)
			}
		}
	})
}

func TestNumberWords(t *testing.T) {
	for in, want := range map[string]string{
		"0": "zero", "9": "nine", "10": "ten", "15": "fifteen", "20": "twenty",
		"42": "forty two", "99": "ninety nine", "100": "one zero zero", "05": "zero five",
	} {
		if got := strings.Join(numberWords(in), " "); got != want {
			t.Errorf("numberWords(%q) = %q, want %q", in, got, want)
		}
	}
}
