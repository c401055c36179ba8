package webhook

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzExcerpt: whatever a receiver answers, the excerpt is what the
// delivery log may hold: valid UTF-8, at most 2 KiB, no control character
// but newline and tab.
func FuzzExcerpt(f *testing.F) {
	for _, s := range []string{"ok", "accepted\x00id=42", "re\xe7u \xff", "a\xed\xa0\x80b", "\x1b[31m", "\r\n\r", "a\u0085b\x7f",
		"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06\x00\x00\x00\x1f\xf3\xffa"} {
		f.Add([]byte(s), "text/plain")
	}
	f.Fuzz(func(t *testing.T, data []byte, contentType string) {
		for _, got := range []string{excerpt(data, contentType), printable(string(data), 100)} {
			if !utf8.ValidString(got) || len(got) > maxAnswerKept {
				t.Fatalf("excerpt(%q) = %q: %d bytes, valid UTF-8 %v; want valid, at most %d bytes", data, got, len(got), utf8.ValidString(got), maxAnswerKept)
			}
			for _, r := range got {
				if unicode.IsControl(r) && r != '\n' && r != '\t' {
					t.Fatalf("excerpt(%q) = %q contains control character %U", data, got, r)
				}
			}
		}
		if got := printable(string(data), 100); len(got) > 100 {
			t.Fatalf("printable(%q, 100) = %d bytes, want at most 100", data, len(got))
		}
	})
}
