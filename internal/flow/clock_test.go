package flow

import (
	"fmt"
	"testing"
)

func TestParseTime(t *testing.T) {
	tests := []struct {
		in   string
		want string // "15:04"; "" when no time
	}{
		// Digits with am/pm.
		{"3pm", "15:00"},
		{"3 pm", "15:00"},
		{"3 p.m.", "15:00"},
		{"3:30 pm", "15:30"},
		{"3:30PM", "15:30"},
		{"11 am", "11:00"},
		{"at 1 a.m.", "01:00"},
		{"12am", "00:00"},
		{"12pm", "12:00"},
		{"12:15 am", "00:15"},
		// 24-hour clock.
		{"15:00", "15:00"},
		{"23:59", "23:59"},
		{"0:30", "00:30"},
		{"09:00", "09:00"},
		{"03:00", "03:00"},
		{"15:00 pm", "15:00"},
		// Named times.
		{"noon", "12:00"},
		{"midday", "12:00"},
		{"midnight", "00:00"},
		{"twelve noon", "12:00"},
		// Relative to the hour.
		{"half past three", "15:30"},
		{"half past eleven", "11:30"},
		{"quarter past three", "15:15"},
		{"a quarter after 4", "16:15"},
		{"quarter to five", "16:45"},
		{"quarter to one", "12:45"},
		{"quarter to twelve", "11:45"},
		{"ten past six", "18:10"},
		{"twenty five to seven", "06:35"},
		{"ten to nine", "08:50"},
		{"5 past 6", "18:05"},
		{"seventeen minutes past nine", "09:17"},
		{"quarter past noon", "12:15"},
		{"quarter to midnight", "23:45"},
		{"half past seven in the evening", "19:30"},
		// Hour and minutes in words.
		{"three thirty", "15:30"},
		{"three thirty pm", "15:30"},
		{"seven fifteen", "07:15"},
		{"nine forty five", "09:45"},
		{"seven oh five", "07:05"},
		{"eleven thirty at night", "23:30"},
		{"twelve thirty", "12:30"},
		{"3 30", "15:30"},
		// O'clock and parts of the day.
		{"seven o'clock", "07:00"},
		{"three o'clock in the afternoon", "15:00"},
		{"nine in the morning", "09:00"},
		{"8 at night", "20:00"},
		{"6 in the evening", "18:00"},
		{"ten this morning", "10:00"},
		// A bare hour after a cue, or alone.
		{"at 4", "16:00"},
		{"at 10", "10:00"},
		{"around 2", "14:00"},
		{"how about 3", "15:00"},
		{"three", "15:00"},
		{"7", "07:00"},
		{"at 15", "15:00"},
		{"from three to five", "15:00"},
		// Not times.
		{"", ""},
		{"whenever", ""},
		{"I have 3 kids", ""},
		{"3 people", ""},
		{"25:00", ""},
		{"3:75", ""},
		{"15 pm", ""},
		{"at 24", ""},
		{"tomorrow", ""},
		{"December 3rd", ""},
		{"half past", ""},
	}
	for _, tt := range tests {
		h, m, ok := ParseTime(tt.in)
		got := ""
		if ok {
			got = fmt.Sprintf("%02d:%02d", h, m)
		}
		if got != tt.want {
			t.Errorf("ParseTime(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestFindDateTime(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" when the answer lacks a date or a time
	}{
		{"tomorrow at 3pm", "2026-11-25T15:00"},
		{"3:30 pm on December 1st", "2026-12-01T15:30"},
		{"2026-12-01T15:04", "2026-12-01T15:04"},
		{"2026-12-01 09:00", "2026-12-01T09:00"},
		{"next Tuesday at half past ten", "2026-12-01T10:30"},
		{"December 3 at 4", "2026-12-03T16:00"},
		{"the 5th at noon", "2026-12-05T12:00"},
		{"tomorrow 3", "2026-11-25T15:00"}, // the hour is the only word left
		{"tonight at 8", "2026-11-24T20:00"},
		{"at 8 tonight", "2026-11-24T20:00"},
		{"friday morning at nine", "2026-11-27T09:00"},
		{"tomorrow", ""},
		{"at 3pm", ""},
		{"December 3", ""},
	}
	for _, tt := range tests {
		got, ok := findDateTime(tokenize(tt.in), civilOf(tuesday))
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("findDateTime(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}
