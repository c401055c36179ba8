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
