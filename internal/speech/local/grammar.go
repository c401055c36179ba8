package local

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// DigitsHint, given as one of TranscribeOptions.Hints, lets the grammar
// accept a spoken digit string ("four one five five"), for account and
// phone numbers.
const DigitsHint = "<digits>"

// yesNoWords are always in a hints grammar: a closed question's options
// are rarely all the caller may say. Only the two words: with "yeah" and
// "nope" as alternatives, espeak's "yes" over μ-law came back "yeah"
// (deps.md saw the same), while without them a caller's "yeah" is heard
// as "yes", which is what the flow wants to know. "oh" for zero is left
// out of the digits for the same reason ("no" became "oh").
var yesNoWords = []string{"yes", "no"}

var digitWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// buildGrammar compiles hints to a JSGF grammar that accepts one of the
// phrases or a yes/no word, with filler words around it (fillerWords), or
// (with DigitsHint) a digit string — and then no filler, which would mix
// into the digits ("four want i'd i two").
// Phrases are lowercased and reduced to dictionary words: numbers are
// spelled out, punctuation dropped, and words the dictionary lacks
// (known false) removed; they are returned in skipped so the caller can
// log them. No hints means no grammar: "" selects the language model.
func buildGrammar(hints []string, known func(string) bool) (jsgf string, skipped []string) {
	if len(hints) == 0 {
		return "", nil
	}
	var phrases []string
	digits := false
	add := func(p string) {
		if p != "" && !slices.Contains(phrases, p) {
			phrases = append(phrases, p)
		}
	}
	for _, h := range hints {
		if strings.TrimSpace(h) == DigitsHint {
			digits = true
			continue
		}
		var kept []string
		for _, w := range hintWords(h) {
			if plainWord(w) && known(w) {
				kept = append(kept, w)
			} else if !slices.Contains(skipped, w) {
				skipped = append(skipped, w)
			}
		}
		add(strings.Join(kept, " "))
	}
	for _, w := range yesNoWords {
		add(w)
	}
	var fill []string // not with digits: filler would mix into a digit string
	for _, w := range fillerWords {
		if known(w) && !digits {
			fill = append(fill, w)
		}
	}
	var b strings.Builder
	b.WriteString("#JSGF V1.0;\ngrammar hints;\npublic <answer> = ")
	if len(fill) > 0 {
		b.WriteString("<filler>* (" + strings.Join(phrases, " | ") + ") <filler>*")
	} else {
		b.WriteString(strings.Join(phrases, " | "))
	}
	if digits {
		b.WriteString(" | <digit>+")
	}
	b.WriteString(";\n")
	if digits {
		b.WriteString("<digit> = " + strings.Join(digitWords, " | ") + ";\n")
	}
	if len(fill) > 0 {
		b.WriteString("<filler> = " + strings.Join(fill, " | ") + ";\n")
	}
	return b.String(), skipped
}

// fillerWords may come before and after the expected answer: callers
// rarely say only the answer ("I'd like to come in tomorrow, please").
// With them, the grammar finds the answer inside a sentence instead of
// forcing the whole sentence into an answer ("october twenty fourth" for
// "I would like to book an appointment for tomorrow"). Words of answers
// are left out, so an answer is never taken for filler.
var fillerWords = []string{"i", "i'd", "would", "like", "book", "appointment", "for", "please", "well", "that's",
	"maybe", "want", "need", "okay", "thanks", "thank", "right", "sure", "come", "make", "could", "how", "about"}

// hintWords splits a hint into lowercase words: runs of letters and
// apostrophes; numbers become words ("3pm" is "three pm").
func hintWords(h string) []string {
	var words []string
	var cur strings.Builder
	kind := 0 // 0 none, 1 letters, 2 digits
	flush := func() {
		if cur.Len() == 0 {
			return
		}
		s := cur.String()
		cur.Reset()
		if kind == 2 {
			words = append(words, numberWords(s)...)
			return
		}
		if s = strings.Trim(s, "'"); s != "" {
			words = append(words, s)
		}
	}
	for _, r := range strings.ToLower(h) {
		k := 0
		switch {
		case unicode.IsLetter(r) || r == '\'':
			k = 1
		case r >= '0' && r <= '9':
			k = 2
		}
		if k != kind {
			flush()
			kind = k
		}
		if k != 0 {
			cur.WriteRune(r)
		}
	}
	flush()
	return words
}

// plainWord reports whether w can be a word of the en-us dictionary (and
// so of a JSGF grammar): a–z and apostrophes only.
func plainWord(w string) bool {
	for _, r := range w {
		if (r < 'a' || r > 'z') && r != '\'' {
			return false
		}
	}
	return w != ""
}

var teens = []string{"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
var tens = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}

// numberWords spells a decimal number as it is usually said: up to 99 as
// a number ("twenty one"), longer ones digit by digit ("four one five").
func numberWords(s string) []string {
	n, err := strconv.Atoi(s)
	if err != nil || len(s) > 2 || (len(s) == 2 && s[0] == '0') {
		w := make([]string, 0, len(s))
		for _, c := range s {
			w = append(w, digitWords[c-'0'])
		}
		return w
	}
	switch {
	case n < 10:
		return []string{digitWords[n]}
	case n < 20:
		return []string{teens[n-10]}
	case n%10 == 0:
		return []string{tens[n/10]}
	}
	return []string{tens[n/10], digitWords[n%10]}
}
