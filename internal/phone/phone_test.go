package phone

import (
	"strings"
	"testing"
)

func TestNormalizeE164(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"+14155550100", "+14155550100", true},
		{" +1 415 555 0100 ", "+14155550100", true},
		{"+442071838750", "+442071838750", true},
		{"4155550100", "", false},
		{"+1415", "", false},
		{"+1999555010", "", false},
		{"hello", "", false},
		{"", "", false},
		// Separators people write are accepted and dropped.
		{"+1 (415) 555-0100", "+14155550100", true},
		{"+44 20 7183 8750", "+442071838750", true},
		// What libphonenumber alone would accept is not E.164.
		{"++14155550100", "", false},
		{"+14155550100x", "", false},
		{"+14155550100 ext. 2", "", false},
		{"+1415555O1OO", "", false}, // letter O
		{"+1.415.555.0100", "", false},
		{"+1/415/555/0100", "", false},
		{"\t+14155550100", "", false},
		{"+14155550100\n", "", false},
		{"+\u0661\u0664\u0661\u0665\u0665\u0665\u0665\u0660\u0661\u0660\u0660", "", false}, // Arabic-Indic digits
		{"+0415555010", "", false},
		{"+1234567890123456", "", false}, // 16 digits
		{"+1", "", false},
		{"+", "", false},
		{"+14155550100\x00", "", false},
	}
	for _, tt := range tests {
		got, err := NormalizeE164(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("NormalizeE164(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestCheckTimezone: IANA Area/Location names and UTC are accepted; the
// legacy names without an area are refused even when the zone database
// knows them (EST would be a fixed UTC−5 while PST is unknown), each with
// the IANA name to use instead.
func TestCheckTimezone(t *testing.T) {
	for _, tz := range []string{"UTC", "America/New_York", "Europe/Paris", "Asia/Kolkata", "America/Argentina/Buenos_Aires", "US/Eastern", "Etc/GMT+5", "Etc/UTC"} {
		if err := CheckTimezone(tz); err != nil {
			t.Errorf("CheckTimezone(%q) = %v, want nil", tz, err)
		}
	}
	for _, tt := range []struct{ tz, want string }{
		{"", "must be an IANA time zone name such as America/New_York"},
		{"Local", "must be an IANA time zone name such as America/New_York"},
		{" UTC", "must be an IANA time zone name such as America/New_York"},
		{"Mars/Olympus", `unknown time zone "Mars/Olympus": use an IANA name such as America/New_York`},
		{"EST", "EST is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/New_York"},
		{"PST", "PST is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/Los_Angeles"},
		{"est", "est is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/New_York"},
		{"EST5EDT", "EST5EDT is a legacy abbreviation, not an IANA time zone name: use an IANA name such as America/New_York"},
		{"HST", "HST is a legacy abbreviation, not an IANA time zone name: use an IANA name such as Pacific/Honolulu"},
		{"GMT", "GMT is a legacy abbreviation, not an IANA time zone name: use an IANA name such as UTC"},
		{"Japan", "Japan is a legacy alias, not an IANA time zone name: use the IANA name Asia/Tokyo"},
		{"Zulu", "Zulu is a legacy alias, not an IANA time zone name: use the IANA name UTC"},
		{"EST5EDTX", "EST5EDTX is not an IANA time zone name: use an Area/Location name such as America/New_York, or UTC"},
		{"utc", "utc is not an IANA time zone name: use an Area/Location name such as America/New_York, or UTC"},
	} {
		if err := CheckTimezone(tt.tz); err == nil || err.Error() != tt.want {
			t.Errorf("CheckTimezone(%q) = %v, want %q", tt.tz, err, tt.want)
		}
	}
}

// TestLegacyZonesAllRefused: every name of the zone database without an
// area, other than UTC, is refused with a suggestion of its own.
func TestLegacyZonesAllRefused(t *testing.T) {
	for _, tz := range []string{"CET", "CST6CDT", "Cuba", "EET", "EST", "EST5EDT", "Egypt", "Eire", "Factory", "GB", "GB-Eire", "GMT", "GMT+0",
		"GMT-0", "GMT0", "Greenwich", "HST", "Hongkong", "Iceland", "Iran", "Israel", "Jamaica", "Japan", "Kwajalein", "Libya", "MET", "MST",
		"MST7MDT", "NZ", "NZ-CHAT", "Navajo", "PRC", "PST8PDT", "Poland", "Portugal", "ROC", "ROK", "Singapore", "Turkey", "UCT", "Universal",
		"W-SU", "WET", "Zulu"} {
		err := CheckTimezone(tz)
		if err == nil || !strings.Contains(err.Error(), "legacy") {
			t.Errorf("CheckTimezone(%q) = %v, want a legacy-name error with the IANA name to use", tz, err)
		}
	}
}
