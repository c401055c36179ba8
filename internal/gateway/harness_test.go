package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/callrun"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/id"
	"switchboard/internal/voice"
)

// The tests run real websockets on loopback: an httptest server serving the
// gateway, coder/websocket clients, an in-memory Store and Calls with the
// lifecycle rules of callctl, and scripted brains. They are not parallel:
// each one checks that every goroutine it started is gone.

const firstMessage = "Hi, this is Ava at Bright Smile Dental. How can I help?"

// memory is an in-memory Store and Calls. Its transitions follow the call
// lifecycle (call.Call.Transition); End of an ended call returns the record
// unchanged, as callctl does; Connect of a call that is not queued fails
// with Conflict, as Calls' contract asks.
type memory struct {
	mu         sync.Mutex
	calls      map[string]call.Call
	assistants map[string]assistant.Assistant
	turns      map[string][]call.Turn
	publicKeys map[string]auth.PublicKey
	// beforeConnect, when set, runs at the start of Connect (another node
	// racing for the call).
	beforeConnect func(callID string)
	// ended is told about every applied end, as callctl's Ended hook.
	ended func(call.Call)
}

func newMemory() *memory {
	return &memory{calls: map[string]call.Call{}, assistants: map[string]assistant.Assistant{}, turns: map[string][]call.Turn{}, publicKeys: map[string]auth.PublicKey{}}
}

func (m *memory) GetCallAnyOrg(_ context.Context, callID string) (call.Call, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[callID]
	if !ok {
		return call.Call{}, apperr.NotFoundf("call %s not found", callID)
	}
	return c, nil
}

// GetPublicKey finds a publishable key set in publicKeys.
func (m *memory) GetPublicKey(_ context.Context, keyID string) (auth.PublicKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.publicKeys[keyID]
	if !ok {
		return auth.PublicKey{}, apperr.NotFoundf("publishable key %s not found", keyID)
	}
	return k, nil
}

func (m *memory) GetAssistant(_ context.Context, orgID, asstID string) (assistant.Assistant, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.assistants[asstID]
	if !ok || a.OrgID != orgID {
		return assistant.Assistant{}, apperr.NotFoundf("assistant %s not found", asstID)
	}
	return a, nil
}

func (m *memory) AppendTurn(_ context.Context, t call.Turn) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns[t.CallID] = append(m.turns[t.CallID], t)
	return nil
}

func (m *memory) Connect(_ context.Context, callID string) (call.Call, error) {
	if m.beforeConnect != nil {
		m.beforeConnect(callID)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[callID]
	if !ok {
		return call.Call{}, apperr.NotFoundf("call %s not found", callID)
	}
	if c.Status == call.Ended {
		return c, nil
	}
	if err := c.Transition(call.Change{To: call.InProgress, At: time.Now()}); err != nil {
		return c, apperr.Conflictf("call %s is %s", callID, c.Status.Text())
	}
	m.calls[callID] = c
	return c, nil
}

func (m *memory) End(_ context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	m.mu.Lock()
	c, ok := m.calls[callID]
	if !ok {
		m.mu.Unlock()
		return call.Call{}, apperr.NotFoundf("call %s not found", callID)
	}
	if err := c.Transition(call.Change{To: call.Ended, At: time.Now(), Outcome: outcome, Reason: reason}); err != nil {
		m.mu.Unlock()
		var te *call.ErrTransition
		if errors.As(err, &te) {
			return c, nil
		}
		return c, err
	}
	c.Result = result
	m.calls[callID] = c
	hook := m.ended
	m.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	return c, nil
}

func (m *memory) add(c call.Call) call.Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[c.ID] = c
	return c
}

func (m *memory) call(callID string) call.Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[callID]
}

func (m *memory) turnsOf(callID string) []call.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]call.Turn(nil), m.turns[callID]...)
}

// Brains and brains.

type brainsFunc func(ctx context.Context, c call.Call, a assistant.Assistant) (conversation.Brain, error)

func (f brainsFunc) New(ctx context.Context, c call.Call, a assistant.Assistant) (conversation.Brain, error) {
	return f(ctx, c, a)
}

func brainOf(b conversation.Brain) callrun.Brains {
	return brainsFunc(func(context.Context, call.Call, assistant.Assistant) (conversation.Brain, error) { return b, nil })
}

// echoBrain answers "You said: <text>" in two deltas.
type echoBrain struct{}

func (echoBrain) Open(context.Context, func(string)) (conversation.Reply, error) {
	return conversation.Reply{}, nil
}

func (echoBrain) Respond(_ context.Context, text string, emit func(string)) (conversation.Reply, error) {
	emit("You said: ")
	emit(text)
	return conversation.Reply{}, nil
}

func (echoBrain) Said(string)         {}
func (echoBrain) Result() call.Result { return call.Result{} }

// respondFunc is a brain whose Respond is a function.
type respondFunc func(ctx context.Context, text string, emit func(string)) (conversation.Reply, error)

func (respondFunc) Open(context.Context, func(string)) (conversation.Reply, error) {
	return conversation.Reply{}, nil
}

func (f respondFunc) Respond(ctx context.Context, text string, emit func(string)) (conversation.Reply, error) {
	return f(ctx, text, emit)
}

func (respondFunc) Said(string)         {}
func (respondFunc) Result() call.Result { return call.Result{} }

// The bundle.

type bundle struct {
	mem  *memory
	srv  *Server
	rt   *callrun.Runtime
	web  *httptest.Server
	asst assistant.Assistant
}

// harnessConfig is the gateway's Config and what the harness's call
// runtime is made of.
type harnessConfig struct {
	Config
	Brains callrun.Brains
	Voices voice.Voices
}

type setupOptions struct {
	cfg        func(*harnessConfig)
	asst       func(*assistant.Assistant)
	httpServer func(*http.Server)
	noLeaks    bool // skip the goroutine-leak check (fuzzing)
}

func setup(tb testing.TB, opts ...func(*setupOptions)) *bundle {
	tb.Helper()
	var o setupOptions
	for _, f := range opts {
		f(&o)
	}
	if !o.noLeaks {
		checkLeaks(tb)
	}
	mem := newMemory()
	a := assistant.Assistant{ID: id.New(id.Assistant), OrgID: id.New(id.Org), Name: "Ava", FirstMessage: firstMessage,
		MaxDurationSeconds: 600, SilenceTimeoutSeconds: 30}
	if o.asst != nil {
		o.asst(&a)
	}
	mem.assistants[a.ID] = a
	log := slog.New(slog.NewTextHandler(tb.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := harnessConfig{Config: Config{Store: mem, Calls: mem, WriteTimeout: 2 * time.Second, Log: log}, Brains: brainOf(echoBrain{})}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	rt := callrun.New(callrun.Config{Store: mem, Ender: mem, Brains: cfg.Brains, Voices: cfg.Voices, Now: cfg.Now, Log: log})
	cfg.Runtime = rt
	srv := New(cfg.Config)
	mem.ended = rt.Ended
	web := httptest.NewUnstartedServer(srv)
	if o.httpServer != nil {
		o.httpServer(web.Config)
	}
	web.Start()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			tb.Errorf("Server.Close() = %v, want nil", err)
		}
		rt.Stop()
		web.Close()
	})
	return &bundle{mem: mem, srv: srv, rt: rt, web: web, asst: a}
}

// checkLeaks fails the test if goroutines started during it are still
// running shortly after its cleanups.
func checkLeaks(tb testing.TB) {
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

func (b *bundle) webCall() call.Call {
	now := time.Now().UTC()
	return b.mem.add(call.Call{ID: id.New(id.Call), OrgID: b.asst.OrgID, Type: call.Web, Status: call.Queued,
		AssistantID: b.asst.ID, CreatedAt: now, UpdatedAt: now})
}

func (b *bundle) url(callID, asstID string) string {
	q := url.Values{}
	if asstID != "" {
		q.Set("assistant_id", asstID)
	}
	if callID != "" {
		q.Set("call_id", callID)
	}
	return "ws" + strings.TrimPrefix(b.web.URL, "http") + "/new-web-call/connection?" + q.Encode()
}

func (b *bundle) rawDial(tb testing.TB, callID, asstID string) (*websocket.Conn, *http.Response, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return websocket.Dial(ctx, b.url(callID, asstID), &websocket.DialOptions{HTTPClient: b.web.Client()})
}

// dial connects to c and reads session.started.
func (b *bundle) dial(tb testing.TB, c call.Call) *client {
	tb.Helper()
	conn, _, err := b.rawDial(tb, c.ID, c.AssistantID)
	if err != nil {
		tb.Fatalf("Dial(call %s) error = %v, want a session", c.ID, err)
	}
	conn.SetReadLimit(1 << 20)
	cl := &client{tb: tb, conn: conn, deltas: map[string]string{}, done: map[string]string{}}
	tb.Cleanup(func() { conn.CloseNow() })
	ev := cl.expect(protocol.TypeSessionStarted).(protocol.SessionStarted)
	if ev.CallID != c.ID || ev.AssistantID != c.AssistantID {
		tb.Fatalf("session.started = %+v, want callId %s, assistantId %s", ev, c.ID, c.AssistantID)
	}
	return cl
}

// dialFirst connects and reads the assistant's first message.
func (b *bundle) dialFirst(tb testing.TB, c call.Call) *client {
	tb.Helper()
	cl := b.dial(tb, c)
	cl.expectTurn(firstMessage)
	return cl
}

// waitLive waits until the server has n sessions.
func (b *bundle) waitLive(tb testing.TB, n int) {
	tb.Helper()
	waitFor(tb, fmt.Sprintf("Live() == %d", n), func() bool { return b.srv.Live() == n })
}

// waitEnded waits until the call has ended and checks how.
func (b *bundle) waitEnded(tb testing.TB, callID string, outcome call.Outcome, reason string) call.Call {
	tb.Helper()
	waitFor(tb, "call "+callID+" ended", func() bool { return b.mem.call(callID).Status == call.Ended })
	c := b.mem.call(callID)
	if c.Outcome != outcome || c.EndedReason != reason {
		tb.Errorf("call %s ended %s/%s, want %s/%s", callID, c.Outcome, c.EndedReason, outcome, reason)
	}
	return c
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// client is a test client. Every event it reads is checked against the
// protocol's ordering promises: seq 1, 2, 3… without gaps, `at` never going
// back, a turn's deltas joining to its turn.done text and its transcript.
type client struct {
	tb     testing.TB
	conn   *websocket.Conn
	seq    int64
	at     time.Time
	deltas map[string]string // turn id → deltas so far
	done   map[string]string // turn id → turn.done text
	// audio: the session is an audio session; binary frames are counted
	// (binary) and partial transcripts allowed.
	audio  bool
	binary int
}

func (c *client) send(frame string) {
	c.tb.Helper()
	c.sendBytes(websocket.MessageText, []byte(frame))
}

func (c *client) sendBytes(typ websocket.MessageType, b []byte) {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, typ, b); err != nil {
		c.tb.Fatalf("client write (%d bytes) error = %v", len(b), err)
	}
}

func (c *client) say(text string) {
	c.tb.Helper()
	b, err := protocol.EncodeClient(protocol.UserText{Text: text})
	if err != nil {
		c.tb.Fatalf("EncodeClient(user.text %q) error = %v", text, err)
	}
	c.sendBytes(websocket.MessageText, b)
}

// read returns the next server event, or the error that ended the socket.
func (c *client) read() (protocol.ServerEvent, error) {
	c.tb.Helper()
	// 10 s: a barge-in pause may hold the assistant's audio (no frame
	// at all) for its 3 s resume cap, and longer on a loaded machine
	// (FuzzAudioFrames' 1 s tone over the reply, under make test).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.conn.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageText {
		if c.audio {
			c.binary++
			return c.read()
		}
		c.tb.Fatalf("server sent a %v frame, want text only", typ)
	}
	ev, err := protocol.DecodeServer(b)
	if err != nil {
		c.tb.Fatalf("DecodeServer(%s) error = %v", b, err)
	}
	seq, at := seqAt(ev)
	if seq != c.seq+1 {
		c.tb.Errorf("event %s has seq %d, want %d", b, seq, c.seq+1)
	}
	if at.Before(c.at) {
		c.tb.Errorf("event %s at %v is before the previous event's %v", b, at, c.at)
	}
	c.seq, c.at = seq, at
	switch e := ev.(type) {
	case protocol.TextDelta:
		if _, over := c.done[e.TurnID]; over {
			c.tb.Errorf("delta for %s after its turn.done", e.TurnID)
		}
		c.deltas[e.TurnID] += e.Text
	case protocol.TurnDone:
		// A spoken turn cut short holds what was heard, not what was sent.
		if e.Text != c.deltas[e.TurnID] && !(c.audio && e.Interrupted) {
			c.tb.Errorf("turn.done %s text %q, want its deltas joined %q", e.TurnID, e.Text, c.deltas[e.TurnID])
		}
		c.done[e.TurnID] = e.Text
	case protocol.Transcript:
		if !e.Final && !c.audio {
			c.tb.Errorf("transcript %s is not final in a text session", e.TurnID)
		}
		if e.Role == protocol.RoleAssistant && e.Final && e.Text != c.done[e.TurnID] {
			c.tb.Errorf("assistant transcript %s text %q, want its turn.done text %q", e.TurnID, e.Text, c.done[e.TurnID])
		}
	}
	return ev, nil
}

func (c *client) next() protocol.ServerEvent {
	c.tb.Helper()
	ev, err := c.read()
	if err != nil {
		c.tb.Fatalf("client read error = %v, want an event", err)
	}
	return ev
}

func (c *client) expect(typ string) protocol.ServerEvent {
	c.tb.Helper()
	ev := c.next()
	if ev.Type() != typ {
		c.tb.Fatalf("next event = %#v, want %s", ev, typ)
	}
	return ev
}

// expectTurn reads one whole assistant turn (deltas, turn.done,
// transcript) and checks its text.
func (c *client) expectTurn(text string) protocol.TurnDone {
	c.tb.Helper()
	for {
		ev := c.next()
		if _, ok := ev.(protocol.TextDelta); ok {
			continue
		}
		done, ok := ev.(protocol.TurnDone)
		if !ok {
			c.tb.Fatalf("event in an assistant turn = %#v, want a delta or turn.done", ev)
		}
		if done.Text != text || done.Interrupted {
			c.tb.Errorf("turn.done = %+v, want text %q, not interrupted", done, text)
		}
		tr := c.expect(protocol.TypeTranscript).(protocol.Transcript)
		if tr.Role != protocol.RoleAssistant || tr.TurnID != done.TurnID {
			c.tb.Errorf("transcript = %+v, want the assistant's %s", tr, done.TurnID)
		}
		return done
	}
}

// exchange says text and reads the user transcript and the echo reply.
func (c *client) exchange(text string) {
	c.tb.Helper()
	c.say(text)
	tr := c.expect(protocol.TypeTranscript).(protocol.Transcript)
	if tr.Role != protocol.RoleUser || tr.Text != text {
		c.tb.Errorf("transcript = %+v, want the user's %q", tr, text)
	}
	c.expectTurn("You said: " + text)
}

// expectEnd reads call.ended and then the close, and checks both.
func (c *client) expectEnd(outcome call.Outcome, reason string, code websocket.StatusCode) {
	c.tb.Helper()
	ev := c.expect(protocol.TypeCallEnded).(protocol.CallEnded)
	if ev.Outcome != string(outcome) || ev.EndedReason != reason {
		c.tb.Errorf("call.ended = %s/%s, want %s/%s", ev.Outcome, ev.EndedReason, outcome, reason)
	}
	c.expectClose(code)
}

func (c *client) expectClose(code websocket.StatusCode) {
	c.tb.Helper()
	ev, err := c.read()
	if err == nil {
		c.tb.Fatalf("after call.ended got %#v, want close %d", ev, code)
	}
	if got := websocket.CloseStatus(err); got != code {
		c.tb.Errorf("close = %d (%v), want %d", got, err, code)
	}
}

// expectError reads an error event and checks it.
func (c *client) expectError(code, field string, fatal bool) protocol.ErrorEvent {
	c.tb.Helper()
	e := c.expect(protocol.TypeError).(protocol.ErrorEvent)
	if e.Code != code || e.Field != field || e.Fatal != fatal {
		c.tb.Errorf("error event = %+v, want code %s, field %q, fatal %v", e, code, field, fatal)
	}
	return e
}

// ping checks that the session is still reading: the next event is the
// pong (so nothing else was pending).
func (c *client) ping(idStr string) {
	c.tb.Helper()
	c.send(`{"type":"ping","id":"` + idStr + `"}`)
	if p := c.expect(protocol.TypePong).(protocol.Pong); p.ID != idStr {
		c.tb.Errorf("pong id = %q, want %q", p.ID, idStr)
	}
}

func seqAt(ev protocol.ServerEvent) (int64, time.Time) {
	switch e := ev.(type) {
	case protocol.SessionStarted:
		return e.Seq, e.At
	case protocol.TextDelta:
		return e.Seq, e.At
	case protocol.TurnDone:
		return e.Seq, e.At
	case protocol.Transcript:
		return e.Seq, e.At
	case protocol.CallEnded:
		return e.Seq, e.At
	case protocol.ErrorEvent:
		return e.Seq, e.At
	case protocol.Pong:
		return e.Seq, e.At
	case protocol.SpeechStarted:
		return e.Seq, e.At
	case protocol.SpeechStopped:
		return e.Seq, e.At
	case protocol.AudioStart:
		return e.Seq, e.At
	case protocol.AudioDone:
		return e.Seq, e.At
	case protocol.AudioClear:
		return e.Seq, e.At
	case protocol.AudioPause:
		return e.Seq, e.At
	case protocol.AudioResume:
		return e.Seq, e.At
	}
	return 0, time.Time{}
}

// refusedBody checks an HTTP refusal: status and the API's error body.
func refusedBody(tb testing.TB, resp *http.Response, err error, status int, code string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("Dial succeeded, want HTTP %d", status)
	}
	if resp == nil {
		tb.Fatalf("Dial error = %v without a response, want HTTP %d", err, status)
	}
	if resp.StatusCode != status {
		tb.Errorf("status = %d, want %d", resp.StatusCode, status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("Content-Type = %q, want application/json", ct)
	}
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		Status  *bool   `json:"status"`
		Message *string `json:"message"`
		Error   *struct {
			Code   string            `json:"code"`
			Fields []json.RawMessage `json:"fields"`
		} `json:"error"`
		RequestID *string `json:"requestId"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		tb.Fatalf("refusal body %s is not JSON: %v", b, err)
	}
	if body.Status == nil || *body.Status || body.Message == nil || *body.Message == "" || body.Error == nil ||
		body.Error.Code != code || body.Error.Fields == nil || len(body.Error.Fields) != 0 || body.RequestID == nil ||
		!strings.HasPrefix(*body.RequestID, "req_") || resp.Header.Get("X-Request-Id") != *body.RequestID {
		tb.Errorf("refusal body = %s (X-Request-Id %q), want {status:false, message, error:{code:%q, fields:[]}, requestId} with the header's request id", b, resp.Header.Get("X-Request-Id"), code)
	}
}

// testRuntime is a call runtime over m with the echo brain, stopped when
// the test ends.
func testRuntime(tb testing.TB, m *memory) *callrun.Runtime {
	rt := callrun.New(callrun.Config{Store: m, Ender: m, Brains: brainOf(echoBrain{})})
	tb.Cleanup(rt.Stop)
	return rt
}
