package flow

import (
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the tests' zone must not depend on the machine's
)

// newYork is the zone of the tests' caller.
var newYork = func() *time.Location {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		panic(err)
	}
	return loc
}()

// tuesday is the tests' fixed clock: Tuesday, November 24, 2026, 10:00 in New York.
var tuesday = time.Date(2026, 11, 24, 10, 0, 0, 0, newYork)

func TestParseDate(t *testing.T) {
	tests := []struct {
		in   string
		want string // "2006-01-02"; "" when no date
	}{
		// Relative days.
		{"today", "2026-11-24"},
		{"tonight", "2026-11-24"},
		{"tomorrow", "2026-11-25"},
		{"how about tomorrow morning?", "2026-11-25"},
		{"day after tomorrow", "2026-11-26"},
		{"the day after tomorrow please", "2026-11-26"},
		{"in 3 days", "2026-11-27"},
		{"in three days", "2026-11-27"},
		{"in a day", "2026-11-25"},
		{"in a week", "2026-12-01"},
		{"in 2 weeks", "2026-12-08"},
		// Weekdays: the next one after today, whatever the qualifier.
		{"Tuesday", "2026-12-01"},
		{"next Tuesday", "2026-12-01"},
		{"this Tuesday", "2026-12-01"},
		{"Wednesday", "2026-11-25"},
		{"this Friday", "2026-11-27"},
		{"on Monday please", "2026-11-30"},
		{"next sunday", "2026-11-29"},
		// Digits.
		{"2026-12-01", "2026-12-01"},
		{"2025-01-15", "2025-01-15"}, // an explicit year is taken as given
		{"12/01", "2026-12-01"},
		{"12/1", "2026-12-01"},
		{"12/01/2026", "2026-12-01"},
		{"12/1/26", "2026-12-01"},
		{"11/24", "2026-11-24"}, // today counts
		{"11/20", "2027-11-20"}, // already past this year
		{"2/29", "2028-02-29"},
		// Month names.
		{"December 1st", "2026-12-01"},
		{"december first", "2026-12-01"},
		{"Dec 1", "2026-12-01"},
		{"Dec. 1", "2026-12-01"},
		{"December the 1st", "2026-12-01"},
		{"December twenty first", "2026-12-21"},
		{"December 21st, 2027", "2027-12-21"},
		{"december the twenty-first two thousand twenty seven", "2027-12-21"},
		{"1st of December", "2026-12-01"},
		{"the first of December", "2026-12-01"},
		{"1 December 2027", "2027-12-01"},
		{"3 jan", "2027-01-03"},
		{"May I come on June 3rd?", "2027-06-03"},
		{"march 5", "2027-03-05"},
		// A day of the month alone.
		{"the 15th", "2026-12-15"},
		{"on the 24th", "2026-11-24"},
		{"the 30th", "2026-11-30"},
		{"the 31st", "2026-12-31"}, // November has 30 days
		{"the twenty fifth", "2026-11-25"},
		// Not dates.
		{"", ""},
		{"whenever", ""},
		{"may I", ""},
		{"I have 3 kids", ""},
		{"in 3 hours", ""},
		{"February 30th", ""},
		{"2/30", ""},
		{"13/01", ""}, // US month/day only
		{"2026-13-01", ""},
		{"yesterday", ""},
		{"next week", ""},
		{"the 15", ""}, // a day alone must be an ordinal
		{"December", ""},
	}
	for _, tt := range tests {
		got, ok := ParseDate(tt.in, tuesday, newYork)
		if tt.want == "" {
			if ok {
				t.Errorf("ParseDate(%q) = %s, true; want no date", tt.in, got.Format(time.DateOnly))
			}
			continue
		}
		if !ok || got.Format(time.DateOnly) != tt.want {
			t.Errorf("ParseDate(%q) = %s, %v; want %s", tt.in, got.Format(time.DateOnly), ok, tt.want)
			continue
		}
		if got.Location() != newYork || got.Hour() != 0 || got.Minute() != 0 {
			t.Errorf("ParseDate(%q) = %s; want midnight in %s", tt.in, got, newYork)
		}
	}
}

// TestParseDateZone checks that "today" is the caller's today: late on
// Tuesday evening in New York it is already Wednesday in UTC.
func TestParseDateZone(t *testing.T) {
	now := time.Date(2026, 11, 25, 3, 30, 0, 0, time.UTC) // 22:30 on the 24th in New York
	tests := []struct {
		in   string
		loc  *time.Location
		want time.Time
	}{
		{"tomorrow", newYork, time.Date(2026, 11, 25, 0, 0, 0, 0, newYork)},
		{"tomorrow", time.UTC, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{"tomorrow", nil, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{"today", newYork, time.Date(2026, 11, 24, 0, 0, 0, 0, newYork)},
		{"Wednesday", newYork, time.Date(2026, 11, 25, 0, 0, 0, 0, newYork)},
		{"Wednesday", time.UTC, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		got, ok := ParseDate(tt.in, now, tt.loc)
		if !ok || !got.Equal(tt.want) || got.Location().String() != tt.want.Location().String() {
			t.Errorf("ParseDate(%q, %s, %v) = %s, %v; want %s", tt.in, now, tt.loc, got, ok, tt.want)
		}
	}
}

// TestDateAnswers: every spoken date an ask's date branch expects (its
// recognizer's hints) is a date the matcher understands, and there is one
// for every day of every month.
func TestDateAnswers(t *testing.T) {
	now := time.Date(2026, 11, 19, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for _, a := range DateAnswers {
		d, ok := ParseDate(a, now, nil)
		if !ok {
			t.Errorf("ParseDate(%q) found no date; every date hint must parse", a)
			continue
		}
		seen[d.Format("01-02")] = true
	}
	if n := len(seen); n < 366 {
		t.Errorf("date hints cover %d days of the year, want all 366 (and the relative ones)", n)
	}
}

// TestExpectedDates: an ask with a date branch expects the spoken dates
// (its recognizer's grammar), with its other branches' answers.
func TestExpectedDates(t *testing.T) {
	r := mustParse(t, `{"start": "ask", "nodes": {
		"ask": {"type": "ask", "text": "What day would suit you?", "branches": [
			{"match": {"kind": "date"}, "capture": "date", "next": "bye"},
			{"match": {"kind": "keywords", "any": ["cancel"]}, "next": "bye"}]},
		"bye": {"type": "end", "text": "Goodbye."}}}`).NewRunner(nil, nil)
	r.Start()
	if got, want := r.Expected(), append(slices.Clone(DateAnswers), "cancel"); !slices.Equal(got, want) {
		t.Errorf("Expected() = %d answers, want the %d date answers then cancel", len(got), len(want))
	}
}
