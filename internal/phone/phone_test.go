package phone

import "testing"

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

func TestCheckTimezone(t *testing.T) {
	for _, tz := range []string{"UTC", "America/New_York", "Europe/Paris", "Asia/Kolkata"} {
		if err := CheckTimezone(tz); err != nil {
			t.Errorf("CheckTimezone(%q) = %v, want nil", tz, err)
		}
	}
	for _, tz := range []string{"", "Local", "Mars/Olympus", "EST5EDTX", " UTC"} {
		if err := CheckTimezone(tz); err == nil {
			t.Errorf("CheckTimezone(%q) = nil, want error", tz)
		}
	}
}
