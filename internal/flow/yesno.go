package flow

import "sort"

// ParseYesNo reads a yes or a no in s. "No" wins: an answer with any negative
// word or phrase is a no ("no, not that", "yes… no wait", "absolutely not",
// "that's not right"), one with only positive ones is a yes ("yeah", "sure",
// "that's right", "of course", "okay"). Phrases that are neither ("I'm not
// sure", "I don't know", "maybe") are skipped, and ok is false when nothing
// else is said.
func ParseYesNo(s string) (value, ok bool) {
	toks := tokenize(s)
	yes, no := false, false
	for i := 0; i < len(toks); {
		p, n := polarityAt(toks, i)
		switch {
		case n == 0:
			i++
			continue
		case p > 0:
			yes = true
		case p < 0:
			no = true
		}
		i += n
	}
	if no {
		return false, true
	}
	return yes, yes
}

// Yes/no lexicon. At each word the longest phrase wins, so "not sure" is
// neutral although "sure" is a yes and "not" a no.
var (
	yesPhrases = phrases("yes", "yeah", "yea", "ya", "yep", "yup", "yes please",
		"sure", "sure thing", "correct", "right", "that's right", "that is right",
		"absolutely", "of course", "ok", "okay", "alright", "all right",
		"definitely", "exactly", "certainly", "affirmative", "indeed", "fine",
		"perfect", "sounds good", "that works", "go ahead", "please do",
		"uh huh", "mm hmm", "i think so", "why not", "no problem", "no worries",
		"no doubt", "don't mind", "i do")
	noPhrases = phrases("no", "nope", "nah", "not really", "wrong", "incorrect",
		"negative", "no way", "not at all", "not quite", "never", "not",
		"don't", "do not", "doesn't", "does not", "isn't", "is not", "wasn't",
		"didn't", "did not", "no thanks", "no thank you", "i don't think so")
	neutralPhrases = phrases("not sure", "i'm not sure", "don't know",
		"i don't know", "do not know", "no idea", "maybe", "perhaps",
		"doesn't matter", "not certain", "no clue")
)

type polarPhrase struct {
	words    []string
	polarity int
}

// lexicon holds every phrase, longest first, so the first hit is the longest.
var lexicon = func() []polarPhrase {
	var l []polarPhrase
	for _, p := range yesPhrases {
		l = append(l, polarPhrase{p, 1})
	}
	for _, p := range noPhrases {
		l = append(l, polarPhrase{p, -1})
	}
	for _, p := range neutralPhrases {
		l = append(l, polarPhrase{p, 0})
	}
	sort.SliceStable(l, func(i, j int) bool { return len(l[i].words) > len(l[j].words) })
	return l
}()

// polarityAt returns the polarity of the longest phrase at toks[i] and its
// length in tokens (0: no phrase starts here).
func polarityAt(toks []string, i int) (polarity, used int) {
	for _, p := range lexicon {
		if phraseAt(toks, i, p.words) {
			return p.polarity, len(p.words)
		}
	}
	return 0, 0
}
