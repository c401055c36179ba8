package openai

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRing(t *testing.T) {
	r := ring{max: 5}
	if d := r.write([]int16{1, 2, 3}); d != 0 {
		t.Errorf("write under max dropped %d", d)
	}
	if d := r.write([]int16{4, 5, 6, 7}); d != 2 {
		t.Errorf("write past max dropped %d, want 2", d)
	}
	if got := r.take(); !slices.Equal(got, []int16{3, 4, 5, 6, 7}) {
		t.Errorf("take = %v, want the newest 3..7", got)
	}
	if got := r.take(); len(got) != 0 {
		t.Errorf("take after take = %v, want empty", got)
	}
	r.write([]int16{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	if got := r.take(); !slices.Equal(got, []int16{8, 9, 10, 11, 12}) {
		t.Errorf("take after one write of 12 = %v, want 8..12", got)
	}
	for i := range 23 { // wrap around many times, one sample at a time
		r.write([]int16{int16(i)})
	}
	if got := r.take(); !slices.Equal(got, []int16{18, 19, 20, 21, 22}) {
		t.Errorf("take after 23 single writes = %v, want 18..22", got)
	}
}

func TestISO6391(t *testing.T) {
	for tag, want := range map[string]string{
		"en-US": "en", "pt-BR": "pt", "FR": "fr", "de": "de", "": "", "yue-HK": "", "x": "", "e1-US": "",
	} {
		if got := iso6391(tag); got != want {
			t.Errorf("iso6391(%q) = %q, want %q", tag, got, want)
		}
	}
}

func TestHintsPrompt(t *testing.T) {
	if got := hintsPrompt([]string{" Tuesday ", "", "Wednesday", "Tuesday"}); got != "Tuesday, Wednesday" {
		t.Errorf("hintsPrompt = %q, want %q", got, "Tuesday, Wednesday")
	}
	long := make([]string, 500)
	for i := range long {
		long[i] = "option"
	}
	if got := hintsPrompt(long); len(got) > maxPrompt {
		t.Errorf("hintsPrompt of 500 hints is %d bytes, want at most %d", len(got), maxPrompt)
	}
}

func TestDecodeTranscription(t *testing.T) {
	tests := []struct {
		contentType, body, want string
		wantErr                 bool
	}{
		{"application/json", `{"text":" Hello. "}`, "Hello.", false},
		{"application/json", `{"text":"","usage":{"type":"duration","seconds":1}}`, "", false},
		{"", `{"task":"transcribe","language":"english","text":"verbose"}`, "verbose", false},
		{"text/plain; charset=utf-8", "plain answer\n", "plain answer", false},
		{"application/json", `{"result":"x"}`, "", true},
		{"application/json", `<html>`, "", true},
	}
	for _, tt := range tests {
		got, err := decodeTranscription(tt.contentType, []byte(tt.body))
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("decodeTranscription(%q, %s) = %q, %v; want %q, error %v", tt.contentType, tt.body, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseError(t *testing.T) {
	tests := []struct {
		body, code, msg string
		ok              bool
	}{
		{`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "Rate limit reached", true},
		{`{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`, "server_error", "boom", true},
		{`{"error":"model not loaded"}`, "", "model not loaded", true},
		{`{"detail":"Audio file is empty"}`, "", "Audio file is empty", true},
		{`{"detail":[{"msg":"field required"}]}`, "", "", false},
		{`oops`, "", "", false},
	}
	for _, tt := range tests {
		code, msg, ok := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg || ok != tt.ok {
			t.Errorf("parseError(%s) = %q, %q, %v; want %q, %q, %v", tt.body, code, msg, ok, tt.code, tt.msg, tt.ok)
		}
	}
}

// FuzzDecodeReplies feeds arbitrary transcription and error bodies: no
// panic, and a decoded transcript is trimmed valid UTF-8.
func FuzzDecodeReplies(f *testing.F) {
	f.Add("application/json", `{"text":" Hello. "}`)
	f.Add("text/plain", "plain")
	f.Add("application/json", `{"error":{"message":"m","code":1}}`)
	f.Add("", `{"detail":"x","text":null}`)
	f.Fuzz(func(t *testing.T, contentType, body string) {
		text, err := decodeTranscription(contentType, []byte(body))
		if err == nil && (!utf8.ValidString(text) && utf8.ValidString(body) || strings.TrimSpace(text) != text) {
			t.Fatalf("decodeTranscription(%q, %q) = %q: not trimmed", contentType, body, text)
		}
		parseError([]byte(body))
	})
}
