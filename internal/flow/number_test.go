package flow

import "testing"

func TestParseNumber(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		// Digits.
		{"23", 23, true},
		{"3.5", 3.5, true},
		{"1,200", 1200, true},
		{"1,234,567.25", 1234567.25, true},
		{"-4", -4, true},
		{"0", 0, true},
		{"I'd like 4 tickets please", 4, true},
		{"$20", 20, true},
		{"5 or 6", 5, true},
		{"2.", 2, true},
		// Words.
		{"zero", 0, true},
		{"seven", 7, true},
		{"nineteen", 19, true},
		{"ninety", 90, true},
		{"twenty three", 23, true},
		{"Twenty-Three", 23, true},
		{"a hundred", 100, true},
		{"a hundred and five", 105, true},
		{"one hundred five", 105, true},
		{"three hundred and forty two", 342, true},
		{"a thousand", 1000, true},
		{"one thousand two hundred", 1200, true},
		{"twelve hundred", 1200, true},
		{"two thousand and twenty six", 2026, true},
		{"nine hundred ninety nine thousand nine hundred ninety nine", 999999, true},
		{"one million two hundred thousand", 1200000, true},
		{"three point five", 3.5, true},
		{"zero point two five", 0.25, true},
		{"minus two", -2, true},
		{"minus 3.5", -3.5, true},
		{"about twenty people", 20, true},
		{"we are five", 5, true},
		{"three three", 3, true},              // the longest well-formed prefix
		{"thousand one", 1, true},             // a scale needs something to multiply
		{"one thousand thousand", 1000, true}, // scales must fall
		// Not numbers.
		{"", 0, false},
		{"none", 0, false},
		{"hundred", 0, false},
		{"a", 0, false},
		{"first", 0, false},
		{"a few", 0, false},
		{"eleventy", 0, false},
		{"1.2.3", 0, false},
		{"3:30", 0, false},
		{"12/01", 0, false},
		{"minus", 0, false},
		{"and", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseNumber(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"3pm", []string{"3", "pm"}},
		{"3:30 P.M.", []string{"3:30", "p", "m"}},
		{"December 1st, 2026", []string{"december", "1", "st", "2026"}},
		{"That’s right!", []string{"that's", "right"}},
		{"2026-12-01T15:04", []string{"2026-12-01", "t", "15:04"}},
		{"twenty-three", []string{"twenty", "three"}},
		{"-4 and 1,200.5", []string{"-4", "and", "1,200.5"}},
		{"o'clock 'til", []string{"o'clock", "til"}},
		{"a-1", []string{"a", "1"}},
		{"", nil},
	}
	for _, tt := range tests {
		got := tokenize(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("tokenize(%q) = %q; want %q", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("tokenize(%q) = %q; want %q", tt.in, got, tt.want)
				break
			}
		}
	}
}
