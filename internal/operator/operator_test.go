package operator

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/apperr"
)

func TestNormalizeEmail(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"  Ops@Example.COM ", "ops@example.com", true},
		{"a.b+c@sub.example.org", "a.b+c@sub.example.org", true},
		{"", "", false},
		{"not-an-address", "", false},
		{"Ops <ops@example.com>", "", false},
		{"a@b@c", "", false},
		{strings.Repeat("a", 250) + "@b.io", "", false},
	} {
		got, err := NormalizeEmail(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q, nil", tc.in, got, err, tc.want)
		}
		if !tc.ok && !apperr.Is(err, apperr.Invalid) {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want an invalid-argument error", tc.in, got, err)
		}
	}
}

func TestPasswords(t *testing.T) {
	for _, bad := range []string{"", "short", "elevenchars", strings.Repeat("x", MaxPasswordBytes+1), "twelve chars\xff"} {
		if err := CheckPassword(bad); !apperr.Is(err, apperr.Invalid) {
			t.Errorf("CheckPassword(%q) = %v; want an invalid-argument error", bad, err)
		}
		if _, err := HashPassword(bad, bcrypt.MinCost); err == nil {
			t.Errorf("HashPassword(%q) hashed a password CheckPassword refuses", bad)
		}
	}
	const pw = "correct horse battery"
	h, err := HashPassword(pw, bcrypt.MinCost)
	if err != nil {
		t.Fatalf("HashPassword(%q): %v", pw, err)
	}
	if !Verify(h, pw) || Verify(h, pw+"!") || Verify(nil, pw) {
		t.Errorf("Verify: want true for the password only (hash %s)", h)
	}
	// Unknown emails cost a bcrypt at the cost of new hashes.
	if c, _ := bcrypt.Cost(dummy()); c != DefaultCost {
		t.Errorf("the dummy hash has cost %d; want DefaultCost %d", c, DefaultCost)
	}
}

func TestSessionLive(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := Session{IdleUntil: now.Add(time.Minute), ExpiresAt: now.Add(time.Hour)}
	if !s.Live(now) || s.Live(now.Add(time.Minute)) || s.Live(now.Add(2*time.Hour)) {
		t.Errorf("Session%+v.Live: want live only before IdleUntil and ExpiresAt", s)
	}
	if !s.Ends().Equal(s.IdleUntil) || !(Session{IdleUntil: now.Add(time.Hour), ExpiresAt: now}).Ends().Equal(now) {
		t.Errorf("Session.Ends: want the earlier of IdleUntil and ExpiresAt")
	}
	if HashToken("a") == HashToken("b") || len(HashToken("a")) != 64 {
		t.Errorf("HashToken: want distinct 64-hex-digit hashes")
	}
}
