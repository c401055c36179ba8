package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/internal/pcm"
	"switchboard/internal/vendorapi"
)

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

func testEndpoint() *vendorapi.Endpoint {
	e := Endpoint("test", secret, nil, nil, func(body []byte) (string, string, bool) {
		code, msg, ok := strings.Cut(string(body), ":")
		return code, msg, ok && strings.HasPrefix(string(body), "E")
	})
	return &e
}

// TestEndpoint checks the speech clients' reading of a context that ended
// and of a cause past its own deadline.
func TestEndpoint(t *testing.T) {
	e := testEndpoint()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ce := e.Failure(ctx, cloud.CodeNetwork, true, errors.New("read")); ce.Code != cloud.CodeCanceled || ce.Message != "canceled" || ce.Retryable {
		t.Errorf("Failure(canceled context) = %+v, want not retryable %q, message \"canceled\"", ce, cloud.CodeCanceled)
	}
	timedOut := fmt.Errorf("writing to the socket: %w", context.DeadlineExceeded)
	if ce := e.Wrap(cloud.CodeNetwork, true, timedOut); ce.Code != cloud.CodeDeadline || !ce.Retryable || !errors.Is(ce, context.DeadlineExceeded) {
		t.Errorf("Wrap(timed-out write) = %+v, want retryable %q", ce, cloud.CodeDeadline)
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
	err := StreamPCM(context.Background(), testEndpoint(), resp, from, to, func(p []int16) error {
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
		err := StreamPCM(context.Background(), testEndpoint(), response("", strings.NewReader(string(body))), 24000, 16000, func(p []int16) error {
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
