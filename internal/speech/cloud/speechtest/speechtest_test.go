package speechtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// recorder catches the failures a fake reports, so a test can assert that
// a malformed request is caught.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) failures() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

func post(t *testing.T, url, contentType string, header map[string]string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func upload(fields map[string]string, file []byte, filename string) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	if file != nil {
		fw, _ := mw.CreateFormFile("file", filename)
		fw.Write(file)
	}
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

func goodWAV(rate, n int) []byte {
	var raw []byte
	for range n {
		raw = append(raw, 1, 0)
	}
	h := []byte("RIFF")
	h = appendU32(h, uint32(36+len(raw)))
	h = append(h, "WAVEfmt "...)
	h = appendU32(h, 16)
	h = append(h, 1, 0, 1, 0)
	h = appendU32(h, uint32(rate))
	h = appendU32(h, uint32(2*rate))
	h = append(h, 2, 0, 16, 0)
	h = append(h, "data"...)
	h = appendU32(h, uint32(len(raw)))
	return append(h, raw...)
}

func appendU32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}

func TestFakesCatchMalformedRequests(t *testing.T) {
	bearer := map[string]string{"Authorization": "Bearer " + APIKey}
	wav := goodWAV(16000, 3200)
	badSize := goodWAV(16000, 3200)
	badSize[40]++ // data size no longer matches
	cases := []struct {
		name  string
		start func(tb testing.TB) *Server
		send  func(t *testing.T, srv *Server) *http.Response
	}{
		{"transcription: BCP 47 language", func(tb testing.TB) *Server { return NewOpenAITranscription(tb, Transcription{Text: "x"}) },
			func(t *testing.T, srv *Server) *http.Response {
				body, ct := upload(map[string]string{"model": "whisper-1", "language": "en-US"}, wav, "a.wav")
				return post(t, srv.URL+"/audio/transcriptions", ct, bearer, body)
			}},
		{"transcription: WAV data size wrong", func(tb testing.TB) *Server { return NewOpenAITranscription(tb, Transcription{Text: "x"}) },
			func(t *testing.T, srv *Server) *http.Response {
				body, ct := upload(map[string]string{"model": "whisper-1"}, badSize, "a.wav")
				return post(t, srv.URL+"/audio/transcriptions", ct, bearer, body)
			}},
		{"transcription: no model, mp3 name", func(tb testing.TB) *Server { return NewOpenAITranscription(tb, Transcription{Text: "x"}) },
			func(t *testing.T, srv *Server) *http.Response {
				body, ct := upload(nil, wav, "a.mp3")
				return post(t, srv.URL+"/audio/transcriptions", ct, bearer, body)
			}},
		{"speech: mp3 asked", func(tb testing.TB) *Server { return NewOpenAISpeech(tb, Speech{}) },
			func(t *testing.T, srv *Server) *http.Response {
				return post(t, srv.URL+"/audio/speech", "application/json", bearer, []byte(`{"model":"tts-1","input":"hi","voice":"alloy","response_format":"mp3"}`))
			}},
		{"elevenlabs: unknown field and mp3", func(tb testing.TB) *Server { return NewElevenLabs(tb, Speech{}) },
			func(t *testing.T, srv *Server) *http.Response {
				return post(t, srv.URL+"/text-to-speech/21m00Tcm4TlvDq8ikWAM/stream?output_format=mp3_44100_128", "application/json",
					map[string]string{"xi-api-key": APIKey}, []byte(`{"text":"hi","model":"x"}`))
			}},
		{"deepgram speak: WAV container", func(tb testing.TB) *Server { return NewDeepgramSpeak(tb, Speech{}) },
			func(t *testing.T, srv *Server) *http.Response {
				return post(t, srv.URL+"/speak?model=aura-2-thalia-en&encoding=linear16&sample_rate=16000&container=wav", "application/json",
					map[string]string{"Authorization": "Token " + APIKey}, []byte(`{"text":"hi"}`))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			srv := c.start(rec)
			resp := c.send(t, srv)
			if resp.StatusCode < 400 || rec.failures() == 0 {
				t.Errorf("fake answered %d and reported %d failures, want a 4xx and a test failure", resp.StatusCode, rec.failures())
			}
		})
	}
	t.Run("a good upload passes", func(t *testing.T) {
		rec := &recorder{TB: t}
		srv := NewOpenAITranscription(rec, Transcription{Text: "x"})
		body, ct := upload(map[string]string{"model": "whisper-1", "language": "en", "response_format": "json"}, wav, "a.wav")
		if resp := post(t, srv.URL+"/audio/transcriptions", ct, bearer, body); resp.StatusCode != 200 || rec.failures() != 0 {
			t.Errorf("good upload: %d with failures %v", resp.StatusCode, rec.errs)
		}
		if r := srv.Requests()[0]; r.SampleRate != 16000 || len(r.Audio) != 3200 {
			t.Errorf("recorded upload: %d samples at %d Hz, want 3200 at 16000", len(r.Audio), r.SampleRate)
		}
	})
}

func TestDeepgramLiveCatchesMalformedSessions(t *testing.T) {
	dial := func(t *testing.T, srv *Server, query string) (*websocket.Conn, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		conn, _, err := websocket.Dial(ctx, srv.URL+"/listen?"+query, &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Token " + APIKey}},
		})
		return conn, err
	}
	t.Run("query without encoding", func(t *testing.T) {
		rec := &recorder{TB: t}
		srv := NewDeepgramLive(rec, Session{})
		if _, err := dial(t, srv, "sample_rate=16000&channels=1&bogus=1"); err == nil || rec.failures() == 0 {
			t.Errorf("handshake without encoding: err %v, %d failures; want refused and reported", err, rec.failures())
		}
	})
	t.Run("empty frame and unknown message", func(t *testing.T) {
		rec := &recorder{TB: t}
		srv := NewDeepgramLive(rec, Session{})
		conn, err := dial(t, srv, "encoding=linear16&sample_rate=16000&channels=1")
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer conn.CloseNow()
		conn.Write(t.Context(), websocket.MessageBinary, nil)
		conn.Write(t.Context(), websocket.MessageText, []byte(`{"type":"Flush"}`))
		conn.Write(t.Context(), websocket.MessageText, []byte(`{"type":"CloseStream"}`))
		for { // until the fake closes after CloseStream
			if _, _, err := conn.Read(t.Context()); err != nil {
				break
			}
		}
		if n := rec.failures(); n != 2 {
			t.Errorf("fake reported %d failures (%q), want 2: the empty frame and the unknown type", n, rec.errs)
		}
		if s := srv.Sessions()[0]; s.CloseStreams != 1 || s.Ended != "CloseStream" || !strings.Contains(s.Sent[len(s.Sent)-1], `"Metadata"`) {
			t.Errorf("session %+v: want CloseStream answered with Metadata", s)
		}
	})
}
