package flow

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxAnswerBytes bounds the work one answer can cause; transcribed speech is
// far shorter, so only abuse is cut.
const maxAnswerBytes = 2000

// clip cuts s to maxAnswerBytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxAnswerBytes {
		return s
	}
	i := maxAnswerBytes
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// tokenize lowercases s and splits it into the words and numbers the matchers
// read. Letters and digits never share a token ("3pm" is "3", "pm"; "1st" is
// "1", "st"), so the parsers see suffixes as words. Within digits, '.', ',',
// ':', '/' and '-' are kept ("3.5", "1,200", "15:30", "12/01", "2026-12-01");
// a '-' right before a digit at the start of a token is a sign. Apostrophes
// (straight or curly) stay inside words ("that's", "o'clock"). Everything else
// separates tokens.
func tokenize(s string) []string {
	rs := []rune(strings.ToLower(clip(s)))
	var toks []string
	var cur []rune
	const (
		none = iota
		word
		num
	)
	kind := none
	flush := func() {
		if len(cur) > 0 {
			toks = append(toks, string(cur))
			cur = cur[:0]
		}
		kind = none
	}
	isDigit := func(r rune) bool { return r >= '0' && r <= '9' }
	at := func(i int) rune {
		if i < 0 || i >= len(rs) {
			return 0
		}
		return rs[i]
	}
	for i, r := range rs {
		switch {
		case isDigit(r):
			if kind == word {
				flush()
			}
			cur = append(cur, r)
			kind = num
		case unicode.IsLetter(r):
			if kind == num {
				flush()
			}
			cur = append(cur, r)
			kind = word
		case r == '\'' || r == '’' || r == '‘':
			if kind == word && unicode.IsLetter(at(i+1)) {
				cur = append(cur, '\'')
			} else {
				flush()
			}
		case strings.ContainsRune(".,:/-", r) && kind == num && isDigit(at(i-1)) && isDigit(at(i+1)):
			cur = append(cur, r)
		case r == '-' && kind == none && isDigit(at(i+1)) &&
			!unicode.IsLetter(at(i-1)) && !isDigit(at(i-1)):
			cur = append(cur, r)
			kind = num
		default:
			flush()
		}
	}
	flush()
	return toks
}

// phraseAt reports whether the words of phrase (space-separated) appear in
// toks starting at i.
func phraseAt(toks []string, i int, phrase []string) bool {
	if i+len(phrase) > len(toks) {
		return false
	}
	for k, w := range phrase {
		if toks[i+k] != w {
			return false
		}
	}
	return true
}

// phrases splits each phrase into its words once, at start-up.
func phrases(ps ...string) [][]string {
	out := make([][]string, len(ps))
	for i, p := range ps {
		out[i] = strings.Fields(p)
	}
	return out
}
