package wire

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/internal/llm"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "9", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "9", "Retry-After-Ms": "soon"}, 9 * time.Second},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0},
		{"capped", map[string]string{"Retry-After": "1e12"}, time.Hour},
		{"capped milliseconds", map[string]string{"Retry-After-Ms": "1e300"}, time.Hour},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%s: %v) = %v, want %v", tt.name, tt.header, got, tt.want)
		}
	}
}

func TestArguments(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "{}"},
		{"  ", "{}"},
		{`{ "a" : 1 }`, `{"a":1}`},
		{`{"a":`, `"{\"a\":"`},
		{`[1, 2]`, `[1,2]`},
		{"not json", `"not json"`},
	}
	for _, tt := range tests {
		got := Arguments([]byte(tt.in))
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("Arguments(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for in, want := range map[string]string{`{"a":1}`: `{"a":1}`, `[]`: `{}`, `"x"`: `{}`, `null`: `{}`, ``: `{}`} {
		if got := ObjectOrEmpty(json.RawMessage(in)); string(got) != want {
			t.Errorf("ObjectOrEmpty(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	ep := &Endpoint{Provider: "p", Secret: "sk-secret", ParseError: func(b []byte) (string, string, bool) {
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e) != nil || e.Message == "" {
			return "", "", false
		}
		return e.Code, e.Message, true
	}}
	tests := []struct {
		name   string
		status int
		body   string
		want   llm.Error
	}{
		{"provider body", 429, `{"code":"slow","message":"wait sk-secret"}`, llm.Error{Provider: "p", Status: 429, Code: "slow", Message: "wait [redacted]", Retryable: true}},
		{"plain text", 400, "bad thing\n", llm.Error{Provider: "p", Status: 400, Message: "bad thing"}},
		{"HTML", 502, "<html>oops</html>", llm.Error{Provider: "p", Status: 502, Message: "Bad Gateway", Retryable: true}},
		{"empty", 529, "", llm.Error{Provider: "p", Status: 529, Message: "HTTP 529", Retryable: true}},
		{"not UTF-8", 500, "\xff\xfe", llm.Error{Provider: "p", Status: 500, Message: "Internal Server Error", Retryable: true}},
	}
	for _, tt := range tests {
		got := ep.StatusError(tt.status, http.Header{}, []byte(tt.body), time.Now())
		if *got != tt.want {
			t.Errorf("StatusError(%s) = %+v, want %+v", tt.name, *got, tt.want)
		}
	}
	long := ep.StatusError(500, http.Header{}, []byte(strings.Repeat("é", MaxMessage)), time.Now())
	if len(long.Message) > MaxMessage+len("…") || !strings.HasSuffix(long.Message, "…") || !json.Valid([]byte(`"`+long.Message+`"`)) {
		t.Errorf("StatusError(long body) message is %d bytes, want at most %d, cut on a rune and marked", len(long.Message), MaxMessage)
	}
}

func TestFailure(t *testing.T) {
	t.Parallel()
	ep := &Endpoint{Provider: "p", Secret: "sk-secret"}
	cause := errors.New("read tcp: connection reset, key sk-secret")
	got := ep.Failure(context.Background(), llm.CodeNetwork, true, cause)
	if got.Code != llm.CodeNetwork || !got.Retryable || strings.Contains(got.Error(), "sk-secret") || !errors.Is(got, cause) {
		t.Errorf("Failure(network) = %v (%+v), want retryable network_error, redacted, wrapping the cause", got, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got = ep.Failure(ctx, llm.CodeNetwork, true, cause)
	if got.Code != llm.CodeCanceled || got.Retryable || !errors.Is(got, context.Canceled) {
		t.Errorf("Failure(canceled ctx) = %+v, want canceled, not retryable, errors.Is context.Canceled", got)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	got = ep.Failure(ctx, llm.CodeTruncated, true, cause)
	if got.Code != llm.CodeDeadline || !got.Retryable || !errors.Is(got, context.DeadlineExceeded) {
		t.Errorf("Failure(expired ctx) = %+v, want deadline_exceeded, retryable, errors.Is context.DeadlineExceeded", got)
	}
}
