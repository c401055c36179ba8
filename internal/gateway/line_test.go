package gateway

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/id"
	"switchboard/internal/telephony"
	"switchboard/internal/telephony/linetest"
)

// TestLineConformance runs the line conformance suite on the gateway's
// session: a web call joined over a loopback websocket, whose session the
// gateway hands to a runtime that gives it to the suite; the far party is
// the websocket client, playing the widget's part: it turns audio on
// (session.update) and reports playback.mark for the audio it receives, as
// the widget does when it plays it.
func TestLineConformance(t *testing.T) {
	linetest.Run(t, func(t *testing.T) linetest.Case {
		checkLeaks(t)
		b, rt := lineBundle(t)
		c := b.webCall()
		conn, _, err := b.rawDial(t, c.ID, c.AssistantID)
		if err != nil {
			t.Fatalf("Dial(call %s) = %v, want a session", c.ID, err)
		}
		w := newWidget(conn)
		t.Cleanup(w.close)
		var line telephony.Line
		select {
		case line = <-rt.lines:
		case <-time.After(linetest.Timeout):
			t.Fatal("the gateway handed no line to the runtime")
		}
		return linetest.Case{
			Line:   line,
			Far:    w,
			Frame:  make([]byte, 640), // 20 ms of PCM16 at 16 kHz (protocol.DefaultAudio)
			HungUp: telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded},
			Marks:  true,
		}
	})
}

// handOver is a runtime that takes every line and hands it to the test.
type handOver struct{ lines chan telephony.Line }

func (h *handOver) Start(_ call.Call, line telephony.Line) bool {
	h.lines <- line
	return true
}

func (h *handOver) Cancel(string) {}

var _ Runtime = (*handOver)(nil)

// lineBundle is a gateway whose runtime is a handOver.
func lineBundle(t *testing.T) (*bundle, *handOver) {
	t.Helper()
	mem := newMemory()
	a := assistant.Assistant{ID: id.New(id.Assistant), OrgID: id.New(id.Org), Name: "Ava", MaxDurationSeconds: 600, SilenceTimeoutSeconds: 30}
	mem.assistants[a.ID] = a
	rt := &handOver{lines: make(chan telephony.Line, 1)}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := New(Config{Store: mem, Calls: mem, Runtime: rt, WriteTimeout: 2 * time.Second, Log: log})
	web := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), linetest.Timeout)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("Server.Close() = %v, want nil", err)
		}
		web.Close()
	})
	return &bundle{mem: mem, srv: srv, web: web, asst: a}, rt
}

// widget is a websocket client doing what the web widget does with a
// call: it asks for audio at once, then counts the audio of each turn as
// it arrives and reports it played (playback.mark) frame by frame.
type widget struct {
	conn *websocket.Conn
	done chan struct{} // the socket closed: the reader has returned

	wmu sync.Mutex // one write at a time
}

var _ linetest.Far = (*widget)(nil)

func newWidget(conn *websocket.Conn) *widget {
	w := &widget{conn: conn, done: make(chan struct{})}
	conn.SetReadLimit(1 << 20)
	audioOn := false
	w.send(protocol.SessionUpdate{TextOnly: &audioOn})
	go w.read()
	return w
}

// send writes a client event; a socket that is gone is not an error here
// (the far party may act after the call is over).
func (w *widget) send(ev protocol.ClientEvent) {
	b, err := protocol.EncodeClient(ev)
	if err != nil {
		panic(err) // a bug in the test
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), linetest.Timeout)
	defer cancel()
	_ = w.conn.Write(ctx, websocket.MessageText, b)
}

// read plays what the server sends until the socket closes.
func (w *widget) read() {
	defer close(w.done)
	turn, played := "", int64(0)
	for {
		typ, b, err := w.conn.Read(context.Background())
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary {
			if turn != "" {
				played += int64(len(b)) * 1000 / (2 * 16000) // PCM16 at 16 kHz
				w.send(protocol.PlaybackMark{TurnID: turn, PlayedMs: played})
			}
			continue
		}
		ev, err := protocol.DecodeServer(b)
		if err != nil {
			continue
		}
		switch e := ev.(type) {
		case protocol.AudioStart:
			turn, played = e.TurnID, 0
		case protocol.AudioDone, protocol.AudioClear:
			turn = ""
		}
	}
}

func (w *widget) close() {
	_ = w.conn.CloseNow()
	<-w.done
}

func (w *widget) Hangup(*testing.T) { w.send(protocol.Hangup{}) }

// Gone waits for the server to close the socket.
func (w *widget) Gone(t *testing.T) {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(linetest.Timeout):
		t.Fatalf("the server did not close the socket within %v", linetest.Timeout)
	}
}

func (w *widget) Press(t *testing.T, _ string) { t.Fatal("a web call has no keypad") }

func (w *widget) Keys(t *testing.T, _ int) string {
	t.Fatal("a web call has no keypad")
	return ""
}
