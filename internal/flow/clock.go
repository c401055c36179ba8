package flow

import (
	"regexp"
)

// ParseTime finds the first time of day in s and returns it on the 24-hour
// clock. It understands "3pm", "3 p.m.", "3:30 pm", "15:00", "noon",
// "midnight", "half past three", "quarter to five", "ten past six", "three
// thirty", "seven o'clock", "nine in the morning" and "at 4". A 12-hour time
// said without am, pm or a part of the day is read as a business hour: 1 to 6
// are afternoon (13:00–18:59), 7 to 11 are morning, 12 is noon. Clock digits
// with a leading zero or past 12 ("09:00", "15:30") are 24-hour times as
// written. A bare hour ("3", "three") counts only after "at", "around",
// "about", "by", "say", "from", "after", "before", "until" or as the whole
// answer.
func ParseTime(s string) (hour, minute int, ok bool) {
	t, ok := findTime(tokenize(s), nil)
	return t.hour, t.minute, ok
}

// clock is a time of day found in an answer.
type clock struct {
	hour, minute int
	// explicit says am/pm, a part of the day or a 24-hour form settled the
	// half of the day; otherwise the business-hours rule did.
	explicit bool
}

// half of the day named after a time.
type half int

const (
	halfNone half = iota
	halfAM
	halfPM
	halfNight // "at night", "tonight": 6–11 are evening, 12 is midnight, 1–5 early morning
)

var (
	clockDigitsRE = regexp.MustCompile(`^(\d{1,2}):(\d{2})$`)
	hourDigitsRE  = regexp.MustCompile(`^\d{1,2}$`)
	minDigitsRE   = regexp.MustCompile(`^\d{2}$`)
)

// bareHourCues are the words after which a bare hour is a time ("at 3").
var bareHourCues = map[string]bool{
	"at": true, "around": true, "about": true, "by": true, "say": true,
	"after": true, "before": true, "until": true, "till": true, "til": true,
	"from": true,
}

// findTime returns the leftmost time in toks, skipping tokens in used (the
// tokens a date already took).
func findTime(toks []string, used []bool) (clock, bool) {
	free := 0
	for i := range toks {
		if used == nil || !used[i] {
			free++
		}
	}
	for i := range toks {
		if used != nil && used[i] {
			continue
		}
		if c, ok := timeAt(toks, i, used, free == 1); ok {
			return c, true
		}
	}
	return clock{}, false
}

// timeAt reads a time starting exactly at toks[i]. alone says toks[i] is the
// answer's only (free) token, which lets a bare hour count.
func timeAt(toks []string, i int, used []bool, alone bool) (clock, bool) {
	// The words a time may take must not reach into a date's tokens.
	if used != nil {
		for k := i; k < len(toks); k++ {
			if used[k] {
				toks = toks[:k]
				break
			}
		}
	}
	switch toks[i] {
	case "noon", "midday":
		return clock{12, 0, true}, true
	case "midnight":
		return clock{0, 0, true}, true
	}
	if c, ok := relativeTimeAt(toks, i); ok {
		return c, true
	}
	if m := clockDigitsRE.FindStringSubmatch(toks[i]); m != nil {
		h, min := atoi(m[1]), atoi(m[2])
		if h > 23 || min > 59 {
			return clock{}, false
		}
		hf, _ := halfAt(toks, i+1)
		if h == 0 || h > 12 || m[1][0] == '0' {
			return clock{h, min, true}, true // 24-hour as written
		}
		return resolve(h, min, hf)
	}
	h, n, ok := hourAt(toks, i)
	if !ok {
		return clock{}, false
	}
	j := i + n
	min, hasMin := 0, false
	if mm, k := minutesAfterHour(toks, j); k > 0 {
		min, hasMin, j = mm, true, j+k
	}
	oclock := false
	if k := oclockAt(toks, j); k > 0 {
		oclock, j = true, j+k
	}
	hf, k := halfAt(toks, j)
	cue := i > 0 && bareHourCues[toks[i-1]]
	if !(hasMin || oclock || k > 0 || cue || alone) {
		return clock{}, false
	}
	if h == 0 || h > 12 {
		if hf != halfNone {
			return clock{}, false // "15 pm"
		}
		return clock{h, min, true}, true
	}
	return resolve(h, min, hf)
}

// relativeTimeAt reads "half past three", "quarter to five", "ten past six",
// "twenty five minutes to seven", "quarter after noon".
func relativeTimeAt(toks []string, i int) (clock, bool) {
	if i > 0 && (toks[i-1] == "from" || toks[i-1] == "between") {
		return clock{}, false // "from three to five" is a range, not 4:57
	}
	var min, n int
	switch {
	case toks[i] == "half":
		min, n = 30, 1
	case toks[i] == "quarter":
		min, n = 15, 1
	case toks[i] == "a" && i+1 < len(toks) && toks[i+1] == "quarter":
		min, n = 15, 2
	default:
		v, used, ok := numberAt(toks, i)
		if !ok || v < 1 || v > 59 || v != float64(int(v)) {
			return clock{}, false
		}
		min, n = int(v), used
		if i+n < len(toks) && (toks[i+n] == "minutes" || toks[i+n] == "minute") {
			n++
		} else if min%5 != 0 {
			return clock{}, false // "three to five" is a range; "ten to five" a time
		}
	}
	j := i + n
	if j >= len(toks) {
		return clock{}, false
	}
	sign := 0
	switch toks[j] {
	case "past", "after":
		sign = 1
	case "to", "till", "til", "before":
		sign = -1
	default:
		return clock{}, false
	}
	j++
	if j >= len(toks) {
		return clock{}, false
	}
	var base clock
	switch toks[j] {
	case "noon", "midday":
		base = clock{12, 0, true}
	case "midnight":
		base = clock{0, 0, true}
		if sign < 0 {
			base.hour = 24
		}
	default:
		h, hn, ok := hourAt(toks, j)
		if !ok || h < 1 || h > 12 {
			return clock{}, false
		}
		k := j + hn
		k += oclockAt(toks, k)
		hf, _ := halfAt(toks, k)
		if base, ok = resolve(h, 0, hf); !ok {
			return clock{}, false
		}
	}
	total := ((base.hour*60+sign*min)%1440 + 1440) % 1440
	return clock{total / 60, total % 60, base.explicit}, true
}

// hourAt reads an hour: digits 0–23 or the words one to twelve.
func hourAt(toks []string, i int) (h, used int, ok bool) {
	if i >= len(toks) {
		return 0, 0, false
	}
	w := toks[i]
	if hourDigitsRE.MatchString(w) {
		h := atoi(w)
		return h, 1, h <= 23
	}
	if c, ok := numberWords[w]; ok && !c.ordinal && c.value >= 1 && c.value <= 12 && c.class != classHundred {
		return int(c.value), 1, true
	}
	return 0, 0, false
}

// minutesAfterHour reads the minutes of "three thirty", "seven oh five",
// "nine forty five", "3 30".
func minutesAfterHour(toks []string, j int) (min, used int) {
	if j >= len(toks) {
		return 0, 0
	}
	w := toks[j]
	if minDigitsRE.MatchString(w) {
		if m := atoi(w); m <= 59 {
			return m, 1
		}
		return 0, 0
	}
	if (w == "oh" || w == "o") && j+1 < len(toks) {
		if d, ok := digitWord(toks[j+1]); ok && d > 0 {
			return d, 2
		}
		return 0, 0
	}
	c, ok := numberWords[w]
	if !ok || c.ordinal {
		return 0, 0
	}
	switch {
	case c.class == classTeen:
		return int(c.value), 1
	case c.class == classTens && c.value <= 50:
		if j+1 < len(toks) {
			if u, ok := numberWords[toks[j+1]]; ok && u.class == classUnit && !u.ordinal && u.value > 0 {
				return int(c.value + u.value), 2
			}
		}
		return int(c.value), 1
	}
	return 0, 0
}

// oclockAt reads "o'clock" (also "oclock", "o clock").
func oclockAt(toks []string, j int) int {
	switch {
	case j < len(toks) && (toks[j] == "o'clock" || toks[j] == "oclock"):
		return 1
	case j+1 < len(toks) && toks[j] == "o" && toks[j+1] == "clock":
		return 2
	}
	return 0
}

var halfPhrases = []struct {
	words []string
	half  half
}{
	{phrases("in the morning")[0], halfAM},
	{phrases("in the afternoon")[0], halfPM},
	{phrases("in the evening")[0], halfPM},
	{phrases("this morning")[0], halfAM},
	{phrases("this afternoon")[0], halfPM},
	{phrases("this evening")[0], halfPM},
	{phrases("at night")[0], halfNight},
	{phrases("a m")[0], halfAM},
	{phrases("p m")[0], halfPM},
	{phrases("am")[0], halfAM},
	{phrases("pm")[0], halfPM},
	{phrases("morning")[0], halfAM},
	{phrases("afternoon")[0], halfPM},
	{phrases("evening")[0], halfPM},
	{phrases("tonight")[0], halfNight},
}

// halfAt reads what settles the half of the day after a time: "am", "p.m.",
// "in the morning", "this evening", "at night".
func halfAt(toks []string, j int) (half, int) {
	for _, p := range halfPhrases {
		if phraseAt(toks, j, p.words) {
			return p.half, len(p.words)
		}
	}
	return halfNone, 0
}

// resolve turns a 12-hour time into a 24-hour one.
func resolve(h, min int, hf half) (clock, bool) {
	if h < 1 || h > 12 || min < 0 || min > 59 {
		return clock{}, false
	}
	switch hf {
	case halfAM:
		return clock{h % 12, min, true}, true
	case halfPM:
		return clock{h%12 + 12, min, true}, true
	case halfNight:
		switch {
		case h == 12:
			return clock{0, min, true}, true
		case h >= 6:
			return clock{h + 12, min, true}, true
		}
		return clock{h, min, true}, true
	}
	if h <= 6 {
		return clock{h + 12, min, false}, true
	}
	return clock{h, min, false}, true
}
