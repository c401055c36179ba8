package app

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestWebhookURLGuardIPv6 registers endpoint and tool URLs whose host is an
// IPv6 address carrying a loopback, private or metadata IPv4 address: each is
// a 400 naming the field, and nothing is created; public IPv6 stays allowed.
func TestWebhookURLGuardIPv6(t *testing.T) {
	t.Parallel()
	cfg := testConfig("sqlite:" + t.TempDir() + "/g6.db")
	cfg.WebhookAllowPrivate = false
	b := start(t, cfg)
	refused := []string{
		"http://[::127.0.0.1]/hook",                          // IPv4-compatible (RFC 4291)
		"http://[64:ff9b::7f00:1]/hook",                      // NAT64 (RFC 6052)
		"http://[64:ff9b:1::7f00:1]/hook",                    // local-use NAT64 (RFC 8215)
		"http://[2002:7f00:1::1]/hook",                       // 6to4 (RFC 3056) of 127.0.0.1
		"http://[2002:a9fe:a9fe::1]/hook",                    // 6to4 of 169.254.169.254
		"http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/hook", // Teredo (RFC 4380), client 10.0.0.1
		"http://[::ffff:127.0.0.1]/hook",                     // IPv4-mapped
		"http://[::ffff:0:a9fe:a9fe]/hook",                   // SIIT of 169.254.169.254
	}
	for _, u := range refused {
		expectFields(t, b.req("POST", "/v1/webhooks", b.key, map[string]any{"url": u, "events": []string{"call.ended"}}), 400, "url")
		tool := map[string]any{"name": "lookup", "description": "Looks up", "url": u, "parameters": map[string]any{"type": "object"}}
		expectFields(t, b.req("POST", "/v1/assistants", b.key, map[string]any{"name": "Tools", "tools": []any{tool}}), 400, "tools[0].url")
	}
	if l := b.must(200, "GET", "/v1/webhooks", nil).list(); len(l) != 0 {
		t.Errorf("GET /v1/webhooks after %d refused registrations = %d endpoints, want 0", len(refused), len(l))
	}
	for _, u := range []string{"https://[2606:4700:4700::1111]/hook", "https://[2002:5db8:d822::1]/hook"} {
		b.must(201, "POST", "/v1/webhooks", map[string]any{"url": u, "events": []string{"call.ended"}})
	}
}

// hostileReceiver is a webhook endpoint that accepts every delivery with
// the same hostile answer (or first answers rawOnce, byte for byte) and
// counts deliveries per webhook-id.
type hostileReceiver struct {
	name    string
	header  map[string]string
	body    []byte
	rawOnce string // when set, the first delivery of a message gets these bytes as the whole HTTP answer
	// wantLog is the delivery log of the one message, newest first: status,
	// then response (a prefix when it ends in "…"), then error.
	wantLog [][3]string
	srv     *httptest.Server
	mu      sync.Mutex
	seen    map[string]int
}

func (h *hostileReceiver) start(t *testing.T) {
	h.seen = map[string]int{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		id := r.Header.Get("webhook-id")
		h.seen[id]++
		n := h.seen[id]
		h.mu.Unlock()
		if h.rawOnce != "" && n == 1 {
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("%s: Hijack: %v", h.name, err)
				return
			}
			defer conn.Close()
			buf.WriteString(h.rawOnce)
			buf.Flush()
			return
		}
		for k, v := range h.header {
			w.Header().Set(k, v)
		}
		w.Write(h.body)
	}))
	t.Cleanup(h.srv.Close)
}

func (h *hostileReceiver) deliveries() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return maps.Clone(h.seen)
}

// TestWebhookHostileAnswers: receivers that accept a delivery with a body
// PostgreSQL's TEXT refuses (NUL, invalid UTF-8), random binary, a gzip
// body, or a status line with such bytes. Each delivery is in the log with
// a printable excerpt, each message reaches its final state (delivered),
// and none is sent again.
func TestWebhookHostileAnswers(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4096)
	rand.NewChaCha8([32]byte{8}).Read(random)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"received":true}`))
	zw.Close()

	eachDB(t, func(t *testing.T, dbURL string) {
		b := start(t, testConfig(dbURL))
		receivers := []*hostileReceiver{
			{name: "NUL", body: []byte("accepted\x00id=42"),
				wantLog: [][3]string{{"200", `accepted\x00id=42`, ""}}},
			{name: "invalid UTF-8", body: []byte("re\xe7u \xff ok \xed\xa0\x80"),
				wantLog: [][3]string{{"200", `re\xe7u \xff ok \xed\xa0\x80`, ""}}},
			{name: "binary", header: map[string]string{"Content-Type": "application/octet-stream"}, body: random,
				wantLog: [][3]string{{"200", fmt.Sprintf("<binary answer: 4096 bytes, application/octet-stream, starting % x …>", random[:16]), ""}}},
			{name: "gzip", header: map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/json"}, body: gz.Bytes(),
				wantLog: [][3]string{{"200", `{"received":true}`, ""}}},
			{name: "status line", rawOnce: "HTTP/1.1 500 B\x00d \xff\r\nContent-Length: 4\r\n\r\n\x00\x00\x00\x00",
				wantLog: [][3]string{{"200", "", ""}, {"500", `\x00\x00\x00\x00`, `endpoint answered 500 B\x00d \xff`}}},
		}
		ids := map[*hostileReceiver]string{}
		for _, h := range receivers {
			h.start(t)
			r := b.must(201, "POST", "/v1/webhooks", map[string]any{"url": h.srv.URL + "/hooks", "events": []string{"call.started"}})
			ids[h] = r.data()["id"].(string)
		}
		f := b.fixture(b.key, "+14155550100")
		b.must(201, "POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": f.purchase, "phoneNumber": "+14155551234"})

		// Every endpoint's log reaches its expected length (the status-line
		// receiver's retry comes after the 5 s backoff).
		logs := map[*hostileReceiver][]map[string]any{}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			complete := true
			for _, h := range receivers {
				logs[h] = b.must(200, "GET", "/v1/webhooks/"+ids[h]+"/deliveries", nil).list()
				if len(logs[h]) < len(h.wantLog) {
					complete = false
				}
			}
			if complete {
				break
			}
			if time.Now().After(deadline) {
				for _, h := range receivers {
					t.Errorf("%s receiver: got %d deliveries %v, log %v; want %d log entries", h.name, len(h.deliveries()), h.deliveries(), logs[h], len(h.wantLog))
				}
				t.FailNow()
			}
		}
		for _, h := range receivers {
			log := logs[h]
			if len(log) != len(h.wantLog) {
				t.Errorf("%s receiver: delivery log %v, want %d entries", h.name, log, len(h.wantLog))
				continue
			}
			for i, want := range h.wantLog {
				d := log[i]
				status := fmt.Sprint(d["status"])
				response, _ := d["response"].(string)
				errText, _ := d["error"].(string)
				if status != want[0] || response != want[1] || errText != want[2] || d["attempt"] != float64(len(log)-i) {
					t.Errorf("%s receiver: delivery log [%d] = status %s, attempt %v, response %q, error %q; want status %s, attempt %d, response %q, error %q",
						h.name, i, status, d["attempt"], response, errText, want[0], len(log)-i, want[1], want[2])
				}
			}
			for id, n := range h.deliveries() {
				if n != len(h.wantLog) {
					t.Errorf("%s receiver got message %s %d times, want %d", h.name, id, n, len(h.wantLog))
				}
			}
		}
		// Every message is final: nothing is left to claim, even a day from
		// now (a message whose record failed would be claimed again when its
		// lease ends).
		left, err := b.m.DB().ClaimOutbox(context.Background(), time.Now().Add(24*time.Hour), time.Minute, 100)
		if err != nil || len(left) != 0 {
			t.Errorf("ClaimOutbox a day later = %d messages (%v), want none: every message delivered", len(left), err)
		}
	})
}
