package analysis

import (
	"math"
	"strings"
)

// normAlpha is VADER's normalisation constant: s/sqrt(s²+normAlpha) maps a
// valence sum s into -1..1, reaching ±0.5 at |s| ≈ 2.2.
const normAlpha = 15

// labelThreshold is the distance from zero a score needs to count as
// positive or negative.
const labelThreshold = 0.05

// Weights of the clauses around "but": what follows it is what the speaker
// means ("it was slow but they fixed it").
const (
	beforeBut = 0.5
	afterBut  = 1.5
)

// Score is the lexicon sentiment of the caller's words. Only user turns
// count: an assistant thanks and apologises whatever happens, so its words
// would make every call look positive. A transcript where the caller says
// nothing scored is neutral with score 0.
func Score(turns []Turn) Sentiment {
	var sum float64
	for _, t := range turns {
		if t.Role == RoleUser {
			sum += valence(tokenize(t.Text))
		}
	}
	return sentimentOf(sum)
}

// sentimentOf normalises a valence sum and labels it.
func sentimentOf(sum float64) Sentiment {
	score := sum / math.Sqrt(sum*sum+normAlpha)
	score = math.Round(score*1e4) / 1e4
	switch {
	case score >= labelThreshold:
		return Sentiment{Label: Positive, Score: score}
	case score <= -labelThreshold:
		return Sentiment{Label: Negative, Score: score}
	default:
		return Sentiment{Label: Neutral, Score: score + 0} // + 0 turns -0 into 0
	}
}

// valence is the sum of the lexicon entries in toks, with intensifiers,
// negation and the "but" rule applied.
func valence(toks []token) float64 {
	var (
		total      float64
		before     float64 // this sentence, up to its last "but"
		acc        float64 // this sentence, since its start or last "but"
		sawBut     bool
		negLeft    int   // words left in the current negation scope
		boost      = 1.0 // pending intensifier factor
		boostLeft  int   // words the pending factor still reaches
		endClause  = func() { negLeft, boost, boostLeft = 0, 1, 0 }
		endOfWords = func(n int) {
			negLeft = max(negLeft-n, 0)
			if boostLeft -= n; boostLeft <= 0 {
				boost, boostLeft = 1, 0
			}
		}
		endSentence = func() {
			if sawBut {
				total += beforeBut*before + afterBut*acc
			} else {
				total += acc
			}
			before, acc, sawBut = 0, 0, false
		}
	)
	for i := 0; i < len(toks); {
		t := toks[i]
		if t.boundary {
			endClause()
			if t.strong {
				endSentence()
			}
			i++
			continue
		}
		if v, n := longest(toks, i, lexicon); n > 0 {
			s := float64(v) * boost
			if negLeft > 0 {
				s *= negatorScale
			}
			acc += s
			boost, boostLeft = 1, 0
			endOfWords(n)
			i += n
			continue
		}
		if f, n := longest(toks, i, intensifiers); n > 0 {
			negLeft = max(negLeft-n, 0)
			if boostLeft == 0 {
				boost = 1
			}
			boost, boostLeft = boost*f, 2
			i += n
			continue
		}
		switch w := t.low; {
		case w == "but" || w == "however":
			before += acc
			acc, sawBut = 0, true
			endClause()
		case isNegator(toks, i):
			endClause()
			negLeft = negationScope
		default:
			endOfWords(1)
		}
		i++
	}
	endSentence()
	return total
}

// isNegator reports whether word i of toks negates what follows.
func isNegator(toks []token, i int) bool {
	w := toks[i].low
	if w == "no" {
		return i+1 < len(toks) && !toks[i+1].boundary && !notNegatedAfterNo[toks[i+1].low]
	}
	return negators[w] || strings.HasSuffix(w, "n't")
}

// maxPhraseWords is the number of words in the longest lexicon or
// intensifier phrase.
var maxPhraseWords = func() int {
	n := 1
	for _, m := range []map[string]bool{keysOf(lexicon), keysOf(intensifiers)} {
		for k := range m {
			n = max(n, strings.Count(k, " ")+1)
		}
	}
	return n
}()

// longest finds the longest entry of m that the words from i spell, and
// how many words it spans (0 when none does).
func longest[V any](toks []token, i int, m map[string]V) (V, int) {
	var zero V
	end := i
	for end < len(toks) && end-i < maxPhraseWords && !toks[end].boundary {
		end++
	}
	for n := end - i; n >= 1; n-- {
		var key string
		if n == 1 {
			key = toks[i].low
		} else {
			parts := make([]string, n)
			for k := range n {
				parts[k] = toks[i+k].low
			}
			key = strings.Join(parts, " ")
		}
		if v, ok := m[key]; ok {
			return v, n
		}
	}
	return zero, 0
}

func keysOf[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
