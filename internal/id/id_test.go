package id

import (
	"strings"
	"testing"
)

// TestValid: every id New issues is valid for its prefix (and only its
// prefix); nothing else is, so handlers may answer 404 without a query.
func TestValid(t *testing.T) {
	prefixes := []string{Org, Key, Assistant, Call, Purchase, Connection, Contact, Schedule, Attempt, Webhook, Message, Delivery, Request}
	for _, p := range prefixes {
		for range 100 {
			v := New(p)
			if !Valid(p, v) {
				t.Fatalf("Valid(%q, %q) = false for an id New issued", p, v)
			}
		}
	}
	if !Valid(Call, "call_vydm5n2ipm2ls2ebvyax3ikgxq") { // from docs/api.md
		t.Errorf("Valid rejects a documented call id")
	}
	a26 := strings.Repeat("a", 26)
	for _, tt := range []struct{ prefix, s string }{
		{Assistant, ""},
		{Assistant, "asst_"},
		{Assistant, "asst_" + a26[:25]},
		{Assistant, "asst_" + a26 + "a"},
		{Assistant, "asst-" + a26},
		{Assistant, "call_" + a26},  // another kind's prefix
		{Call, "callx_" + a26[:25]}, // a prefix that merely starts the same
		{Assistant, "ASST_" + a26},  // case matters
		{Assistant, "asst_" + strings.Repeat("A", 26)},
		{Assistant, "asst_" + strings.Repeat("1", 26)}, // 0, 1, 8, 9 are not base32
		{Assistant, "asst_" + a26[:25] + "\x00"},
		{Assistant, "asst_" + a26[:24] + "\xc3\xa9"}, // é: 26 bytes, not 26 base32 characters
		{Assistant, "asst_" + a26[:25] + " "},
		{Assistant, " asst_" + a26},
		{Assistant, "x\x00y"},
		{Assistant, "\xff\xfe"},
	} {
		if Valid(tt.prefix, tt.s) {
			t.Errorf("Valid(%q, %q) = true, want false", tt.prefix, tt.s)
		}
	}
}

func TestBase32(t *testing.T) {
	for s, want := range map[string]bool{"": true, "abcxyz234567": true, "a1": false, "a8": false, "A": false, "a_b": false, "\x00": false, "\xff": false} {
		if got := Base32(s); got != want {
			t.Errorf("Base32(%q) = %v, want %v", s, got, want)
		}
	}
}
