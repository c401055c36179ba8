package flow

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ParseDate finds the first calendar date in s, relative to now seen in loc
// (nil means UTC), and returns its midnight in loc. It understands ISO
// ("2026-12-01"), US month/day ("12/01", "12/1/26", "12/01/2026"), month names
// ("December 1st", "Dec 1", "December the first, 2026", "1st of December",
// "1 December"), a day of this or next month ("the 15th"), "today", "tonight",
// "tomorrow", "the day after tomorrow", weekdays ("Tuesday", "this Friday",
// "next Tuesday": all mean the next such day after today) and offsets ("in 3
// days", "in a week", "in two weeks"). A date without a year is its next
// occurrence on or after today; an explicit year is taken as given, even in
// the past.
func ParseDate(s string, now time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	c, _, _, ok := findDate(tokenize(s), civilOf(now.In(loc)))
	if !ok {
		return time.Time{}, false
	}
	return time.Date(c.y, c.m, c.d, 0, 0, 0, 0, loc), true
}

// civil is a calendar date with no zone.
type civil struct {
	y int
	m time.Month
	d int
}

func civilOf(t time.Time) civil { return civil{t.Year(), t.Month(), t.Day()} }

// makeCivil returns the date y-m-d if it exists on the calendar.
func makeCivil(y int, m time.Month, d int) (civil, bool) {
	if y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31 {
		return civil{}, false
	}
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return civil{y, m, d}, t.Month() == m && t.Day() == d
}

func (c civil) utc() time.Time { return time.Date(c.y, c.m, c.d, 0, 0, 0, 0, time.UTC) }

func (c civil) addDays(n int) civil { return civilOf(c.utc().AddDate(0, 0, n)) }

func (c civil) before(o civil) bool { return c.utc().Before(o.utc()) }

// iso is the date as the variables hold it: "2026-12-01".
func (c civil) iso() string { return c.utc().Format(time.DateOnly) }

// findDate returns the leftmost date in toks and the tokens it spans.
func findDate(toks []string, today civil) (c civil, start, end int, ok bool) {
	for i := range toks {
		if c, n, ok := dateAt(toks, i, today); ok {
			return c, i, i + n, true
		}
	}
	return civil{}, 0, 0, false
}

var (
	isoDateRE   = regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})$`)
	slashDateRE = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?$`)
	dayDigitsRE = regexp.MustCompile(`^\d{1,2}$`)
	yearRE      = regexp.MustCompile(`^\d{4}$`)
)

var months = map[string]time.Month{
	"january": time.January, "jan": time.January,
	"february": time.February, "feb": time.February,
	"march": time.March, "mar": time.March,
	"april": time.April, "apr": time.April,
	"may":  time.May,
	"june": time.June, "jun": time.June,
	"july": time.July, "jul": time.July,
	"august": time.August, "aug": time.August,
	"september": time.September, "sep": time.September, "sept": time.September,
	"october": time.October, "oct": time.October,
	"november": time.November, "nov": time.November,
	"december": time.December, "dec": time.December,
}

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
	"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday,
	"saturday": time.Saturday,
}

var dayAfterTomorrow = phrases("day after tomorrow")[0]

// DateAnswers are the spoken dates an ask with a date branch expects
// (Runner.Expected): the relative ones first, then each month with each
// ordinal day ("december third"), all in words, so that a recognizer that
// takes hints as its grammar (the local one) hears a day ParseDate
// understands. Cloud recognizers take the first few as boosted terms.
var DateAnswers = dateAnswers()

func dateAnswers() []string {
	out := []string{"today", "tomorrow", "the day after tomorrow"}
	days := []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
	for _, prefix := range []string{"", "next ", "this "} {
		for _, d := range days {
			out = append(out, prefix+d)
		}
	}
	units := []string{"first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"}
	ordinals := append(append([]string{}, units...), "tenth", "eleventh", "twelfth", "thirteenth", "fourteenth",
		"fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth", "twentieth")
	for _, u := range units {
		ordinals = append(ordinals, "twenty "+u)
	}
	ordinals = append(ordinals, "thirtieth", "thirty first")
	for m := time.January; m <= time.December; m++ {
		days := time.Date(2028, m+1, 0, 0, 0, 0, 0, time.UTC).Day() // a leap year: February 29th too
		for _, o := range ordinals[:days] {
			out = append(out, strings.ToLower(m.String())+" "+o)
		}
	}
	return out
}

// dateAt reads a date starting exactly at toks[i].
func dateAt(toks []string, i int, today civil) (civil, int, bool) {
	w := toks[i]
	switch {
	case w == "today" || w == "tonight":
		return today, 1, true
	case w == "tomorrow":
		return today.addDays(1), 1, true
	case phraseAt(toks, i, dayAfterTomorrow):
		return today.addDays(2), 3, true
	case w == "in":
		return offsetAt(toks, i, today)
	}
	if wd, ok := weekdays[w]; ok {
		delta := (int(wd) - int(today.utc().Weekday()) + 7) % 7
		if delta == 0 {
			delta = 7
		}
		return today.addDays(delta), 1, true
	}
	if m := isoDateRE.FindStringSubmatch(w); m != nil {
		c, ok := makeCivil(atoi(m[1]), time.Month(atoi(m[2])), atoi(m[3]))
		return c, 1, ok
	}
	if m := slashDateRE.FindStringSubmatch(w); m != nil {
		month, day := time.Month(atoi(m[1])), atoi(m[2])
		if m[3] == "" {
			c, ok := nextMonthDay(today, month, day)
			return c, 1, ok
		}
		y := atoi(m[3])
		if len(m[3]) == 2 {
			y += 2000
		}
		c, ok := makeCivil(y, month, day)
		return c, 1, ok
	}
	if month, ok := months[w]; ok { // "December 1st", "Dec the first, 2026"
		j := i + 1
		if j < len(toks) && toks[j] == "the" {
			j++
		}
		day, n, _ := dayAt(toks, j)
		if n == 0 {
			return civil{}, 0, false
		}
		return withYear(toks, j+n, i, today, month, day)
	}
	j := i // "1st of December", "the first of December", "1 Dec", "the 15th"
	if w == "the" {
		j++
	}
	day, n, ordinal := dayAt(toks, j)
	if n == 0 {
		return civil{}, 0, false
	}
	k := j + n
	if k < len(toks) && toks[k] == "of" {
		k++
	}
	if k < len(toks) {
		if month, ok := months[toks[k]]; ok {
			return withYear(toks, k+1, i, today, month, day)
		}
	}
	if w == "the" && ordinal {
		c, ok := nextMonthDay(today, 0, day)
		return c, j + n - i, ok
	}
	return civil{}, 0, false
}

// withYear finishes a month-and-day date whose words end before toks[k],
// taking a year there if one is said ("December 1st 2026").
func withYear(toks []string, k, start int, today civil, month time.Month, day int) (civil, int, bool) {
	if y, n := yearAt(toks, k); n > 0 {
		c, ok := makeCivil(y, month, day)
		return c, k + n - start, ok
	}
	c, ok := nextMonthDay(today, month, day)
	return c, k - start, ok
}

// offsetAt reads "in 3 days", "in a week", "in two weeks".
func offsetAt(toks []string, i int, today civil) (civil, int, bool) {
	j := i + 1
	if j >= len(toks) {
		return civil{}, 0, false
	}
	count, n := 0.0, 0
	switch toks[j] {
	case "a", "an", "one":
		count, n = 1, 1
	default:
		v, used, ok := numberAt(toks, j)
		if !ok {
			return civil{}, 0, false
		}
		count, n = v, used
	}
	if count < 0 || count > 3660 || count != float64(int(count)) || j+n >= len(toks) {
		return civil{}, 0, false
	}
	days := int(count)
	switch toks[j+n] {
	case "day", "days":
	case "week", "weeks":
		days *= 7
	default:
		return civil{}, 0, false
	}
	return today.addDays(days), j + n + 1 - i, true
}

// dayAt reads a day of the month, 1 to 31: "1", "1st", "first",
// "twenty first", "fifteen". ordinal says whether it was said as one.
func dayAt(toks []string, j int) (day, used int, ordinal bool) {
	if j >= len(toks) {
		return 0, 0, false
	}
	if dayDigitsRE.MatchString(toks[j]) {
		d := atoi(toks[j])
		if d < 1 || d > 31 {
			return 0, 0, false
		}
		if j+1 < len(toks) {
			switch toks[j+1] {
			case "st", "nd", "rd", "th":
				return d, 2, true
			}
		}
		return d, 1, false
	}
	v, n, ord := wordNumber(toks, j, true)
	if n == 0 || v < 1 || v > 31 {
		return 0, 0, false
	}
	return int(v), n, ord
}

// yearAt reads a year from 1900 to 2199 in digits or words.
func yearAt(toks []string, k int) (year, used int) {
	if k >= len(toks) {
		return 0, 0
	}
	if yearRE.MatchString(toks[k]) {
		if y := atoi(toks[k]); y >= 1900 && y <= 2199 {
			return y, 1
		}
		return 0, 0
	}
	v, n, ord := wordNumber(toks, k, false)
	if n == 0 || ord || v < 1900 || v > 2199 {
		return 0, 0
	}
	return int(v), n
}

// nextMonthDay is the first date on or after today with this month and day;
// month 0 means any month (a day of the month said alone).
func nextMonthDay(today civil, month time.Month, day int) (civil, bool) {
	if month == 0 {
		for k := 0; k <= 12; k++ {
			first := civil{today.y, today.m, 1}.utc().AddDate(0, k, 0)
			if c, ok := makeCivil(first.Year(), first.Month(), day); ok && !c.before(today) {
				return c, true
			}
		}
		return civil{}, false
	}
	for y := today.y; y <= today.y+8; y++ {
		if c, ok := makeCivil(y, month, day); ok && !c.before(today) {
			return c, true
		}
	}
	return civil{}, false
}

// atoi converts digits the regular expressions already checked.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
