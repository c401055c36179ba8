package deepgram_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud"
	"switchboard/internal/speech/cloud/deepgram"
	"switchboard/internal/speech/cloud/speechtest"
	"switchboard/internal/vendorapi/vendorapitest"
)

const rate = 16000

type liveBundle struct {
	srv *speechtest.Server
	tr  *deepgram.Transcriber
}

func setupLive(t *testing.T, sessions ...speechtest.Session) *liveBundle {
	t.Helper()
	srv := speechtest.NewDeepgramLive(t, sessions...)
	return &liveBundle{srv: srv, tr: deepgram.NewTranscriber(srv.URL, speechtest.APIKey, srv.Client())}
}

func (b *liveBundle) start(t *testing.T, ctx context.Context, opts speech.TranscribeOptions) speech.TranscribeStream {
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

// speak writes d of audio in 20 ms frames.
func speak(t *testing.T, s speech.TranscribeStream, d time.Duration) {
	t.Helper()
	audio := speechtest.Tone(rate, d)
	for len(audio) > 0 {
		n := min(rate/50, len(audio))
		if err := s.Write(audio[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		audio = audio[n:]
	}
}

// until reads results until a final (returned with the partials before
// it), failing the test after 5 s.
func until(t *testing.T, s speech.TranscribeStream) (partials []string, final speech.Transcript) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case tr, ok := <-s.Results():
			if !ok {
				t.Fatalf("Results closed before a final (Err %v); partials %q", s.Err(), partials)
			}
			if tr.Final {
				return partials, tr
			}
			partials = append(partials, tr.Text)
		case <-timeout:
			t.Fatalf("no final within 5 s; partials %q", partials)
		}
	}
}

// ended waits for Results to close and returns Err.
func ended(t *testing.T, s speech.TranscribeStream, within time.Duration) error {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case _, ok := <-s.Results():
			if !ok {
				return s.Err()
			}
		case <-timeout:
			t.Fatalf("Results still open after %v", within)
		}
	}
}

func TestLiveFinish(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{Utterances: []speechtest.Utterance{
		{Text: "Book a table for four."},
		{Text: "Thanks."},
	}})
	s := b.start(t, t.Context(), speech.TranscribeOptions{Language: "en-US"})
	speak(t, s, 600*time.Millisecond)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	partials, final := until(t, s)
	wantPartials := []string{"Book", "Book a", "Book a table", "Book a table for", "Book a table for four."}
	if !slices.Equal(partials, wantPartials) {
		t.Errorf("partials = %q, want %q", partials, wantPartials)
	}
	if final.Text != "Book a table for four." || final.Confidence != 0.98 {
		t.Errorf("final = %+v, want %q at 0.98", final, "Book a table for four.")
	}
	// The stream stays open for the next utterance.
	speak(t, s, 200*time.Millisecond)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish (second utterance): %v", err)
	}
	if _, final := until(t, s); final.Text != "Thanks." {
		t.Errorf("second final = %q, want %q", final.Text, "Thanks.")
	}
	if err := s.Close(); err != nil || s.Err() != nil {
		t.Errorf("Close = %v, then Err = %v; want nil, nil", err, s.Err())
	}
	if err := ended(t, s, time.Second); err != nil {
		t.Errorf("Err after Close = %v, want nil", err)
	}

	sess := b.srv.Sessions()
	if len(sess) != 1 {
		t.Fatalf("%d sessions, want 1", len(sess))
	}
	got := sess[0]
	if auth := got.Header.Get("Authorization"); auth != "Token "+speechtest.APIKey {
		t.Errorf("Authorization = %q, want Token <key>", auth)
	}
	wantQuery := map[string]string{
		"model": "nova-3", "encoding": "linear16", "sample_rate": "16000", "channels": "1",
		"interim_results": "true", "punctuate": "true", "utterance_end_ms": "1000", "language": "en-US",
	}
	for k, v := range wantQuery {
		if q := got.Query[k]; len(q) != 1 || q[0] != v {
			t.Errorf("query %s = %q, want %q", k, q, v)
		}
	}
	if got.AudioBytes != 800*rate*2/1000 || got.Frames != 40 {
		t.Errorf("server got %d frames, %d bytes; want 40 frames, %d bytes", got.Frames, got.AudioBytes, 800*rate*2/1000)
	}
	if got.Finalizes != 2 || got.CloseStreams != 1 || got.Ended != "CloseStream" {
		t.Errorf("server got %d Finalize, %d CloseStream, ended %q; want 2, 1, CloseStream", got.Finalizes, got.CloseStreams, got.Ended)
	}
}

func TestLiveEndpointing(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{Utterances: []speechtest.Utterance{
		{Text: "Yes please.", Endpoint: true, Confidence: 0.9},
		{Text: "Seven thirty tonight.", SplitAt: 1, Endpoint: true, Confidence: 0.8},
		{Text: "On Tuesday.", UtteranceEnd: true, Confidence: 0.7},
	}})
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	speak(t, s, 800*time.Millisecond) // 2 + 3 + 2 words, no Finish: Deepgram's endpointing decides
	for _, want := range []struct {
		partials []string
		final    string
	}{
		{[]string{"Yes", "Yes please."}, "Yes please."},
		{[]string{"Seven", "Seven", "Seven thirty", "Seven thirty tonight."}, "Seven thirty tonight."},
		{[]string{"On", "On Tuesday.", "On Tuesday."}, "On Tuesday."},
	} {
		partials, final := until(t, s)
		if !slices.Equal(partials, want.partials) || final.Text != want.final {
			t.Errorf("results = %q then final %q; want %q then %q", partials, final.Text, want.partials, want.final)
		}
	}
}

func TestLiveKeepAlive(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{
		IdleTimeout: 300 * time.Millisecond,
		Utterances:  []speechtest.Utterance{{Text: "Still here."}},
	})
	b.tr.KeepAlive = 50 * time.Millisecond
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	time.Sleep(time.Second) // the caller is silent; the fake closes after 300 ms without audio or KeepAlive
	speak(t, s, 200*time.Millisecond)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish after a silence: %v", err)
	}
	if _, final := until(t, s); final.Text != "Still here." {
		t.Errorf("final after a silence = %q, want %q", final.Text, "Still here.")
	}
	sess := b.srv.Sessions()[0]
	if sess.KeepAlives < 5 || sess.Ended != "" {
		t.Errorf("after 1 s of silence: %d KeepAlives, session ended %q; want several and still open", sess.KeepAlives, sess.Ended)
	}
	for _, m := range sess.Messages {
		if m != `{"type":"KeepAlive"}` && m != `{"type":"Finalize"}` {
			t.Errorf("client sent %s, want only KeepAlive and Finalize", m)
		}
	}
}

func TestLiveServerCloses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		session   speechtest.Session
		keepAlive time.Duration
		code      string
		status    int
		retryable bool
	}{
		{
			name:      "idle timeout NET-0001",
			session:   speechtest.Session{IdleTimeout: 150 * time.Millisecond},
			keepAlive: time.Hour,
			code:      "NET-0001", status: 1011, retryable: true,
		},
		{
			name:    "socket dropped without a close frame",
			session: speechtest.Session{DropAfter: 5},
			code:    cloud.CodeNetwork, retryable: true,
		},
		{
			name:    "undecodable audio DATA-0000",
			session: speechtest.Session{CloseAfter: 3, CloseCode: websocket.StatusPolicyViolation, CloseReason: "DATA-0000"},
			code:    "DATA-0000", status: 1008, retryable: false,
		},
		{
			name:    "unexpected normal close",
			session: speechtest.Session{CloseAfter: 3, CloseCode: websocket.StatusNormalClosure},
			code:    cloud.CodeClosed, status: 1000, retryable: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupLive(t, tt.session)
			b.tr.KeepAlive = tt.keepAlive
			s := b.start(t, t.Context(), speech.TranscribeOptions{})
			if tt.keepAlive == 0 {
				// The server ends the stream mid-way: Write may start failing.
				for _, frame := range slices.Collect(slices.Chunk(speechtest.Tone(rate, 200*time.Millisecond), rate/50)) {
					s.Write(frame)
				}
			}
			err := ended(t, s, 3*time.Second)
			ce := vendorapitest.AsError(t, err)
			if ce.Code != tt.code || ce.Status != tt.status || ce.Temporary() != tt.retryable || ce.Provider != deepgram.Provider {
				t.Errorf("Err = %+v; want code %q, status %d, Temporary %v", ce, tt.code, tt.status, tt.retryable)
			}
			if werr := s.Write(make([]int16, 320)); !errors.Is(werr, err) {
				t.Errorf("Write after the stream failed = %v, want its error %v", werr, err)
			}
			if ferr := s.Finish(); !errors.Is(ferr, err) {
				t.Errorf("Finish after the stream failed = %v, want its error %v", ferr, err)
			}
		})
	}
}

func TestLiveHandshakeRefused(t *testing.T) {
	t.Parallel()
	t.Run("429", func(t *testing.T) {
		t.Parallel()
		b := setupLive(t, speechtest.Session{Status: http.StatusTooManyRequests, RetryAfter: "3"})
		_, err := b.tr.Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
		ce := vendorapitest.AsError(t, err)
		var rd interface{ RetryDelay() time.Duration }
		if !ce.Temporary() || ce.Status != 429 || ce.Code != "TOO_MANY_REQUESTS" || !errors.As(err, &rd) || rd.RetryDelay() != 3*time.Second {
			t.Errorf("Start refused with 429: %+v; want temporary, code TOO_MANY_REQUESTS, retry after 3s", ce)
		}
	})
	t.Run("503", func(t *testing.T) {
		t.Parallel()
		b := setupLive(t, speechtest.Session{Status: http.StatusServiceUnavailable})
		_, err := b.tr.Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
		if ce := vendorapitest.AsError(t, err); !ce.Temporary() || ce.Status != 503 {
			t.Errorf("Start refused with 503: %+v; want temporary", ce)
		}
	})
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		srv := speechtest.NewDeepgramLive(t)
		const secret = "dg-wrong-key-77aa01bc"
		_, err := deepgram.NewTranscriber(srv.URL, secret, srv.Client()).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
		ce := vendorapitest.AsError(t, err)
		if ce.Temporary() || ce.Status != 401 || ce.Code != "INVALID_AUTH" {
			t.Errorf("Start with a wrong key: %+v; want 401 INVALID_AUTH, not temporary", ce)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("Start with a wrong key: error %q contains the key", err)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		t.Parallel()
		srv := speechtest.NewDeepgramLive(t)
		srv.Close()
		_, err := deepgram.NewTranscriber(srv.URL, speechtest.APIKey, nil).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
		if ce := vendorapitest.AsError(t, err); !ce.Temporary() || ce.Code != cloud.CodeNetwork {
			t.Errorf("Start against a closed server: %+v; want a temporary %q", ce, cloud.CodeNetwork)
		}
	})
}

func TestLiveCloseDeliversTheRest(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{Utterances: []speechtest.Utterance{{Text: "one two three four five"}}})
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	speak(t, s, 300*time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	var got []speech.Transcript
	for tr := range s.Results() {
		got = append(got, tr)
	}
	if s.Err() != nil {
		t.Errorf("Err after Close = %v, want nil", s.Err())
	}
	if len(got) == 0 || !got[len(got)-1].Final || got[len(got)-1].Text != "one two three" {
		t.Errorf("results after Close = %+v, want them to end with the final %q", got, "one two three")
	}
	sess := b.srv.Sessions()[0]
	if sess.AudioBytes != 300*rate*2/1000 || sess.Ended != "CloseStream" {
		t.Errorf("server got %d bytes and ended %q; want all %d bytes before CloseStream", sess.AudioBytes, sess.Ended, 300*rate*2/1000)
	}
	if err := s.Write(make([]int16, 320)); !errors.Is(err, cloud.ErrStreamClosed) {
		t.Errorf("Write after Close = %v, want cloud.ErrStreamClosed", err)
	}
}

func TestLiveStalledSocket(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{StallAfter: 1})
	b.tr.QueueFrames = 4
	b.tr.WriteTimeout = 200 * time.Millisecond
	s := b.start(t, t.Context(), speech.TranscribeOptions{SampleRate: 48000})
	frame := make([]int16, 48000) // a second per write, to fill the socket buffers fast
	deadline := time.Now().Add(10 * time.Second)
	var werr error
	for time.Now().Before(deadline) {
		if werr = s.Write(frame); werr != nil {
			break
		}
		time.Sleep(time.Millisecond) // Write never blocks; this only paces the test
	}
	if werr == nil {
		t.Fatalf("Write kept succeeding for 10 s against a server that stopped reading")
	}
	ce := vendorapitest.AsError(t, werr)
	if !ce.Temporary() || ce.Code != cloud.CodeDeadline && ce.Code != cloud.CodeNetwork || !errors.Is(s.Err(), werr) {
		t.Errorf("stalled socket: Write = %+v, Err %v; want the stream's temporary %q (the write timed out)", ce, s.Err(), cloud.CodeDeadline)
	}
	if d := s.(*deepgram.Stream).Dropped(); d == 0 {
		t.Errorf("Dropped() = 0 after the socket stalled, want the oldest frames dropped and counted")
	}
}

func TestLiveHints(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{}, speechtest.Session{})
	hints := []string{"Tuesday", " ", "Wednesday"}
	b.start(t, t.Context(), speech.TranscribeOptions{Hints: hints}).Close()
	b.start(t, t.Context(), speech.TranscribeOptions{Hints: hints, Model: "nova-2-phonecall"}).Close()
	sess := b.srv.Sessions()
	if got := sess[0].Query["keyterm"]; !slices.Equal(got, []string{"Tuesday", "Wednesday"}) {
		t.Errorf("nova-3 keyterm = %q, want the hints", got)
	}
	if got := sess[1].Query["keywords"]; !slices.Equal(got, []string{"Tuesday", "Wednesday"}) || sess[1].Query["model"][0] != "nova-2-phonecall" {
		t.Errorf("nova-2 keywords = %q (model %q), want the hints", got, sess[1].Query["model"])
	}
}

func TestLiveRefusesBeforeDialing(t *testing.T) {
	t.Parallel()
	srv := speechtest.NewDeepgramLive(t)
	_, err := deepgram.NewTranscriber(srv.URL, speechtest.APIKey, srv.Client()).Start(t.Context(), speech.TranscribeOptions{})
	if ce := vendorapitest.AsError(t, err); ce.Code != cloud.CodeInvalidRequest || !strings.Contains(ce.Message, "sampleRate") {
		t.Errorf("Start without a sample rate: %+v, want %q naming sampleRate", ce, cloud.CodeInvalidRequest)
	}
	_, err = deepgram.NewTranscriber("ftp://example.com", "", nil).Start(t.Context(), speech.TranscribeOptions{SampleRate: rate})
	if ce := vendorapitest.AsError(t, err); ce.Code != cloud.CodeConfig {
		t.Errorf("Start with an ftp base URL: %+v, want %q", ce, cloud.CodeConfig)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server got %d requests, want none", n)
	}
	if got := deepgram.NewTranscriber("", "", nil).Name(); got != "deepgram" {
		t.Errorf("Name() = %q, want deepgram", got)
	}
}

func TestLiveEmptyWriteSendsNothing(t *testing.T) {
	t.Parallel()
	b := setupLive(t, speechtest.Session{})
	s := b.start(t, t.Context(), speech.TranscribeOptions{})
	for range 3 {
		if err := s.Write(nil); err != nil {
			t.Fatalf("Write(nil): %v", err)
		}
	}
	s.Close()
	if got := b.srv.Sessions()[0]; got.Frames != 0 {
		t.Errorf("server got %d frames after empty writes, want 0 (Deepgram closes on an empty frame)", got.Frames)
	}
}

// TestLiveCancel is not parallel: it counts goroutines.
func TestLiveCancel(t *testing.T) {
	speechtest.LeakCheck(t)
	b := setupLive(t, speechtest.Session{Utterances: []speechtest.Utterance{{Text: "Hold on a second"}}})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	s := b.start(t, ctx, speech.TranscribeOptions{})
	speak(t, s, 200*time.Millisecond)
	if _, ok := <-s.Results(); !ok {
		t.Fatalf("Results closed before the first partial: %v", s.Err())
	}
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
	if err := s.Close(); err != nil {
		t.Errorf("Close after cancel = %v", err)
	}
}
