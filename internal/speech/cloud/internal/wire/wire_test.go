package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/internal/pcm"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"date", map[string]string{"Retry-After": now.Add(20 * time.Second).Format(http.TimeFormat)}, 20 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"hostile value capped", map[string]string{"Retry-After": "99999999"}, time.Hour},
		{"negative", map[string]string{"Retry-After": "-4"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
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

func TestBaseURL(t *testing.T) {
	tests := []struct {
		raw, want string
		wantErr   bool
	}{
		{"", "https://api.example.com/v1", false},
		{"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1", false},
		{"wss://api.deepgram.com/v1", "https://api.deepgram.com/v1", false},
		{"ws://localhost:8080/v1", "http://localhost:8080/v1", false},
		{"ftp://example.com", "", true},
		{"localhost:8080", "", true},
		{"https:///v1", "", true},
		{"https://example.com/v1?key=x", "", true},
	}
	for _, tt := range tests {
		got, err := BaseURL(tt.raw, "https://api.example.com/v1")
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("BaseURL(%q) = %q, %v; want %q, error %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
}

const secret = "sk-secret-0123456789"

func testEndpoint() *Endpoint {
	return &Endpoint{Provider: "test", Secret: secret, ParseError: func(body []byte) (string, string, bool) {
		code, msg, ok := strings.Cut(string(body), ":")
		return code, msg, ok && strings.HasPrefix(string(body), "E")
	}}
}

func TestStatusError(t *testing.T) {
	e := testEndpoint()
	h := http.Header{"Retry-After": {"2"}}
	tests := []struct {
		name      string
		status    int
		body      string
		code, msg string
		retryable bool
	}{
		{"provider format", 429, "E42:slow down", "E42", "slow down", true},
		{"plain text", 503, "upstream busy", "", "upstream busy", true},
		{"HTML", 502, "<html>Bad Gateway</html>", "", "Bad Gateway", true},
		{"empty", 401, "", "", "Unauthorized", false},
		{"key echoed", 401, "Ebad_key:Incorrect API key " + secret, "Ebad_key", "Incorrect API key [redacted]", false},
		{"unknown status", 499, "", "", "HTTP 499", false},
	}
	for _, tt := range tests {
		ce := e.StatusError(tt.status, h, []byte(tt.body), time.Now())
		if ce.Code != tt.code || ce.Message != tt.msg || ce.Retryable != tt.retryable || ce.Status != tt.status || ce.RetryAfter != 2*time.Second {
			t.Errorf("StatusError(%s) = %+v; want code %q, message %q, retryable %v, status %d, retry after 2s", tt.name, ce, tt.code, tt.msg, tt.retryable, tt.status)
		}
	}
	long := e.StatusError(500, nil, []byte(strings.Repeat("é", MaxMessage)), time.Now())
	if len(long.Message) > MaxMessage+len("…") || !strings.HasSuffix(long.Message, "…") {
		t.Errorf("StatusError with a long body: message of %d bytes, want at most %d ending in …", len(long.Message), MaxMessage)
	}
}

func TestFailure(t *testing.T) {
	e := testEndpoint()
	cause := errors.New("dial tcp: connection refused for " + secret)
	ce := e.Failure(context.Background(), cloud.CodeNetwork, true, cause)
	if !ce.Retryable || ce.Code != cloud.CodeNetwork || !errors.Is(ce, cause) || strings.Contains(ce.Error(), secret) {
		t.Errorf("Failure(network) = %+v (%q), want retryable %q wrapping the cause, key removed", ce, ce.Error(), cloud.CodeNetwork)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ce := e.Failure(ctx, cloud.CodeNetwork, true, cause); ce.Retryable || ce.Code != cloud.CodeCanceled || !errors.Is(ce, context.Canceled) {
		t.Errorf("Failure(canceled context) = %+v, want not retryable %q", ce, cloud.CodeCanceled)
	}
	ctx, cancel = context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if ce := e.Failure(ctx, cloud.CodeNetwork, true, cause); !ce.Retryable || ce.Code != cloud.CodeDeadline {
		t.Errorf("Failure(expired context) = %+v, want retryable %q", ce, cloud.CodeDeadline)
	}
}

// response wraps body as a 200 with the content type.
func response(contentType string, body io.Reader) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(body)}
}

func streamAll(t *testing.T, resp *http.Response, from, to int) ([]int16, error) {
	t.Helper()
	var got []int16
	err := testEndpoint().StreamPCM(context.Background(), resp, from, to, func(p []int16) error {
		if len(p) == 0 {
			t.Errorf("StreamPCM called out with no samples")
		}
		got = append(got, p...)
		return nil
	})
	return got, err
}

func TestStreamPCM(t *testing.T) {
	samples := make([]int16, 2401)
	for i := range samples {
		samples[i] = int16(i*37 - 30000)
	}
	raw := pcm.AppendBytes(nil, samples)

	got, err := streamAll(t, response("", iotest.OneByteReader(strings.NewReader(string(raw)))), 24000, 24000)
	if err != nil || len(got) != len(samples) || got[100] != samples[100] || got[2400] != samples[2400] {
		t.Errorf("StreamPCM of raw PCM read a byte at a time: %d samples, %v; want the %d sent", len(got), err, len(samples))
	}

	// A server that answered a WAV stream: its header sets the rate.
	wav := append(pcm.WAVHeader(16000, len(samples)), raw...)
	got, err = streamAll(t, response("audio/wav", iotest.HalfReader(strings.NewReader(string(wav)))), 24000, 8000)
	if want := outputLen(len(samples), 16000, 8000); err != nil || len(got) != want {
		t.Errorf("StreamPCM of a 16 kHz WAV to 8 kHz: %d samples, %v; want %d", len(got), err, want)
	}

	// An odd trailing byte is half a sample, dropped.
	got, err = streamAll(t, response("", strings.NewReader(string(raw[:7]))), 24000, 24000)
	if err != nil || len(got) != 3 {
		t.Errorf("StreamPCM of 7 bytes: %d samples, %v; want 3", len(got), err)
	}

	for _, tt := range []struct {
		name, contentType, body string
		code                    string
	}{
		{"JSON", "application/json", `Enot_found:no such voice`, "Enot_found"},
		{"text", "text/plain", "oops", cloud.CodeBadResponse},
		{"MP3", "audio/mpeg", "ID3", cloud.CodeBadResponse},
		{"stereo WAV", "", string(wavHeader(2)), cloud.CodeBadResponse},
		{"cut WAV header", "", "RIFF\x00\x00\x00\x00WAVEfmt ", cloud.CodeBadResponse},
	} {
		_, err := streamAll(t, response(tt.contentType, strings.NewReader(tt.body)), 24000, 16000)
		var ce *cloud.Error
		if !errors.As(err, &ce) || ce.Code != tt.code || ce.Retryable {
			t.Errorf("StreamPCM of %s = %v, want a non-retryable %q", tt.name, err, tt.code)
		}
	}

	_, err = streamAll(t, response("", io.MultiReader(strings.NewReader(string(raw[:100])), iotest.ErrReader(io.ErrUnexpectedEOF))), 24000, 16000)
	var ce *cloud.Error
	if !errors.As(err, &ce) || ce.Code != cloud.CodeNetwork || !ce.Retryable {
		t.Errorf("StreamPCM of a body cut short = %v, want a retryable %q", err, cloud.CodeNetwork)
	}
}

func wavHeader(channels int) []byte {
	h := pcm.WAVHeader(16000, 0)
	h[22] = byte(channels)
	return h
}

// FuzzStreamPCM feeds arbitrary replies: StreamPCM must not panic, must fail
// only with *cloud.Error, and a raw reply (not a WAV) must come out at the
// length its samples give.
func FuzzStreamPCM(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5})
	f.Add(append(pcm.WAVHeader(8000, 4), 1, 0, 2, 0, 3, 0, 4, 0))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEdata\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var n int
		err := testEndpoint().StreamPCM(context.Background(), response("", strings.NewReader(string(body))), 24000, 16000, func(p []int16) error {
			n += len(p)
			return nil
		})
		var ce *cloud.Error
		if err != nil && !errors.As(err, &ce) {
			t.Fatalf("StreamPCM error %v (%T) is not *cloud.Error", err, err)
		}
		if err == nil && !strings.HasPrefix(string(body), "RIFF") {
			if want := outputLen(len(body)/2, 24000, 16000); n != want {
				t.Fatalf("StreamPCM of %d raw bytes gave %d samples, want %d", len(body), n, want)
			}
		}
	})
}

// outputLen is how many samples a whole stream of n samples at from becomes
// at to (audio.Resampler emits ceil(n·to/from) after Flush).
func outputLen(n, from, to int) int {
	if from == to {
		return n
	}
	return int((int64(n)*int64(to) + int64(from) - 1) / int64(from))
}
