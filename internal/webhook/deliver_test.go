package webhook

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// received is what a test receiver saw of one delivery.
type received struct {
	header http.Header
	body   []byte
}

// testBundle is a loopback receiver and a Sender allowed to reach it.
type testBundle struct {
	srv    *httptest.Server
	got    chan received
	sender *Sender
	msg    Message
}

func setup(t *testing.T, respond http.HandlerFunc) *testBundle {
	t.Helper()
	b := &testBundle{got: make(chan received, 1)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case b.got <- received{header: r.Header.Clone(), body: body}:
		default:
		}
		respond(w, r)
	}))
	t.Cleanup(b.srv.Close)
	b.sender = &Sender{Client: &http.Client{Transport: Guard{AllowPrivate: true}.Transport()}}
	m, err := NewMessage("call.ended", time.Date(2026, 3, 1, 14, 5, 9, 0, time.UTC), map[string]any{"call_id": "call_x", "duration_s": 42})
	if err != nil {
		t.Fatalf("NewMessage: %v", err)
	}
	b.msg = m
	return b
}

func TestDeliverSuccessIsSignedAndVerifiable(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	secrets := []string{NewSecret()}

	res := b.sender.Deliver(context.Background(), b.srv.URL+"/hook", secrets, b.msg)
	if !res.OK() || res.Status != 200 || res.Body != "ok" || res.Duration <= 0 {
		t.Fatalf("Deliver(200 server) = %+v, want OK, status 200, body \"ok\", duration > 0", res)
	}
	got := <-b.got
	for name, want := range map[string]string{
		"Content-Type": "application/json",
		"User-Agent":   UserAgent,
		HeaderID:       b.msg.ID,
	} {
		if v := got.header.Get(name); v != want {
			t.Errorf("Deliver sent %s = %q, want %q", name, v, want)
		}
	}
	if string(got.body) != string(b.msg.Body) {
		t.Errorf("Deliver sent body %q, want %q", got.body, b.msg.Body)
	}
	if err := Verify(secrets, got.header, got.body, time.Now(), 0); err != nil {
		t.Errorf("Verify(delivered request) = %v, want nil", err)
	}
	if err := Verify([]string{NewSecret()}, got.header, got.body, time.Now(), 0); err == nil {
		t.Errorf("Verify(delivered request, unrelated secret) = nil, want ErrNoMatch")
	}
}

func TestDeliverDuringRotationVerifiesWithEitherSecret(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	oldSecret, newSecret := NewSecret(), NewSecret()

	res := b.sender.Deliver(context.Background(), b.srv.URL, []string{oldSecret, newSecret}, b.msg)
	if !res.OK() || res.Status != http.StatusAccepted {
		t.Fatalf("Deliver(202 server) = %+v, want OK with 202", res)
	}
	got := <-b.got
	if n := len(strings.Fields(got.header.Get(HeaderSignature))); n != 2 {
		t.Errorf("Deliver with 2 secrets sent %d signatures (%q), want 2", n, got.header.Get(HeaderSignature))
	}
	for _, s := range []string{oldSecret, newSecret} {
		if err := Verify([]string{s}, got.header, got.body, time.Now(), 0); err != nil {
			t.Errorf("Verify(delivery signed with old+new, one secret) = %v, want nil", err)
		}
	}
}

func TestDeliverFailures(t *testing.T) {
	t.Parallel()
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { targetHits.Add(1) }))
	t.Cleanup(target.Close)

	tests := []struct {
		name       string
		respond    http.HandlerFunc
		wantStatus int
		wantErr    string
		wantBody   string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "boom", http.StatusInternalServerError)
		}, 500, "500 Internal Server Error", "boom\n"},
		{"not found", func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }, 404, "404", "404 page not found\n"},
		{"gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) }, 410, "410 Gone", ""},
		{"redirect 302", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
		}, 302, "redirects are not followed", ""},
		{"redirect 307", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", target.URL)
			w.WriteHeader(http.StatusTemporaryRedirect)
		}, 307, "redirects are not followed", ""},
		{"redirect 308", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", target.URL)
			w.WriteHeader(http.StatusPermanentRedirect)
		}, 308, "update the endpoint URL", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.respond)
			res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
			if res.OK() || res.Status != tt.wantStatus || !strings.Contains(res.Err, tt.wantErr) {
				t.Errorf("Deliver(%s) = %+v, want failure with status %d and Err containing %q", tt.name, res, tt.wantStatus, tt.wantErr)
			}
			if tt.wantBody != "" && !strings.HasPrefix(res.Body, tt.wantBody) {
				t.Errorf("Deliver(%s).Body = %q, want prefix %q", tt.name, res.Body, tt.wantBody)
			}
		})
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect targets got %d requests, want 0 (redirects must not be followed)", n)
	}
}

func TestDeliverTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done(): // the sender gave up and closed the connection
		case <-time.After(10 * time.Second):
		}
	})
	b.sender.Timeout = 100 * time.Millisecond

	res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
	if res.OK() || res.Status != 0 || !strings.Contains(res.Err, "timed out after 100ms") {
		t.Errorf("Deliver(hung server, 100ms) = %+v, want failure, status 0, Err \"timed out after 100ms\"", res)
	}
	if res.Duration < 100*time.Millisecond || res.Duration > 5*time.Second {
		t.Errorf("Deliver(hung server, 100ms).Duration = %v, want about 100ms", res.Duration)
	}
}

func TestDeliverKeepsTwoKiBOfAnswer(t *testing.T) {
	t.Parallel()
	// 2047 ASCII bytes then 3-byte runes: the 2 KiB cut falls inside a rune.
	answer := strings.Repeat("x", 2047) + strings.Repeat("€", 40000)
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, answer)
	})
	res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
	if res.Status != 400 || len(res.Body) != 2047 || !utf8.ValidString(res.Body) {
		t.Errorf("Deliver(120 KB answer) = status %d, body %d bytes (valid UTF-8 %v); want 400, 2047 bytes, valid",
			res.Status, len(res.Body), utf8.ValidString(res.Body))
	}
}

func TestDeliverZeroSenderRefusesPrivateEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	res := (&Sender{}).Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
	if res.OK() || res.Status != 0 || !strings.Contains(res.Err, "refused") || !strings.Contains(res.Err, "loopback") {
		t.Errorf("Sender{}.Deliver(loopback %s) = %+v, want refusal mentioning loopback", b.srv.URL, res)
	}
	select {
	case <-b.got:
		t.Errorf("Sender{}.Deliver(loopback) reached the server, want refusal before connecting")
	default:
	}
}

func TestDeliverRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	tests := []struct {
		name, url string
		secrets   []string
		msgID     string
		wantErr   string
	}{
		{"no secret", b.srv.URL, nil, b.msg.ID, "secret"},
		{"bad message id", b.srv.URL, []string{NewSecret()}, "msg.1", "message id"},
		{"bad url", "http://%zz", []string{NewSecret()}, b.msg.ID, "invalid endpoint URL"},
		{"non-http scheme", "ftp://127.0.0.1/", []string{NewSecret()}, b.msg.ID, "unsupported protocol scheme"},
	}
	for _, tt := range tests {
		m := b.msg
		m.ID = tt.msgID
		res := b.sender.Deliver(context.Background(), tt.url, tt.secrets, m)
		if res.OK() || !strings.Contains(res.Err, tt.wantErr) {
			t.Errorf("Deliver(%s) = %+v, want Err containing %q", tt.name, res, tt.wantErr)
		}
	}
	select {
	case <-b.got:
		t.Errorf("Deliver with bad input reached the server")
	default:
	}
}

func TestNewMessage(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 15, 5, 9, 123e6, time.FixedZone("CET", 3600))
	m, err := NewMessage("call.ended", at, map[string]string{"call_id": "call_x"})
	if err != nil {
		t.Fatalf("NewMessage(call.ended) error = %v", err)
	}
	if !strings.HasPrefix(m.ID, "msg_") || strings.Contains(m.ID, ".") {
		t.Errorf("NewMessage().ID = %q, want msg_ prefix and no '.'", m.ID)
	}
	want := `{"type":"call.ended","timestamp":"2026-03-01T14:05:09.123Z","data":{"call_id":"call_x"}}`
	if string(m.Body) != want {
		t.Errorf("NewMessage(call.ended).Body = %s, want %s", m.Body, want)
	}
	if m.Type != "call.ended" || !m.Timestamp.Equal(at) {
		t.Errorf("NewMessage() = type %q, timestamp %v; want call.ended, %v", m.Type, m.Timestamp, at)
	}
	other, _ := NewMessage("call.ended", at, nil)
	if other.ID == m.ID {
		t.Errorf("NewMessage() returned id %q twice", m.ID)
	}
	var decoded map[string]any
	if err := json.Unmarshal(other.Body, &decoded); err != nil || decoded["data"] != nil {
		t.Errorf("NewMessage(nil data).Body = %s (%v), want data null", other.Body, err)
	}

	for _, bad := range []string{"", "call.", ".ended", "call..ended", "call-ended", "call.ended ", "call/ended"} {
		if _, err := NewMessage(bad, at, nil); err == nil {
			t.Errorf("NewMessage(%q) error = nil, want invalid event type", bad)
		}
	}
	if _, err := NewMessage("call.ended", at, func() {}); err == nil {
		t.Errorf("NewMessage(unencodable data) error = nil, want error")
	}
}

// gzipped compresses b.
func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDeliverAnswerExcerpt: the delivery log shows what a receiver answered
// as printable text, whatever bytes the answer holds, so an integrator can
// read it and the store can keep it.
func TestDeliverAnswerExcerpt(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4096)
	rand.NewChaCha8([32]byte{1, 2, 3}).Read(random)
	tests := []struct {
		name   string
		header map[string]string
		body   []byte
		want   string // the whole excerpt
	}{
		{"text", nil, []byte("ok"), "ok"},
		{"empty", nil, nil, ""},
		{"json with newlines and tabs", nil, []byte("{\n\t\"ok\": true\n}\n"), "{\n\t\"ok\": true\n}\n"},
		{"NUL in text", nil, []byte("accepted\x00id=42"), `accepted\x00id=42`},
		{"invalid UTF-8", nil, []byte("re\xe7u \xff ok"), `re\xe7u \xff ok`},
		{"lone surrogate", nil, []byte("a\xed\xa0\x80b"), `a\xed\xa0\x80b`},
		{"terminal escape", nil, []byte("\x1b[31mred\x1b[0m"), `\x1b[31mred\x1b[0m`},
		{"CRLF lines", nil, []byte("line one\r\nline two\rover"), "line one\nline two\\x0dover"},
		{"C1 control and DEL", nil, []byte("a\u0085b\x7fc é €"), `a\u0085b\x7fc é €`},
		{"replacement character kept", nil, []byte("a\uFFFDb"), "a\uFFFDb"},
		{"binary", map[string]string{"Content-Type": "application/octet-stream"}, random,
			fmt.Sprintf("<binary answer: 4096 bytes, application/octet-stream, starting % x …>", random[:16])},
		{"short binary", nil, []byte("ok\x00\x01\x02\xff"), `ok\x00\x01\x02\xff`}, // under 32 bytes: shown escaped
		{"binary without Content-Type", map[string]string{"Content-Type": ""}, random[:32],
			fmt.Sprintf("<binary answer: 32 bytes, starting % x …>", random[:16])},
		{"endless binary", nil, bytes.Repeat(random, 20),
			fmt.Sprintf("<binary answer: more than 65536 bytes, application/octet-stream, starting % x …>", random[:16])},
		{"gzip text", map[string]string{"Content-Encoding": "gzip"}, gzipped(t, []byte(`{"received":true}`)), `{"received":true}`},
		{"x-gzip text", map[string]string{"Content-Encoding": "x-gzip"}, gzipped(t, []byte("thanks")), "thanks"},
		{"gzip binary", map[string]string{"Content-Encoding": "gzip", "Content-Type": "image/png"}, gzipped(t, random[:100]),
			fmt.Sprintf("<binary answer: 100 bytes, image/png, starting % x …>", random[:16])},
		{"corrupt gzip", map[string]string{"Content-Encoding": "gzip"}, []byte("not gzip at all"),
			"<gzip answer that could not be decoded: gzip: invalid header>"},
		{"brotli", map[string]string{"Content-Encoding": "br"}, random[:300], "<br-encoded answer: 300 bytes, not decoded>"},
		{"hostile content type", map[string]string{"Content-Type": "x/\xff\xfe"}, random[:40],
			fmt.Sprintf(`<binary answer: 40 bytes, x/\xff\xfe, starting % x …>`, random[:16])},
		{"long text", nil, []byte(strings.Repeat("0123456789\x00", 10000)), strings.Repeat(`0123456789\x00`, 146) + "0123"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header()[k] = []string{v}
				}
				w.Write(tt.body)
			})
			res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
			if !res.OK() || res.Status != 200 {
				t.Fatalf("Deliver(%s) = %+v, want OK with 200", tt.name, res)
			}
			if res.Body != tt.want {
				t.Errorf("Deliver(%s).Body = %q, want %q", tt.name, res.Body, tt.want)
			}
			checkPrintable(t, "Deliver("+tt.name+").Body", res.Body)
		})
	}
}

// checkPrintable fails unless s is what the delivery log may hold: valid
// UTF-8, at most 2 KiB, no control character but newline and tab.
func checkPrintable(t *testing.T, what, s string) {
	t.Helper()
	if !utf8.ValidString(s) || len(s) > 2048 {
		t.Errorf("%s = %d bytes, valid UTF-8 %v; want valid UTF-8 of at most 2048 bytes", what, len(s), utf8.ValidString(s))
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			t.Errorf("%s contains control character %U: %q", what, r, s)
			return
		}
	}
}

// TestDeliverAsksForNoCompression: deliveries ask for an uncompressed
// answer, since only its first 2 KiB are kept.
func TestDeliverAsksForNoCompression(t *testing.T) {
	t.Parallel()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {})
	if res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg); !res.OK() {
		t.Fatalf("Deliver = %+v, want OK", res)
	}
	if got := (<-b.got).header.Get("Accept-Encoding"); got != "identity" {
		t.Errorf("Deliver sent Accept-Encoding %q, want identity", got)
	}
}

// TestDeliverGzipBombIsBounded: a 64 MiB answer compressed to a few tens of
// kilobytes is read only as far as the log needs, never inflated whole.
// It does not run in parallel, so that the allocation it measures is its own.
func TestDeliverGzipBombIsBounded(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for range 64 {
		zw.Write(chunk)
	}
	zw.Close()
	bomb := buf.Bytes()
	b := setup(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
	runtime.ReadMemStats(&after)
	if !res.OK() || res.Body != strings.Repeat("a", 2048) {
		t.Errorf("Deliver(gzip bomb, %d bytes inflating to 64 MiB) = status %d, body %d bytes; want 200 with 2048 bytes of a", len(bomb), res.Status, len(res.Body))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("Deliver(gzip bomb) allocated %d MiB, want far less than the 64 MiB it inflates to", grew>>20)
	}
}

// TestDeliverHostileStatusLine: a receiver's status line and Location
// header reach the log through Result.Err, printable as well.
func TestDeliverHostileStatusLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		wantErr   string
	}{
		{"NUL and invalid UTF-8 in the reason", "HTTP/1.1 500 B\x00d \xff\r\nContent-Length: 2\r\n\r\nno",
			`endpoint answered 500 B\x00d \xff`},
		{"invalid UTF-8 in Location", "HTTP/1.1 302 Found\r\nLocation: http://x/\xff\xfe\r\nContent-Length: 0\r\n\r\n",
			`redirecting to "http://x/\xff\xfe"`},
		// A plain answer cut short is the connection's doing, not a gzip
		// stream's: the error says so.
		{"plain answer cut short", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100\r\n\r\nonly ten b",
			`endpoint answered 500 Internal Server Error; reading the answer: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Errorf("Hijack: %v", err)
					return
				}
				defer conn.Close()
				buf.WriteString(tt.raw)
				buf.Flush()
			})
			res := b.sender.Deliver(context.Background(), b.srv.URL, []string{NewSecret()}, b.msg)
			if res.OK() || !strings.Contains(res.Err, tt.wantErr) {
				t.Errorf("Deliver(%s).Err = %q, want it to contain %q", tt.name, res.Err, tt.wantErr)
			}
			checkPrintable(t, "Deliver("+tt.name+").Err", res.Err)
			checkPrintable(t, "Deliver("+tt.name+").Body", res.Body)
		})
	}
}
