package twilio

// Test helpers: a provider served on loopback in front of twiliotest, with
// the test's goroutines labelled so the leak check can tell them from
// other tests'; an event recorder; a Receiver that records.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/telephony"
	"switchboard/internal/twilio/twiliotest"
)

const (
	testFrom = "+16175550100"
	testTo   = "+16175550199"
	testConn = "conn_1"
)

const leakLabel = "twiliotest"

// labelGoroutines labels the test's goroutine; every goroutine started from
// it, and from those, inherits the label.
func labelGoroutines(t *testing.T) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(leakLabel, t.Name())))
}

// checkLeaks waits up to 3 s for every goroutine labelled with the test's
// name, other than the test's own, to end.
func checkLeaks(t *testing.T) {
	t.Helper()
	want := fmt.Sprintf("%q:%q", leakLabel, t.Name())
	deadline := time.Now().Add(3 * time.Second)
	for {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		var leaked []string
		for _, g := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(g, want) && !strings.Contains(g, "checkLeaks") && !strings.Contains(g, "testing.tRunner") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines left after Close:\n%s", strings.Join(leaked, "\n\n"))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// events records a provider's events.
type events struct{ ch chan telephony.Event }

func newEvents() *events { return &events{ch: make(chan telephony.Event, 64)} }

func (e *events) sink(ev telephony.Event) {
	select {
	case e.ch <- ev:
	default:
		panic("test sink full")
	}
}

// next waits for the next event.
func (e *events) next(t *testing.T) telephony.Event {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(5 * time.Second):
		t.Fatal("no provider event within 5s")
	}
	return telephony.Event{}
}

// want waits for the next event and checks its kind.
func (e *events) want(t *testing.T, kind telephony.EventKind) telephony.Event {
	t.Helper()
	ev := e.next(t)
	if ev.Kind != kind {
		t.Fatalf("event = %v (%s %s), want %v", ev.Kind, ev.Outcome, ev.Reason, kind)
	}
	return ev
}

// none checks that no event comes within d.
func (e *events) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case ev := <-e.ch:
		t.Fatalf("unexpected event %v (%s %s) for call %s", ev.Kind, ev.Outcome, ev.Reason, ev.CallID)
	case <-time.After(d):
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// bundle is a provider in front of a fake Twilio with one account, one
// bought number (testFrom) and connection testConn.
type bundle struct {
	fake *twiliotest.Server
	p    *Provider
	srv  *httptest.Server
	ev   *events
	acct Account

	mu    sync.Mutex
	admit telephony.Admitter
}

type option func(*Config)

func setup(t *testing.T, opts ...option) *bundle {
	t.Helper()
	return setupSink(t, nil, opts...)
}

// setupSink is setup with the provider's events going through wrap (nil:
// straight to the bundle's events).
func setupSink(t *testing.T, wrap func(telephony.EventSink) telephony.EventSink, opts ...option) *bundle {
	t.Helper()
	labelGoroutines(t)
	b := &bundle{fake: twiliotest.New(), ev: newEvents()}
	sid, token := b.fake.NewAccount()
	b.acct = Account{SID: sid, Token: token}
	var h http.Handler
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	cfg := Config{
		PublicURL:  b.srv.URL,
		APIBaseURL: b.fake.URL,
		Accounts: func(_ context.Context, id string) (Account, error) {
			if id != testConn {
				return Account{}, errors.New("no such connection")
			}
			return b.acct, nil
		},
		TokenKey: []byte("test key"),
		Log:      slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cc := telephony.CallControlFuncs{Sink: b.ev.sink, Admitter: func(ctx context.Context, in telephony.Incoming) (string, error) {
		b.mu.Lock()
		a := b.admit
		b.mu.Unlock()
		if a == nil {
			return "", telephony.ErrNoInboundAgent
		}
		return a(ctx, in)
	}}
	if wrap != nil {
		cc.Sink = wrap(cc.Sink)
	}
	if err := p.Start(t.Context(), cc); err != nil {
		t.Fatal(err)
	}
	b.p = p
	h = p.Handler()
	b.fake.AddAvailable(twiliotest.AvailableNumber{Number: testFrom, Country: "US", Locality: "Boston", Region: "MA"})
	cl, err := p.Client(b.acct)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.BuyNumber(context.Background(), testFrom, p.VoiceURL(testConn), p.StatusURL(testConn)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		b.srv.Close()
		b.fake.Close()
		checkLeaks(t)
	})
	return b
}

func (b *bundle) setAdmit(a telephony.Admitter) {
	b.mu.Lock()
	b.admit = a
	b.mu.Unlock()
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// recorder is a telephony.Receiver that keeps what it gets.
type recorder struct {
	mu     sync.Mutex
	audio  []byte
	digits []byte
	marks  map[string]int64
	got    chan struct{}
}

func newRecorder() *recorder {
	return &recorder{marks: map[string]int64{}, got: make(chan struct{}, 1)}
}

func (r *recorder) poke() {
	select {
	case r.got <- struct{}{}:
	default:
	}
}

func (r *recorder) Audio(b []byte) {
	r.mu.Lock()
	r.audio = append(r.audio, b...)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) DTMF(d byte) {
	r.mu.Lock()
	r.digits = append(r.digits, d)
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) Text(string) {}

func (r *recorder) StartAudio(audio.Format) error {
	return errors.New("a Twilio line has its audio from the start")
}

func (r *recorder) Mark(turn string, ms int64) {
	r.mu.Lock()
	r.marks[turn] = max(r.marks[turn], ms)
	r.mu.Unlock()
	r.poke()
}

// waitFor waits until cond holds under the recorder's lock.
func (r *recorder) waitFor(t *testing.T, what string, cond func(r *recorder) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		ok := cond(r)
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("recorder: %s did not happen within 5s", what)
		}
	}
}

// receive runs line.Receive on its own goroutine; the returned channel
// gets its End.
func receive(line telephony.Line, rx telephony.Receiver) (<-chan telephony.End, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan telephony.End, 1)
	go func() { ch <- line.Receive(ctx, rx) }()
	return ch, cancel
}

func waitEnd(t *testing.T, ch <-chan telephony.End) telephony.End {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not return within 5s")
	}
	return telephony.End{}
}

// signedPost posts form to the provider's path, signed with token over the
// public URL (an empty token: no signature).
func (b *bundle) signedPost(t *testing.T, token, path string, vals url.Values) (int, string) {
	t.Helper()
	u := b.srv.URL + path
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(vals.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set(SignatureHeader, Sign(token, u, vals))
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// mulawTone is d of a 440 Hz tone in μ-law (caller audio for tests).
func mulawTone(d time.Duration) []byte {
	n := int(d.Seconds() * 8000)
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(0x10 + i%64) // any non-silent pattern will do
	}
	return out
}
