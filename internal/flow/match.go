package flow

import (
	"regexp"
	"strings"
	"time"
)

// answer is one caller answer, read once and offered to each branch.
type answer struct {
	text  string   // trimmed and clipped
	toks  []string // tokenize(text)
	today civil    // the caller's today, in the runner's zone
}

func newAnswer(text string, now time.Time, loc *time.Location) *answer {
	text = strings.TrimSpace(clip(text))
	return &answer{text: text, toks: tokenize(text), today: civilOf(now.In(loc))}
}

// valueKind tells the renderer how to speak a variable.
type valueKind int

const (
	plainValue    valueKind = iota
	dateValue               // "2026-12-01", spoken "Tuesday, December 1, 2026"
	timeValue               // "15:04", spoken "3:04 PM"
	dateTimeValue           // "2026-12-01T15:04"
)

// matched is what a matcher found: the value for the branch's capture and,
// for a regex, its named groups.
type matched struct {
	value  any
	kind   valueKind
	groups [][2]string // name, text
}

// matcher is a compiled Match.
type matcher struct {
	Match
	keywords [][]string     // tokenized Any
	re       *regexp.Regexp // nil: the pattern did not compile, never matches
}

func compileMatch(m Match) *matcher {
	c := &matcher{Match: m}
	for _, kw := range m.Any {
		c.keywords = append(c.keywords, tokenize(kw))
	}
	if m.Kind == kindRegex && m.Pattern != "" {
		c.re, _ = compilePattern(m.Pattern, m.CaseSensitive)
	}
	return c
}

// compilePattern compiles a regex matcher's pattern, case-insensitive unless asked.
func compilePattern(pattern string, caseSensitive bool) (*regexp.Regexp, error) {
	if !caseSensitive {
		pattern = "(?i)" + pattern
	}
	return regexp.Compile(pattern)
}

// match reports whether the answer satisfies the matcher, and what it found.
func (m *matcher) match(a *answer) (matched, bool) {
	switch m.Kind {
	case kindKeywords:
		for k, kw := range m.keywords {
			for i := range a.toks {
				if len(kw) > 0 && phraseAt(a.toks, i, kw) {
					return matched{value: m.Any[k]}, true
				}
			}
		}
	case kindRegex:
		if m.re == nil {
			return matched{}, false
		}
		loc := m.re.FindStringSubmatchIndex(a.text)
		if loc == nil {
			return matched{}, false
		}
		r := matched{value: a.text[loc[0]:loc[1]]}
		for g, name := range m.re.SubexpNames() {
			if name != "" && loc[2*g] >= 0 {
				r.groups = append(r.groups, [2]string{name, a.text[loc[2*g]:loc[2*g+1]]})
			}
		}
		return r, true
	case kindYesNo:
		v, ok := ParseYesNo(a.text)
		if ok && (m.Value == nil || *m.Value == v) {
			return matched{value: v}, true
		}
	case kindNumber:
		v, _, _, ok := findNumber(a.toks)
		if ok && (m.Min == nil || v >= *m.Min) && (m.Max == nil || v <= *m.Max) {
			return matched{value: v}, true
		}
	case kindDate:
		if c, _, _, ok := findDate(a.toks, a.today); ok {
			return matched{value: c.iso(), kind: dateValue}, true
		}
	case kindTime:
		if t, ok := findTime(a.toks, nil); ok {
			return matched{value: t.String(), kind: timeValue}, true
		}
	case kindDateTime:
		if s, ok := findDateTime(a.toks, a.today); ok {
			return matched{value: s, kind: dateTimeValue}, true
		}
	case kindAny:
		if a.text != "" {
			return matched{value: a.text}, true
		}
	}
	return matched{}, false
}

// matchKeys reports whether a keypad entry satisfies a dtmf matcher, and
// the value its capture receives: the exact entry for a value, else the
// keys without the terminator that ended them.
func (m *matcher) matchKeys(entry string) (string, bool) {
	if m.Kind != kindDTMF || entry == "" {
		return "", false
	}
	if m.Keys != "" {
		return entry, entry == m.Keys
	}
	digits := entry
	if m.Terminator != "" {
		digits = strings.TrimSuffix(entry, m.Terminator)
	}
	lo, hi := max(m.MinDigits, 1), m.MaxDigits
	if hi == 0 {
		hi = MaxKeys
	}
	return digits, len(digits) >= lo && len(digits) <= hi
}

// extends reports whether a dtmf matcher could match an entry longer than
// keys, so the entry may not be over yet.
func (m *matcher) extends(keys string) bool {
	if m.Keys != "" {
		return len(m.Keys) > len(keys) && strings.HasPrefix(m.Keys, keys)
	}
	if m.Terminator != "" && strings.HasSuffix(keys, m.Terminator) {
		return false
	}
	hi := m.MaxDigits
	if hi == 0 {
		hi = MaxKeys
	}
	return len(keys) < hi
}

// String is the time as the variables hold it: "15:04".
func (c clock) String() string {
	return time.Date(2000, 1, 1, c.hour, c.minute, 0, 0, time.UTC).Format("15:04")
}

// findDateTime finds a date and a time in one answer ("tomorrow at 3pm",
// "3:30 pm on December 1st", "2026-12-01T15:04") and returns them as
// "2026-12-01T15:04". The time is read from the words the date did not take.
func findDateTime(toks []string, today civil) (string, bool) {
	d, start, end, ok := findDate(toks, today)
	if !ok {
		return "", false
	}
	used := make([]bool, len(toks))
	tonight := false
	for i := start; i < end; i++ {
		used[i] = true
		tonight = tonight || toks[i] == "tonight"
	}
	t, ok := findTime(toks, used)
	if !ok {
		return "", false
	}
	if tonight && !t.explicit && t.hour < 12 {
		t.hour += 12 // "tonight at 8" is 20:00
	}
	return d.iso() + "T" + t.String(), true
}
