package auth

import (
	"strings"
	"testing"
	"time"
)

func TestNewKeyRoundTrip(t *testing.T) {
	k, secret := NewKey("org_x", "ci", []string{CallsRead}, time.Now())
	if !strings.HasPrefix(secret, KeyPrefix) {
		t.Fatalf("NewKey secret = %q, want prefix %q", secret, KeyPrefix)
	}
	if got := LookupID(secret); got != k.ID {
		t.Errorf("LookupID(%q) = %q, want %q", secret, got, k.ID)
	}
	if !k.Matches(secret) {
		t.Errorf("Matches(own secret) = false")
	}
	last := "a"
	if strings.HasSuffix(secret, last) {
		last = "b" // the secret may already end in "a": alter it for real
	}
	if k.Matches(secret[:len(secret)-1] + last) {
		t.Errorf("Matches(altered secret) = true")
	}
	if strings.Contains(string(k.Hash), secret) {
		t.Errorf("hash contains the secret")
	}
}

func TestLookupIDRejectsGarbage(t *testing.T) {
	for _, in := range []string{"", "sbk_", "sbk_abc_def", "Bearer x", "sbk_aaaaaaaaaaaaaaaa_short",
		"sbk_" + strings.Repeat("\xff", 16) + "_" + strings.Repeat("a", 32), "sbk_aaaaaaaaaaaaaaa\x00_" + strings.Repeat("a", 32),
		"sbk_AAAAAAAAAAAAAAAA_" + strings.Repeat("a", 32)} {
		if got := LookupID(in); got != "" {
			t.Errorf("LookupID(%q) = %q, want empty", in, got)
		}
	}
}

func TestParseScopes(t *testing.T) {
	got, err := ParseScopes("calls:read, phone:write,calls:read")
	if err != nil || len(got) != 2 {
		t.Fatalf("ParseScopes = %v, %v; want 2 scopes", got, err)
	}
	if _, err := ParseScopes("calls:read,admin"); err == nil {
		t.Errorf("ParseScopes(admin) = nil error, want unknown scope")
	}
	if _, err := ParseScopes(""); err == nil {
		t.Errorf("ParseScopes(empty) = nil error")
	}
}
