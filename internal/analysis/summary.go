package analysis

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSentenceRunes bounds one summary sentence; transcribed speech without
// punctuation can make a whole monologue one "sentence".
const maxSentenceRunes = 280

// Weights of what makes a sentence worth keeping. A date outweighs the rest
// because the date of a booking or callback is usually the point of the call.
const (
	weightShared    = 1.0  // per content word said in another turn too
	weightContent   = 0.25 // per content word (up to maxContentWords)
	weightDate      = 2.5
	weightNumber    = 1.5
	weightName      = 1.0
	weightCaller    = 0.25 // the caller's request breaks ties with the assistant's echo of it
	greetingPenalty = 0.5  // "Thanks for calling …", "Hi, this is …": boilerplate
	maxContentWords = 12
)

// Summarize is an extractive summary: the at most n most informative
// sentences, in conversation order, each line prefixed with its speaker
// ("Caller: …", "Assistant: …"); sentences of one turn share a line.
//
// A sentence scores for content words that other turns repeat (what the
// conversation is about), for numbers, dates and names, and a little for
// length. Greetings and filler ("Hi.", "Okay.", "Thank you!") are chosen only
// when the transcript has nothing else. When the caller gave a date, the
// summary keeps a sentence with a date in it.
func Summarize(turns []Turn, n int) string {
	if n <= 0 {
		return ""
	}
	sents := sentencesOf(turns)
	if len(sents) == 0 {
		return ""
	}
	scoreSentences(sents)

	cands := slices.DeleteFunc(slices.Clone(sents), func(s *sentence) bool { return s.filler })
	if len(cands) == 0 {
		cands = slices.Clone(sents)
	}
	slices.SortStableFunc(cands, func(a, b *sentence) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	chosen := cands[:min(n, len(cands))]
	if !slices.ContainsFunc(chosen, func(s *sentence) bool { return s.date }) {
		// cands is best first, so this is the caller's best dated sentence.
		if i := slices.IndexFunc(cands, func(s *sentence) bool { return s.date && s.role == RoleUser }); i >= 0 {
			chosen[len(chosen)-1] = cands[i]
		}
	}
	slices.SortFunc(chosen, func(a, b *sentence) int { return cmp.Compare(a.pos, b.pos) })
	return render(chosen)
}

// sentence is one sentence of the transcript with what Summarize weighs.
type sentence struct {
	pos, turn int // order in the conversation; index of its turn
	role      string
	text      string
	content   []string // distinct content words, lower-cased
	date      bool
	number    bool
	name      bool
	greeting  bool // opens with a greeting or thanks
	filler    bool // nothing but greetings, acknowledgements and stop words
	score     float64
}

func sentencesOf(turns []Turn) []*sentence {
	var out []*sentence
	for ti, t := range turns {
		if t.Role != RoleUser && t.Role != RoleAssistant {
			continue
		}
		for _, text := range splitSentences(t.Text) {
			s := &sentence{pos: len(out), turn: ti, role: t.Role, text: strings.Join(strings.Fields(text), " ")}
			features(s)
			if len(s.content) == 0 && !s.number && !s.date && !s.name && !hasWord(s.text) {
				continue // punctuation only
			}
			out = append(out, s)
		}
	}
	return out
}

func hasWord(s string) bool { return strings.IndexFunc(s, unicode.IsLetter) >= 0 }

// numericDate matches 3/14, 14/03/2026 and 2026-03-14.
var numericDate = regexp.MustCompile(`\b(\d{1,2}/\d{1,2}(/\d{2,4})?|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[.-]\d{1,2}[.-]\d{2,4})\b`)

func features(s *sentence) {
	var ws []token
	for _, t := range tokenize(s.text) {
		if !t.boundary {
			ws = append(ws, t)
		}
	}
	seen := map[string]bool{}
	s.date = numericDate.MatchString(s.text)
	for i, t := range ws {
		w := strings.TrimSuffix(t.low, "'s")
		if isNumber(w) {
			s.number = true
		}
		if isDate(ws, i) {
			s.date = true
		}
		if i > 0 && isName(t) && !monthsAndDays[w] {
			s.name = true
		}
		if i == 0 && greetings[w] {
			s.greeting = true
		}
		if stopWords[w] || fillerWords[w] || seen[w] || (utf8.RuneCountInString(w) < 2 && !isNumber(w)) {
			continue
		}
		seen[w] = true
		s.content = append(s.content, w)
	}
	// "My name is Dana": a name the caller gives usually opens the sentence
	// or follows a verb, so capitalisation alone misses it.
	for i := 0; i+2 < len(ws); i++ {
		if ws[i].low == "name" && ws[i+1].low == "is" && !stopWords[ws[i+2].low] {
			s.name = true
		}
	}
	s.filler = len(s.content) == 0 && !s.number && !s.date && !s.name
}

func scoreSentences(sents []*sentence) {
	// df counts the turns a content word occurs in.
	df := map[string]int{}
	lastTurn := map[string]int{}
	for _, s := range sents {
		for _, w := range s.content {
			if t, ok := lastTurn[w]; !ok || t != s.turn {
				df[w]++
				lastTurn[w] = s.turn
			}
		}
	}
	for _, s := range sents {
		var score float64
		for _, w := range s.content {
			if d := df[w]; d > 1 {
				score += weightShared * (1 + 0.5*float64(min(d-2, 4)))
			}
		}
		score += weightContent * float64(min(len(s.content), maxContentWords))
		if s.date {
			score += weightDate
		}
		if s.number {
			score += weightNumber
		}
		if s.name {
			score += weightName
		}
		if s.role == RoleUser {
			score += weightCaller
		}
		if s.greeting {
			score *= greetingPenalty
		}
		s.score = math.Round(score*1e6) / 1e6
	}
}

func render(chosen []*sentence) string {
	var b strings.Builder
	for i, s := range chosen {
		if i > 0 && chosen[i-1].turn == s.turn {
			b.WriteByte(' ')
		} else {
			if i > 0 {
				b.WriteByte('\n')
			}
			if s.role == RoleUser {
				b.WriteString("Caller: ")
			} else {
				b.WriteString("Assistant: ")
			}
		}
		b.WriteString(clip(s.text, maxSentenceRunes))
	}
	return b.String()
}

// clip shortens s to at most max runes, at a word boundary, marking the cut.
func clip(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	cut, n := 0, 0
	for i := range s {
		if n == max {
			break
		}
		cut = i
		n++
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ,;:") + "…"
}

func isNumber(w string) bool {
	return strings.IndexFunc(w, unicode.IsDigit) >= 0 || numberWords[w]
}

func isName(t token) bool {
	r, _ := utf8.DecodeRuneInString(t.raw)
	if !unicode.IsUpper(r) {
		return false
	}
	switch t.low {
	case "i", "i'm", "i'd", "i'll", "i've", "ok", "okay":
		return false
	}
	w := strings.TrimSuffix(t.low, "'s")
	return !stopWords[w] && !fillerWords[w]
}

// isDate reports whether word i of ws names a day: a weekday, a month, a
// relative day ("tomorrow", "next week"), or an ordinal used as one ("the
// 14th", "March 3rd").
func isDate(ws []token, i int) bool {
	w := ws[i].low
	prev, next := "", ""
	if i > 0 {
		prev = ws[i-1].low
	}
	if i+1 < len(ws) {
		next = ws[i+1].low
	}
	nearNumber := isNumber(prev) || isNumber(next) || isOrdinal(prev) || isOrdinal(next)
	nearMonth := months[prev] || months[next]
	switch {
	case w == "today" && (prev == "you" || prev == "with"):
		return false // "help you today": a pleasantry, not a date
	case weekdays[w], relativeDays[w]:
		return true
	case (w == "week" || w == "month" || w == "weekend") && (prev == "next" || prev == "this" || prev == "last"):
		return true
	case months[w] && w != "may" && w != "march":
		return true
	case w == "may" || w == "march":
		r, _ := utf8.DecodeRuneInString(ws[i].raw)
		return nearNumber || (i > 0 && unicode.IsUpper(r))
	case monthAbbrevs[w]:
		return nearNumber
	case isOrdinal(w):
		if nearMonth || next == "of" {
			return true
		}
		// "on the 14th"; a spelled ordinal needs more ("the first time").
		digits := strings.IndexFunc(w, unicode.IsDigit) >= 0
		return digits && (prev == "the" || prev == "on")
	}
	return false
}

var ordinalDigits = regexp.MustCompile(`^\d{1,2}(st|nd|rd|th)$`)

func isOrdinal(w string) bool { return ordinalWords[w] || ordinalDigits.MatchString(w) }

var (
	weekdays = set("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
		"mondays", "tuesdays", "wednesdays", "thursdays", "fridays", "saturdays", "sundays")
	relativeDays = set("today", "tomorrow", "tonight", "yesterday", "weekend")
	months       = set("january", "february", "march", "april", "may", "june", "july", "august",
		"september", "october", "november", "december")
	monthAbbrevs  = set("jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec")
	monthsAndDays = union(weekdays, months, relativeDays)
	numberWords   = set("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
		"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
		"nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
		"hundred", "thousand", "million", "dozen", "noon", "midnight", "o'clock", "half")
	ordinalWords = set("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
		"ninth", "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
		"seventeenth", "eighteenth", "nineteenth", "twentieth", "thirtieth")
	// greetings open boilerplate sentences ("Thanks for calling Acme").
	greetings = set("hi", "hello", "hey", "hiya", "thanks", "thank", "goodbye", "bye", "welcome", "cheers")
	// fillerWords carry no information on their own; a sentence of only
	// these and stop words is filler.
	fillerWords = set("hi", "hello", "hey", "hiya", "yes", "yeah", "yep", "yup", "ya", "no", "nope", "nah",
		"okay", "ok", "alright", "right", "sure", "fine", "great", "good", "perfect", "cool", "awesome",
		"lovely", "nice", "wonderful", "excellent", "thanks", "thank", "thx", "cheers", "bye", "goodbye",
		"morning", "afternoon", "evening", "day", "welcome", "please", "sorry", "excuse", "pardon", "um",
		"uh", "uhm", "erm", "er", "hmm", "mhm", "mm", "ah", "oh", "well", "gotcha", "absolutely",
		"definitely", "certainly", "course", "appreciate", "appreciated", "sir", "madam", "ma'am",
		"help", "helping", "calling", "call", "assist", "anything", "else", "today", "much", "lot",
		"indeed", "exactly", "correct", "true", "wow", "bit", "moment", "sec", "second")
	stopWords = set("a", "an", "the", "and", "or", "but", "if", "then", "than", "so", "to", "of", "in",
		"on", "at", "by", "for", "with", "about", "from", "into", "over", "after", "before", "under",
		"up", "down", "out", "off", "again", "once", "here", "there", "when", "where", "why", "how",
		"all", "any", "both", "each", "few", "more", "most", "other", "some", "such", "only", "own",
		"same", "too", "very", "can", "will", "would", "should", "could", "might", "must", "shall",
		"do", "does", "did", "done", "doing", "have", "has", "had", "having", "be", "is", "am", "are",
		"was", "were", "been", "being", "i", "me", "my", "mine", "myself", "we", "us", "our", "ours",
		"you", "your", "yours", "yourself", "he", "him", "his", "she", "her", "hers", "it", "its",
		"they", "them", "their", "what", "which", "who", "whom", "this", "that", "these", "those",
		"i'm", "i've", "i'd", "i'll", "you're", "you've", "you'd", "you'll", "he's", "she's", "it's",
		"we're", "we've", "we'll", "we'd", "they're", "they've", "they'll", "that's", "there's",
		"what's", "let's", "here's", "don't", "doesn't", "didn't", "isn't", "aren't", "wasn't",
		"weren't", "won't", "wouldn't", "can't", "couldn't", "shouldn't", "haven't", "hasn't", "not",
		"also", "just", "like", "get", "got", "go", "going", "gonna", "wanna", "want", "need", "know",
		"think", "say", "said", "tell", "let", "make", "see", "look", "come", "take", "give", "put",
		"really", "actually", "maybe", "something", "thing", "things", "way", "one", "much", "many",
		"still", "yet", "now", "back", "im", "ive", "id", "dont", "cant", "wont", "didnt", "doesnt",
		"isnt", "thats", "whats", "theres", "able", "sounds", "sound", "works", "work", "looking",
		"okay", "ok", "yes", "no", "would've", "could've", "via", "per", "every", "through", "while",
		"because", "since", "until", "though", "although", "whether", "either", "neither", "nor")
)

func union(ms ...map[string]bool) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
