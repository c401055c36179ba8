package analysis

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// token is one word of a text: as written, and lower-cased with typographic
// apostrophes folded to ASCII so lexicon look-ups need one spelling.
type token struct {
	raw, low string
	// boundary marks punctuation that ends a clause (. , ; : ! ? and line
	// breaks); its raw and low are empty. It stops negation scopes.
	boundary bool
	// strong marks a boundary that ends a sentence (. ! ? … line break).
	strong bool
}

// tokenize splits text into words (letters, digits and inner apostrophes)
// and clause boundaries. Hyphens and slashes split words.
func tokenize(text string) []token {
	var out []token
	var b strings.Builder
	flush := func() {
		w := strings.Trim(b.String(), "'")
		b.Reset()
		if w != "" {
			out = append(out, token{raw: w, low: strings.ToLower(w)})
		}
	}
	for _, r := range text {
		switch {
		case r == '\u2019' || r == '\u2018' || r == '\'':
			b.WriteByte('\'')
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		case strings.ContainsRune(".,;:!?\n\u2026", r):
			flush()
			strong := !strings.ContainsRune(",;:", r)
			if n := len(out); n > 0 && out[n-1].boundary {
				out[n-1].strong = out[n-1].strong || strong
			} else if n > 0 {
				out = append(out, token{boundary: true, strong: strong})
			}
		default:
			flush()
		}
	}
	flush()
	return out
}

// words is the lower-cased words of text, without boundaries.
func words(text string) []string {
	var out []string
	for _, t := range tokenize(text) {
		if !t.boundary {
			out = append(out, t.low)
		}
	}
	return out
}

// abbreviations end with a full stop that does not end a sentence.
var abbreviations = set("mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "approx", "apt", "dept", "inc", "ltd", "co", "e.g", "i.e")

// splitSentences cuts text into sentences at line breaks, at ! and ?, and at
// a full stop followed by a space and a capital or digit (so "3.5", "p.m. on"
// and "Dr. Smith" stay whole). Transcribed speech often has no punctuation;
// then a turn is one sentence.
func splitSentences(text string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		if s := strings.TrimSpace(text[start:end]); s != "" {
			out = append(out, s)
		}
		start = end
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch r {
		case '\n', '\r':
			emit(i)
			i += size
			start = i
			continue
		case '.', '!', '?', '\u2026':
			j := i
			strong := false
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !strings.ContainsRune(".!?\u2026\"')]\u201d\u2019", r2) {
					break
				}
				if r2 == '!' || r2 == '?' {
					strong = true
				}
				j += s2
			}
			if j < len(text) {
				next, _ := utf8.DecodeRuneInString(text[j:])
				if !unicode.IsSpace(next) {
					i = j
					continue
				}
			}
			if !strong && j < len(text) {
				rest := strings.TrimLeftFunc(text[j:], unicode.IsSpace)
				first, _ := utf8.DecodeRuneInString(rest)
				if rest != "" && (unicode.IsLower(first) || abbreviations[lastWord(text[start:i])]) {
					i = j
					continue
				}
			}
			emit(j)
			i = j
			continue
		}
		i += size
	}
	emit(len(text))
	return out
}

// lastWord is the lower-cased last whitespace-separated word of s, without
// trailing full stops ("Dr" of "ask Dr").
func lastWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return strings.ToLower(strings.Trim(f[len(f)-1], ".\"'("))
}

func set(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}
