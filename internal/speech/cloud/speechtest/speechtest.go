// Package speechtest provides fake speech providers that speak the wire
// protocols as the real services document them: Deepgram's live websocket
// (binary audio in; interim, final, UtteranceEnd and Metadata messages out;
// KeepAlive, Finalize and CloseStream understood; its 1011 NET-0001 idle
// close) and its Aura endpoint, OpenAI's transcription upload (multipart
// with a WAV, parsed strictly) and speech endpoint, and ElevenLabs'
// streamed speech. Each fake checks the key and the request like the real
// API, answers a wrong key with the provider's 401 (echoing the key, so
// tests prove the clients never do), records what it received, streams
// audio in several chunks, and fails the test on a malformed request.
//
// ExerciseSynthesizer is the behavioural suite every speech.Synthesizer
// passes against its fake.
package speechtest

import (
	"encoding/binary"
	"math"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"switchboard/internal/vendorapi/vendorapitest"
)

// APIKey is the key every fake accepts.
const APIKey = "speechtest-key-5d8a2c91f0b7e4"

// Speech scripts a speech endpoint's answer to one request: by default
// DefaultDuration of a tone at the rate the request asked for, streamed in
// DefaultChunks pieces DefaultInterval apart.
type Speech struct {
	// Audio, when set, is sent instead of the tone (at the reply's rate).
	Audio []int16
	// Duration of the tone; 0 means DefaultDuration.
	Duration time.Duration
	// Chunks is how many pieces the body is written in (0 means
	// DefaultChunks). The pieces are cut on byte boundaries, not sample
	// ones, as a network would cut them.
	Chunks int
	// Interval is waited between pieces (0 means DefaultInterval).
	Interval time.Duration
	// Gate, when set, holds the reply after its first piece until it is
	// closed: a test that receives audio while the gate is shut has proved
	// the client streams.
	Gate <-chan struct{}
	// Status, when set, answers with that status and the provider's error
	// body instead of audio; RetryAfter is then sent verbatim as the
	// Retry-After header.
	Status     int
	RetryAfter string
	// ContentType overrides the reply's content type (to play a server
	// that answers MP3 or JSON).
	ContentType string
	// Abort cuts the connection after half the pieces, the way a dropped
	// connection looks to the client.
	Abort bool
	// Hang keeps the body open after the audio until the client leaves or
	// the server closes: the case for cancellation.
	Hang bool
}

// Defaults of a Speech turn.
const (
	DefaultDuration = 600 * time.Millisecond
	DefaultChunks   = 5
	DefaultInterval = 5 * time.Millisecond
)

// Request is what a fake received, for assertions.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	// Body is the raw body (JSON for speech, multipart for transcription).
	Body []byte
	// Fields are a transcription upload's text fields; Audio and
	// SampleRate its WAV file, decoded.
	Fields     map[string]string
	Audio      []int16
	SampleRate int
	// Rate is the sample rate a speech reply was produced at.
	Rate int
}

// Server is a fake provider over a real HTTP server on loopback.
type Server struct {
	// URL is the base URL to give the client's constructor; it ends in /v1.
	URL string

	t    testing.TB
	fake *vendorapitest.Server

	mu       sync.Mutex
	speech   []Speech
	trans    []Transcription
	sessions []Session
	next     int
	requests []Request
	live     []*LiveSession
	noKey    bool
}

// maxRequestBody bounds what a fake reads from a client (a minute of
// 48 kHz audio fits).
const maxRequestBody = 16 << 20

func newServer(t testing.TB, handler func(s *Server) http.Handler) *Server {
	t.Helper()
	s := &Server{t: t}
	s.fake = vendorapitest.NewServer(t, handler(s))
	s.URL = s.fake.URL + "/v1"
	return s
}

// Client returns an HTTP client with its own transport, whose idle
// connections are closed when the test ends (before LeakCheck counts).
func (s *Server) Client() *http.Client {
	tr := &http.Transport{}
	s.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// Requests returns the requests received so far, in order, including those
// the fake refused.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close ends every stream and socket still open and shuts the server down.
// It is safe to call twice; tests need not call it at all.
func (s *Server) Close() { s.fake.Close() }

// record reads the body (bounded) and records the request; it returns the
// request's index for later updates.
func (s *Server) record(r *http.Request) (int, []byte, error) {
	body, err := vendorapitest.ReadBody(r, maxRequestBody)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body,
	})
	return len(s.requests) - 1, body, err
}

// update changes a recorded request.
func (s *Server) update(i int, f func(*Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.requests[i])
}

// takeSpeech consumes the next turn of a speech script.
func (s *Server) takeSpeech() (Speech, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.speech) {
		return Speech{}, false
	}
	s.next++
	return s.speech[s.next-1], true
}

// streamSpeech writes turn's audio at rate as the body of a 200, in pieces.
func (s *Server) streamSpeech(w http.ResponseWriter, r *http.Request, turn Speech, rate int, contentType string) {
	audio := turn.Audio
	if audio == nil {
		audio = Tone(rate, cmp(turn.Duration, DefaultDuration))
	}
	raw := make([]byte, 0, 2*len(audio))
	for _, v := range audio {
		raw = binary.LittleEndian.AppendUint16(raw, uint16(v))
	}
	if turn.ContentType != "" {
		contentType = turn.ContentType
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	pieces := split(raw, cmp(turn.Chunks, DefaultChunks))
	for i, p := range pieces {
		if i > 0 && !s.fake.Wait(r.Context(), cmp(turn.Interval, DefaultInterval)) {
			return
		}
		if turn.Abort && i == len(pieces)/2 {
			panic(http.ErrAbortHandler)
		}
		if _, err := w.Write(p); err != nil || rc.Flush() != nil {
			return
		}
		if i == 0 && turn.Gate != nil {
			select {
			case <-turn.Gate:
			case <-r.Context().Done():
				return
			case <-s.fake.Done():
				return
			}
		}
	}
	if turn.Hang {
		s.fake.Hang(r.Context())
	}
}

// split cuts b into n pieces of about equal size, on byte boundaries.
func split(b []byte, n int) [][]byte {
	n = max(1, min(n, len(b)))
	var out [][]byte
	size := (len(b) + n - 1) / n
	if size%2 == 0 && size > 1 {
		size-- // make most cuts fall inside a sample
	}
	for len(b) > 0 {
		k := min(size, len(b))
		out = append(out, b[:k])
		b = b[k:]
	}
	return out
}

// Tone is d of a 440 Hz sine at rate, amplitude 8000: the fakes' speech.
func Tone(rate int, d time.Duration) []int16 {
	n := int(int64(rate) * int64(d) / int64(time.Second))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
	}
	return out
}

func cmp[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// LeakCheck fails the test if goroutines started after the call are still
// running shortly after the test's cleanups (which close the fakes). Call
// it first, and not from a parallel test: it counts every goroutine of the
// process.
func LeakCheck(tb testing.TB) {
	tb.Helper()
	before := runtime.NumGoroutine()
	tb.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				tb.Errorf("goroutine leak: %d goroutines before the test, %d after:\n%s", before, runtime.NumGoroutine(), buf[:n])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
