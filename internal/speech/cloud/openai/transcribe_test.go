package openai_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/openai"
	"switchboard/internal/speech/cloud/speechtest"
	"switchboard/internal/vendorapi/vendorapitest"
)

const rate = 16000

type transBundle struct {
	srv *speechtest.Server
	tr  *openai.Transcriber
}

func setupTranscriber(t *testing.T, script ...speechtest.Transcription) *transBundle {
	t.Helper()
	srv := speechtest.NewOpenAITranscription(t, script...)
	return &transBundle{srv: srv, tr: openai.NewTranscriber(srv.URL, speechtest.APIKey, srv.Client())}
}

func (b *transBundle) start(t *testing.T, ctx context.Context, opts speech.TranscribeOptions) speech.TranscribeStream {
	t.Helper()
	if opts.SampleRate == 0 {
		opts.SampleRate = rate
	}
	s, err := b.tr.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start(%+v): %v", opts, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// speak writes audio in 20 ms frames.
func speak(t *testing.T, s speech.TranscribeStream, audio []int16) {
	t.Helper()
	for frame := range slices.Chunk(audio, rate/50) {
		if err := s.Write(frame); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
}

// next reads one result, failing after 5 s or if Results closes.
func next(t *testing.T, s speech.TranscribeStream) speech.Transcript {
	t.Helper()
	select {
	case tr, ok := <-s.Results():
		if !ok {
			t.Fatalf("Results closed: %v", s.Err())
		}
		return tr
	case <-time.After(5 * time.Second):
		t.Fatalf("no result within 5 s")
	}
	return speech.Transcript{}
}

// ended waits for Results to close and returns Err.
func ended(t *testing.T, s speech.TranscribeStream, within time.Duration) error {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case tr, ok := <-s.Results():
			if !ok {
				return s.Err()
			}
			t.Errorf("unexpected result %+v", tr)
		case <-timeout:
			t.Fatalf("Results still open after %v", within)
		}
	}
}

func TestTranscribeUtterances(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t,
		speechtest.Transcription{Text: " I'd like to book a table. "},
		speechtest.Transcription{Text: "For four."},
	)
	s := b.start(t, t.Context(), speech.TranscribeOptions{Language: "en-US", Hints: []string{"yes", "no", "yes", " "}})
	first := speechtest.Tone(rate, time.Second)
	speak(t, s, first)
	select {
	case tr := <-s.Results():
		t.Fatalf("result %+v before Finish, want none (no partials)", tr)
	default:
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	second := speechtest.Tone(rate, 300*time.Millisecond)
	speak(t, s, second)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish (second): %v", err)
	}
	for _, want := range []string{"I'd like to book a table.", "For four."} {
		if tr := next(t, s); !tr.Final || tr.Text != want {
			t.Errorf("result = %+v, want the final %q", tr, want)
		}
	}
	if err := s.Close(); err != nil || s.Err() != nil {
		t.Errorf("Close = %v, Err = %v; want nil, nil", err, s.Err())
	}

	reqs := b.srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server got %d uploads, want 2", len(reqs))
	}
	r := reqs[0]
	if auth := r.Header.Get("Authorization"); auth != "Bearer "+speechtest.APIKey {
		t.Errorf("Authorization = %q, want Bearer <key>", auth)
	}
	wantFields := map[string]string{"model": "whisper-1", "language": "en", "response_format": "json", "prompt": "yes, no"}
	for k, v := range wantFields {
		if r.Fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, r.Fields[k], v)
		}
	}
	if r.SampleRate != rate || !slices.Equal(r.Audio, first) {
		t.Errorf("first upload: %d samples at %d Hz, want the %d written at %d Hz", len(r.Audio), r.SampleRate, len(first), rate)
	}
	if !slices.Equal(reqs[1].Audio, second) {
		t.Errorf("second upload: %d samples, want only the second utterance's %d", len(reqs[1].Audio), len(second))
	}
}

func TestTranscribeShortUtteranceSendsNothing(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t)
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	speak(t, s, speechtest.Tone(rate, 60*time.Millisecond))
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if tr := next(t, s); !tr.Final || tr.Text != "" {
		t.Errorf("result of a 60 ms utterance = %+v, want an empty final", tr)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Errorf("server got %d uploads, want none (OpenAI refuses under 0.1 s)", n)
	}
}

func TestTranscribeKeepsTheLastMaxUtterance(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, speechtest.Transcription{Text: "ok"})
	b.tr.MaxUtterance = 200 * time.Millisecond
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	audio := make([]int16, rate/2) // 500 ms of a ramp
	for i := range audio {
		audio[i] = int16(i)
	}
	speak(t, s, audio)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	next(t, s)
	got := b.srv.Requests()[0].Audio
	if want := audio[len(audio)-rate/5:]; !slices.Equal(got, want) {
		t.Errorf("upload of an utterance past MaxUtterance: %d samples from %d, want the last %d from %d", len(got), got[0], len(want), want[0])
	}
	if d := s.(*openai.Stream).Dropped(); d != uint64(len(audio)-rate/5) {
		t.Errorf("Dropped() = %d, want %d", d, len(audio)-rate/5)
	}
}

func TestTranscribeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		turn       speechtest.Transcription
		timeout    time.Duration
		status     int
		code       string
		temporary  bool
		retryAfter time.Duration
	}{
		{"rate limited", speechtest.Transcription{Status: 429, RetryAfter: "4"}, 0, 429, "rate_limit_exceeded", true, 4 * time.Second},
		{"server error", speechtest.Transcription{Status: 500}, 0, 500, "server_error", true, 0},
		{"bad request", speechtest.Transcription{Status: 400}, 0, 400, "invalid_request_error", false, 0},
		{"too slow", speechtest.Transcription{Hang: true}, 100 * time.Millisecond, 0, cloud.CodeDeadline, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupTranscriber(t, tt.turn)
			b.tr.Timeout = tt.timeout
			s := b.start(t, t.Context(), speech.TranscribeOptions{})
			speak(t, s, speechtest.Tone(rate, 300*time.Millisecond))
			if err := s.Finish(); err != nil {
				t.Fatalf("Finish: %v", err)
			}
			err := ended(t, s, 5*time.Second)
			ce := vendorapitest.AsError(t, err)
			if ce.Status != tt.status || ce.Code != tt.code || ce.Temporary() != tt.temporary || ce.RetryDelay() != tt.retryAfter {
				t.Errorf("Err = %+v; want status %d, code %q, Temporary %v, RetryDelay %v", ce, tt.status, tt.code, tt.temporary, tt.retryAfter)
			}
			if ferr := s.Finish(); !errors.Is(ferr, err) {
				t.Errorf("Finish after the stream failed = %v, want its error", ferr)
			}
		})
	}
}

func TestTranscribeKeys(t *testing.T) {
	t.Parallel()
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		srv := speechtest.NewOpenAITranscription(t)
		const secret = "sk-proj-wrong-91c0ffee4242"
		s, err := openai.NewTranscriber(srv.URL, secret, srv.Client()).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer s.Close()
		speak(t, s, speechtest.Tone(rate, 200*time.Millisecond))
		s.Finish()
		err = ended(t, s, 5*time.Second)
		ce := vendorapitest.AsError(t, err)
		if ce.Status != http.StatusUnauthorized || ce.Temporary() || ce.Code != "invalid_api_key" {
			t.Errorf("Err with a wrong key = %+v, want 401 invalid_api_key, not temporary", ce)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Err with a wrong key: %q contains the key", err)
		}
	})
	t.Run("local server, no key", func(t *testing.T) {
		t.Parallel()
		srv := speechtest.NewOpenAITranscription(t, speechtest.Transcription{Text: "hello"})
		srv.AllowNoKey()
		s, err := openai.NewTranscriber(srv.URL, "", srv.Client()).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate, Language: "yue-HK", Model: "large-v3"})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		defer s.Close()
		speak(t, s, speechtest.Tone(rate, 200*time.Millisecond))
		s.Finish()
		if tr := next(t, s); tr.Text != "hello" {
			t.Errorf("result = %+v, want hello", tr)
		}
		r := srv.Requests()[0]
		if _, ok := r.Header["Authorization"]; ok {
			t.Errorf("request carried Authorization %q with no key configured", r.Header.Get("Authorization"))
		}
		if _, ok := r.Fields["language"]; ok || r.Fields["model"] != "large-v3" {
			t.Errorf("fields = %v; want no language for yue-HK (no ISO-639-1 code) and model large-v3", r.Fields)
		}
	})
}

func TestTranscribeRefusesBeforeSending(t *testing.T) {
	t.Parallel()
	srv := speechtest.NewOpenAITranscription(t)
	_, err := openai.NewTranscriber(srv.URL, speechtest.APIKey, srv.Client()).Start(t.Context(), speech.TranscribeOptions{})
	if ce := vendorapitest.AsError(t, err); ce.Code != cloud.CodeInvalidRequest || !strings.Contains(ce.Message, "sampleRate") {
		t.Errorf("Start without a sample rate = %+v, want %q naming sampleRate", ce, cloud.CodeInvalidRequest)
	}
	_, err = openai.NewTranscriber("not a url", "", nil).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
	if ce := vendorapitest.AsError(t, err); ce.Code != cloud.CodeConfig {
		t.Errorf("Start with a bad base URL = %+v, want %q", ce, cloud.CodeConfig)
	}
	if got := openai.NewTranscriber("", "", nil).Name(); got != "openai" {
		t.Errorf("Name() = %q, want openai", got)
	}
}

func TestTranscribeCloseAbandonsUploads(t *testing.T) {
	t.Parallel()
	b := setupTranscriber(t, speechtest.Transcription{Hang: true})
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	speak(t, s, speechtest.Tone(rate, 200*time.Millisecond))
	s.Finish()
	time.Sleep(50 * time.Millisecond) // the upload is in flight
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with an upload in flight, want promptly", d)
	}
	if err := ended(t, s, time.Second); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}
	if err := s.Write(make([]int16, 320)); !errors.Is(err, cloud.ErrStreamClosed) {
		t.Errorf("Write after Close = %v, want cloud.ErrStreamClosed", err)
	}
}

// TestTranscribeCancel is not parallel: it counts goroutines.
func TestTranscribeCancel(t *testing.T) {
	speechtest.LeakCheck(t)
	b := setupTranscriber(t, speechtest.Transcription{Hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := b.start(t, ctx, speech.TranscribeOptions{})
	speak(t, s, speechtest.Tone(rate, 200*time.Millisecond))
	s.Finish()
	time.Sleep(50 * time.Millisecond)
	cancel()
	start := time.Now()
	err := ended(t, s, time.Second)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("Results closed %v after the cancel, want promptly", d)
	}
	ce := vendorapitest.AsError(t, err)
	if !errors.Is(err, context.Canceled) || ce.Temporary() || ce.Code != cloud.CodeCanceled {
		t.Errorf("Err after cancel = %+v, want context.Canceled, not temporary", ce)
	}
}
