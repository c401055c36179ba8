package auth

import (
	"strings"
	"testing"
	"time"
)

func TestNewPublicKeyRoundTrip(t *testing.T) {
	k, key := NewPublicKey("org_x", "shop", []string{"asst_a"}, []string{"https://shop.example.com"}, time.Now())
	if !strings.HasPrefix(key, PublicKeyPrefix) || !IsPublicKey(key) {
		t.Fatalf("NewPublicKey key = %q, want prefix %q", key, PublicKeyPrefix)
	}
	if got := PublicLookupID(key); got != k.ID {
		t.Errorf("PublicLookupID(%q) = %q, want %q", key, got, k.ID)
	}
	if !strings.HasPrefix(key, k.KeyPrefix) || len(k.KeyPrefix) != 11 {
		t.Errorf("KeyPrefix = %q; want the first 11 characters of %q", k.KeyPrefix, key)
	}
	if !k.Matches(key) {
		t.Errorf("Matches(own key) = false")
	}
	last := "a"
	if strings.HasSuffix(key, last) {
		last = "b"
	}
	if k.Matches(key[:len(key)-1] + last) {
		t.Errorf("Matches(altered key) = true")
	}
	if LookupID(key) != "" {
		t.Errorf("LookupID(publishable key) = %q; want empty (it is not a secret key)", LookupID(key))
	}
	if !k.AllowsOrigin("https://shop.example.com") || k.AllowsOrigin("https://evil.example.com") || k.AllowsOrigin("") || k.AllowsOrigin("null") {
		t.Errorf("AllowsOrigin does not match exactly the key's origins %v", k.Origins)
	}
	if !k.AllowsAssistant("asst_a") || k.AllowsAssistant("asst_b") {
		t.Errorf("AllowsAssistant does not match exactly the key's assistants %v", k.AssistantIDs)
	}
}

func TestPublicLookupIDRejectsGarbage(t *testing.T) {
	_, good := NewPublicKey("org_x", "", nil, nil, time.Now())
	lookup, secret, _ := strings.Cut(strings.TrimPrefix(good, PublicKeyPrefix), "_")
	for _, in := range []string{"", "pk_", "pk_abc_def", "sbk_" + lookup + "_" + secret, "pk_" + lookup, "pk_" + lookup + "_" + secret[:31],
		"pk_" + strings.ToUpper(lookup) + "_" + secret, "pk_" + lookup[:25] + "\x00_" + secret, "pk_" + lookup + "_" + secret[:31] + "\xff",
		"pk_" + lookup + "x_" + secret} {
		if got := PublicLookupID(in); got != "" {
			t.Errorf("PublicLookupID(%q) = %q, want empty", in, got)
		}
	}
}

func TestNormalizeOrigin(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"https://shop.example.com", "https://shop.example.com"},
		{"HTTPS://Shop.Example.COM", "https://shop.example.com"},
		{"https://shop.example.com:443", "https://shop.example.com"},
		{"http://shop.example.com:80", "http://shop.example.com"},
		{"http://shop.example.com:443", "http://shop.example.com:443"},
		{"http://localhost:3000", "http://localhost:3000"},
		{"http://localhost:03000", "http://localhost:3000"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://[::1]:3000", "http://[::1]:3000"},
		{"https://[2001:DB8:0:0::1]", "https://[2001:db8::1]"},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example"},
		{"https://my_host.example", "https://my_host.example"},
	} {
		got, err := NormalizeOrigin(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("NormalizeOrigin(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{
		"", "shop.example.com", "ftp://shop.example.com", "wss://shop.example.com", "https://",
		"https://shop.example.com/", "https://shop.example.com/path", "https://shop.example.com?q", "https://shop.example.com#f",
		"https://*.example.com", "*", "https://user@shop.example.com", "https://shop.example.com:0", "https://shop.example.com:65536",
		"https://shop.example.com:", "https://shop.example.com:+80", "https://shop.example.com:x", "https://bücher.example",
		"https://shop..example.com", "https://.example.com", "https://example.com.", "https://sh op.example.com",
		"https://shop.example.com\x00", "https://[::1", "https://[::1]x", "https://[fe80::1%25eth0]", "https://[1.2.3.4]",
		"http://127.1", "http://1.2.3.256", "http://01.2.3.4", "null", "https://" + strings.Repeat("a", 64) + ".example",
		"https://a:b:c", "https://" + strings.Repeat("a.", 200) + "com",
	} {
		if got, err := NormalizeOrigin(in); err == nil {
			t.Errorf("NormalizeOrigin(%q) = %q, nil; want an error", in, got)
		}
	}
}

// FuzzNormalizeOrigin: whatever it is given, NormalizeOrigin does not
// panic, and what it accepts it returns in a form it keeps as it is.
func FuzzNormalizeOrigin(f *testing.F) {
	for _, s := range []string{"https://shop.example.com", "http://[::1]:3000", "HTTP://A.B:80", "https://*.x", "http://1.2.3.4:5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := NormalizeOrigin(s)
		if err != nil {
			return
		}
		again, err := NormalizeOrigin(got)
		if err != nil || again != got {
			t.Errorf("NormalizeOrigin(%q) = %q, but NormalizeOrigin(%q) = %q, %v", s, got, got, again, err)
		}
	})
}
