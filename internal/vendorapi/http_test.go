package vendorapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const secret = "sk-secret-0123456789"

// testEndpoint parses any JSON object as {"code", "message"}: a provider's
// error format, and one that can say nothing.
func testEndpoint() *Endpoint {
	return &Endpoint{Provider: "p", Secret: secret, ParseError: func(b []byte) (string, string, bool) {
		var e struct{ Code, Message string }
		if json.Unmarshal(b, &e) != nil {
			return "", "", false
		}
		return e.Code, e.Message, true
	}}
}

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
		{"spaces", map[string]string{"Retry-After": " 3 "}, 3 * time.Second},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"date far ahead", map[string]string{"Retry-After": now.Add(48 * time.Hour).Format(http.TimeFormat)}, time.Hour},
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

// FuzzRetryAfter feeds arbitrary header values: RetryAfter must not panic
// and must stay within [0, 1h].
func FuzzRetryAfter(f *testing.F) {
	f.Add("7", "")
	f.Add("Sun, 01 Mar 2026 12:01:30 GMT", "250")
	f.Add("-1e400", "NaN")
	f.Add("Inf", "+Inf")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, after, afterMs string) {
		h := http.Header{"Retry-After": {after}, "Retry-After-Ms": {afterMs}}
		if got := RetryAfter(h, now); got < 0 || got > time.Hour {
			t.Fatalf("RetryAfter(Retry-After %q, Retry-After-Ms %q) = %v, want within [0, 1h]", after, afterMs, got)
		}
	})
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	ep := testEndpoint()
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   Error
	}{
		{"provider body", 429, nil, `{"code":"slow","message":"wait ` + secret + `"}`, Error{Provider: "p", Status: 429, Code: "slow", Message: "wait [redacted]", Retryable: true}},
		{"provider body with Retry-After", 503, http.Header{"Retry-After": {"2"}}, `{"message":"busy"}`, Error{Provider: "p", Status: 503, Message: "busy", Retryable: true, RetryAfter: 2 * time.Second}},
		{"key echoed", 401, nil, `{"code":"bad_key","message":"Incorrect API key ` + secret + `"}`, Error{Provider: "p", Status: 401, Code: "bad_key", Message: "Incorrect API key [redacted]"}},
		{"format saying nothing", 400, nil, `{"code":"","message":""}`, Error{Provider: "p", Status: 400, Message: `{"code":"","message":""}`}},
		{"plain text", 400, nil, "bad thing\n", Error{Provider: "p", Status: 400, Message: "bad thing"}},
		{"plain text with the key", 403, nil, "no access for " + secret, Error{Provider: "p", Status: 403, Message: "no access for [redacted]"}},
		{"HTML", 502, nil, "<html>oops</html>", Error{Provider: "p", Status: 502, Message: "Bad Gateway", Retryable: true}},
		{"empty", 401, nil, "", Error{Provider: "p", Status: 401, Message: "Unauthorized"}},
		{"unknown status", 529, nil, "", Error{Provider: "p", Status: 529, Message: "HTTP 529", Retryable: true}},
		{"not UTF-8", 500, nil, "\xff\xfe", Error{Provider: "p", Status: 500, Message: "Internal Server Error", Retryable: true}},
	}
	for _, tt := range tests {
		got := ep.StatusError(tt.status, tt.header, []byte(tt.body), time.Now())
		if *got != tt.want {
			t.Errorf("StatusError(%s) = %+v, want %+v", tt.name, *got, tt.want)
		}
	}
	long := ep.StatusError(500, http.Header{}, []byte(strings.Repeat("é", MaxMessage)), time.Now())
	if len(long.Message) > MaxMessage+len("…") || !strings.HasSuffix(long.Message, "…") || !json.Valid([]byte(`"`+long.Message+`"`)) {
		t.Errorf("StatusError(long body) message is %d bytes, want at most %d, cut on a rune and marked", len(long.Message), MaxMessage)
	}
}

func TestStreamError(t *testing.T) {
	t.Parallel()
	ep := testEndpoint()
	tests := []struct {
		status    int
		retryable bool
	}{{0, true}, {400, false}, {429, true}, {529, true}}
	for _, tt := range tests {
		got := ep.StreamError(tt.status, "some_error", "from "+secret)
		want := Error{Provider: "p", Status: tt.status, Code: "some_error", Message: "from [redacted]", Retryable: tt.retryable}
		if *got != want {
			t.Errorf("StreamError(%d) = %+v, want %+v", tt.status, *got, want)
		}
	}
}

func TestFailure(t *testing.T) {
	t.Parallel()
	cause := errors.New("read tcp: connection reset, key " + secret)
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	timedOut := &timeoutError{}

	tests := []struct {
		name      string
		ep        *Endpoint
		ctx       context.Context
		code      string
		retryable bool
		cause     error
		wantCode  string
		wantMsg   string
		wantRetry bool
		wantIs    error
	}{
		{"network", testEndpoint(), context.Background(), CodeNetwork, true, cause, CodeNetwork, "read tcp: connection reset, key [redacted]", true, cause},
		{"bad response", testEndpoint(), context.Background(), CodeBadResponse, false, cause, CodeBadResponse, "read tcp: connection reset, key [redacted]", false, cause},
		{"no cause", testEndpoint(), context.Background(), CodeTooLarge, false, nil, CodeTooLarge, "", false, nil},
		{"canceled context", testEndpoint(), canceled, CodeNetwork, true, cause, CodeCanceled, "canceled", false, context.Canceled},
		{"canceled context, own wording", &Endpoint{Provider: "p", CanceledMessage: "request canceled"}, canceled, CodeNetwork, true, cause, CodeCanceled, "request canceled", false, context.Canceled},
		{"expired context", testEndpoint(), expired, "truncated_stream", true, cause, CodeDeadline, "deadline exceeded", true, context.DeadlineExceeded},
		{"timed-out cause kept", testEndpoint(), context.Background(), CodeNetwork, true, timedOut, CodeNetwork, "timed out", true, context.DeadlineExceeded},
		{"timed-out cause as deadline", &Endpoint{Provider: "p", DeadlineCause: true}, context.Background(), CodeNetwork, true, timedOut, CodeDeadline, "timed out", true, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		got := tt.ep.Failure(tt.ctx, tt.code, tt.retryable, tt.cause)
		if got.Provider != "p" || got.Code != tt.wantCode || got.Message != tt.wantMsg || got.Retryable != tt.wantRetry {
			t.Errorf("Failure(%s) = %+v, want code %q, message %q, retryable %v", tt.name, got, tt.wantCode, tt.wantMsg, tt.wantRetry)
		}
		if tt.wantIs != nil && !errors.Is(got, tt.wantIs) {
			t.Errorf("Failure(%s) = %v, want errors.Is %v", tt.name, got, tt.wantIs)
		}
		if strings.Contains(got.Error(), secret) {
			t.Errorf("Failure(%s).Error() = %q, contains the key", tt.name, got.Error())
		}
	}
}

// timeoutError is what an http.Client Timeout looks like to errors.Is.
type timeoutError struct{}

func (*timeoutError) Error() string        { return "timed out" }
func (*timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

func TestMessages(t *testing.T) {
	t.Parallel()
	ep := testEndpoint()
	tests := []struct {
		name string
		got  *Error
		want Error
	}{
		{"Invalid", ep.Invalid("text: %v", "empty"), Error{Provider: "p", Code: CodeInvalidRequest, Message: "text: empty"}},
		{"Config", ep.Config("base URL %q: no host", "https://"+secret), Error{Provider: "p", Code: CodeConfig, Message: `base URL "https://[redacted]": no host`}},
		{"BadResponse", ep.BadResponse("reply is %s", "text/html"), Error{Provider: "p", Code: CodeBadResponse, Message: "reply is text/html"}},
	}
	for _, tt := range tests {
		if *tt.got != tt.want {
			t.Errorf("%s = %+v, want %+v", tt.name, *tt.got, tt.want)
		}
	}
}

func TestPost(t *testing.T) {
	t.Parallel()
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		body, _ := io.ReadAll(r.Body)
		switch string(body) {
		case "ok":
			io.WriteString(w, "fine")
		default:
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"code":"rate_limit","message":"slow down, `+secret+`"}`)
		}
	}))
	defer srv.Close()
	ep := testEndpoint()
	ep.Header = http.Header{"Authorization": {"Bearer " + secret}, "Content-Type": {"text/plain"}}
	ep.HTTP = srv.Client()

	resp, err := ep.Post(t.Context(), srv.URL, "application/json", []byte("ok"))
	if err != nil {
		t.Fatalf("Post(ok) error = %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "fine" || got.Get("Authorization") != "Bearer "+secret || got.Get("Content-Type") != "application/json" {
		t.Errorf("Post(ok) = %q with headers %v, want \"fine\", the endpoint's Authorization and Content-Type application/json", body, got)
	}
	if ep.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("Post changed the endpoint's header: Content-Type %q", ep.Header.Get("Content-Type"))
	}

	_, err = ep.Post(t.Context(), srv.URL, "application/json", []byte("refuse"))
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != 429 || pe.Code != "rate_limit" || !pe.Retryable || pe.RetryAfter != 3*time.Second || strings.Contains(err.Error(), secret) {
		t.Errorf("Post(refused) = %v (%+v), want a retryable 429 rate_limit, retry after 3s, key removed", err, pe)
	}

	_, err = ep.Post(t.Context(), "http://[::1", "application/json", nil)
	if !errors.As(err, &pe) || pe.Code != CodeConfig || pe.Retryable {
		t.Errorf("Post(bad URL) = %v, want a non-retryable %q", err, CodeConfig)
	}

	srv.Close()
	_, err = ep.Post(t.Context(), srv.URL, "application/json", []byte("ok"))
	if !errors.As(err, &pe) || pe.Code != CodeNetwork || !pe.Retryable || strings.Contains(err.Error(), secret) {
		t.Errorf("Post(server gone) = %v, want a retryable %q", err, CodeNetwork)
	}
}
