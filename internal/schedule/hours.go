package schedule

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// CallingHours is when attempts may be dialed, read in a zone (the
// contact's timezone, else the schedule's): from Start (inclusive) to End
// (exclusive), both "HH:MM" wall-clock times of the same day, on Days.
// The zero value (no Start) means any time: schedules stored before
// calling hours existed keep dialing at their due instant.
type CallingHours struct {
	Start string   `json:"start"`
	End   string   `json:"end"`
	Days  []string `json:"days"`
}

// DayNames are the accepted names of Days, Sunday first (time.Weekday's order).
var DayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// DefaultHours are the calling hours of a schedule that names none:
// 08:00 to 21:00 every day.
func DefaultHours() CallingHours {
	return CallingHours{Start: "08:00", End: "21:00", Days: []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}}
}

// AnyTime reports whether h places no limit (the zero value).
func (h CallingHours) AnyTime() bool { return h.Start == "" && h.End == "" }

// FieldError is one invalid field of a setting, named as the API names it
// (callingHours.start, retry.busy.afterMinutes, …).
type FieldError struct {
	Field   string
	Message string
}

// Validate checks h, naming each bad field under prefix (e.g.
// "callingHours."). Start is 00:00–23:59, End 00:01–24:00 ("24:00" is the
// end of the day) and after Start: a window does not cross midnight (split
// such a window's nights into the days after, e.g. 18:00–24:00 and a
// second schedule for 00:00–02:00). Days holds at least one day, each
// once.
func (h CallingHours) Validate(prefix string) []FieldError {
	var errs []FieldError
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: prefix + field, Message: fmt.Sprintf(format, args...)})
	}
	start, okS := parseHM(h.Start, false)
	if !okS {
		add("start", `must be a time of day "HH:MM" from 00:00 to 23:59, e.g. "08:00"`)
	}
	end, okE := parseHM(h.End, true)
	if !okE {
		add("end", `must be a time of day "HH:MM" from 00:01 to 24:00, e.g. "21:00"`)
	}
	if okS && okE && end <= start {
		add("end", "must be after start (%s): a window may not cross midnight", h.Start)
	}
	if len(h.Days) == 0 {
		add("days", "must name at least one day (%s)", fmt.Sprint(DayNames))
	}
	seen := map[string]bool{}
	for i, d := range h.Days {
		switch {
		case !slices.Contains(DayNames, d):
			add(fmt.Sprintf("days[%d]", i), "must be one of sun, mon, tue, wed, thu, fri, sat")
		case seen[d]:
			add(fmt.Sprintf("days[%d]", i), "repeats %s", d)
		}
		seen[d] = true
	}
	return errs
}

// parseHM reads "HH:MM" as minutes after midnight; allow24 accepts
// "24:00" (the end of the day).
func parseHM(s string, allow24 bool) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	hh, err1 := strconv.Atoi(s[:2])
	mm, err2 := strconv.Atoi(s[3:])
	if err1 != nil || err2 != nil || s[0] == '+' || s[3] == '+' || s[0] == '-' || s[3] == '-' || mm < 0 || mm > 59 || hh < 0 {
		return 0, false
	}
	if hh == 24 && mm == 0 && allow24 {
		return 24 * 60, true
	}
	if hh > 23 {
		return 0, false
	}
	return hh*60 + mm, true
}

// allows reports whether the window is open on weekday d.
func (h CallingHours) allows(d time.Weekday) bool { return slices.Contains(h.Days, DayNames[d]) }

// NextOpening is the first instant at or after t inside h, read in loc.
// It works on wall-clock dates in loc, never on a fixed offset, so the
// days a zone changes its offset are right:
//
//   - a Start or End that falls in a skipped hour (spring forward) is the
//     first instant after the gap (the wall clock's first reading past it);
//   - a Start or End in a repeated hour (fall back) is its first
//     occurrence, and the window is the one interval between them: the
//     repeated hour counts once.
//
// Each allowed local date's window is [instant(date, Start),
// instant(date, End)), where instant is the earliest instant whose wall
// clock on that date reads at least that time. An h that is AnyTime, or
// has no valid day, returns t.
func NextOpening(t time.Time, loc *time.Location, h CallingHours) time.Time {
	if h.AnyTime() {
		return t
	}
	start, ok1 := parseHM(h.Start, false)
	end, ok2 := parseHM(h.End, true)
	if !ok1 || !ok2 || end <= start {
		return t
	}
	y, m, d := t.In(loc).Date()
	for i := range 8 {
		day := time.Date(y, m, d+i, 0, 0, 0, 0, time.UTC) // a calendar date, normalized
		if !h.allows(day.Weekday()) {
			continue
		}
		closes := wallInstant(day, end, loc)
		if !t.Before(closes) {
			continue
		}
		opens := wallInstant(day, start, loc)
		switch {
		case !opens.Before(closes):
			continue // the whole window was skipped (spring forward)
		case t.Before(opens):
			return opens
		}
		return t
	}
	return t // no allowed day (Validate refuses that)
}

// Inside reports whether t is inside h read in loc.
func Inside(t time.Time, loc *time.Location, h CallingHours) bool {
	return NextOpening(t, loc, h).Equal(t)
}

// wallInstant is the earliest instant whose wall clock in loc, on the
// calendar date of day (a UTC midnight), reads at least minute (minutes
// after midnight; 24*60 is the next date's midnight).
func wallInstant(day time.Time, minute int, loc *time.Location) time.Time {
	want := day.Add(time.Duration(minute) * time.Minute) // the wall clock wanted, written as UTC
	// The instant reading want under offset off is want-off. Try every
	// offset the zone uses within a day of it; the earliest that really
	// reads want is the answer (two do in a repeated hour).
	var offs []int
	for _, probe := range []time.Duration{-26 * time.Hour, 0, 26 * time.Hour} {
		_, off := want.Add(probe).In(loc).Zone()
		if !slices.Contains(offs, off) {
			offs = append(offs, off)
		}
	}
	var best time.Time
	for _, off := range offs {
		u := want.Add(-time.Duration(off) * time.Second)
		if wallOf(u, loc).Equal(want) && (best.IsZero() || u.Before(best)) {
			best = u
		}
	}
	if !best.IsZero() {
		return best
	}
	// want was skipped (spring forward): the first instant whose wall
	// clock reads past it. The wall clock only moves forward across a gap,
	// so search between the instants want reads under the zone's offsets.
	lo, hi := want.Add(-time.Duration(slices.Max(offs))*time.Second), want.Add(-time.Duration(slices.Min(offs))*time.Second)
	if lo.After(hi) {
		lo, hi = hi, lo
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if wallOf(mid, loc).Before(want) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// wallOf is u's wall clock in loc, written as a UTC time.
func wallOf(u time.Time, loc *time.Location) time.Time {
	l := u.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}
