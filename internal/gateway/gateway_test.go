package gateway

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/callrun"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/id"
)

func TestHappyPath(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dial(t, c)
	if got := b.mem.call(c.ID); got.Status != call.InProgress || got.StartedAt.IsZero() {
		t.Errorf("call after the upgrade = %s (startedAt %v), want in-progress with startedAt", got.Status.Text(), got.StartedAt)
	}
	first := cl.expectTurn(firstMessage)
	if first.TurnID != "turn_1" {
		t.Errorf("first message turn id = %q, want turn_1", first.TurnID)
	}
	cl.exchange("I'd like to book a cleaning next Tuesday.")
	cl.exchange("4:30 works.")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)

	b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
	b.waitLive(t, 0)
	turns := b.mem.turnsOf(c.ID)
	if len(turns) != 5 {
		t.Errorf("stored turns = %d, want 5 (first message, two user turns, two replies)", len(turns))
	}
	if s := b.srv.Stats(); s.Sessions != 1 || s.Overflows != 0 || s.Abuse != 0 || s.Panics != 0 || b.rt.Panics() != 0 {
		t.Errorf("Stats() = %+v, want one session and nothing else", s)
	}
}

func TestRefusals(t *testing.T) {
	b := setup(t)
	ended := b.webCall()
	if _, err := b.mem.End(context.Background(), ended.ID, call.Failed, call.ReasonClientNeverConnected, call.Result{}); err != nil {
		t.Fatal(err)
	}
	live := b.webCall()
	b.mem.Connect(context.Background(), live.ID) // another node holds it
	phone := b.mem.add(call.Call{ID: id.New(id.Call), OrgID: b.asst.OrgID, Type: call.Phone, Status: call.Queued, AssistantID: b.asst.ID})
	queued := b.webCall()

	tests := []struct {
		name           string
		callID, asstID string
		status         int
		code           string
	}{
		{"no ids", "", "", http.StatusNotFound, "not_found"},
		{"no assistant id", queued.ID, "", http.StatusNotFound, "not_found"},
		{"no call id", "", b.asst.ID, http.StatusNotFound, "not_found"},
		{"unknown call", id.New(id.Call), b.asst.ID, http.StatusNotFound, "not_found"},
		{"assistant not the call's", queued.ID, id.New(id.Assistant), http.StatusNotFound, "not_found"},
		{"phone call", phone.ID, b.asst.ID, http.StatusNotFound, "not_found"},
		{"ended call", ended.ID, b.asst.ID, http.StatusGone, "gone"},
		{"call in progress", live.ID, b.asst.ID, http.StatusConflict, "conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, err := b.rawDial(t, tt.callID, tt.asstID)
			refusedBody(t, resp, err, tt.status, tt.code)
		})
	}
	if got := b.mem.call(queued.ID); got.Status != call.Queued {
		t.Errorf("queued call after refusals = %s, want still queued", got.Status.Text())
	}

	// A plain GET (a link preview, a curious user) is refused and leaves
	// the call joinable.
	resp, err := b.web.Client().Get(strings.Replace(b.url(queued.ID, b.asst.ID), "ws", "http", 1))
	if err != nil {
		t.Fatal(err)
	}
	refusedBody(t, resp, errors.New("refused"), http.StatusUpgradeRequired, "upgrade_required")
	resp.Body.Close()
	if got := b.mem.call(queued.ID); got.Status != call.Queued {
		t.Errorf("call after a plain GET = %s, want still queued", got.Status.Text())
	}
	cl := b.dialFirst(t, queued)
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
}

// A URL admits one connection: a second one while the first is live gets
// 409, on this node or another, and the first goes on.
func TestSecondConnectionConflict(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)

	_, resp, err := b.rawDial(t, c.ID, c.AssistantID)
	refusedBody(t, resp, err, http.StatusConflict, "conflict")

	otherRT := callrun.New(callrun.Config{Store: b.mem, Ender: b.mem, Brains: brainOf(echoBrain{})})
	defer otherRT.Stop()
	other := New(Config{Store: b.mem, Calls: b.mem, Runtime: otherRT})
	web := httptest.NewServer(other)
	defer web.Close()
	defer other.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, resp, err = websocket.Dial(ctx, "ws"+strings.TrimPrefix(web.URL, "http")+"/new-web-call/connection?assistant_id="+c.AssistantID+"&call_id="+c.ID,
		&websocket.DialOptions{HTTPClient: web.Client()})
	refusedBody(t, resp, err, http.StatusConflict, "conflict")

	cl.exchange("Still there?")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)
}

// The claim (Calls.Connect) is what decides a race that the checks before
// it cannot see: another node connecting, or the join timeout ending the
// call, between the checks and the claim.
func TestClaimRace(t *testing.T) {
	tests := []struct {
		name   string
		race   func(m *memory, callID string)
		status int
		code   string
		want   call.Status
	}{
		{"another node connected", func(m *memory, callID string) {
			m.beforeConnect = nil
			m.Connect(context.Background(), callID)
		}, http.StatusConflict, "conflict", call.InProgress},
		{"the join timeout ended it", func(m *memory, callID string) {
			m.End(context.Background(), callID, call.Failed, call.ReasonClientNeverConnected, call.Result{})
		}, http.StatusGone, "gone", call.Ended},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			c := b.webCall()
			b.mem.beforeConnect = func(callID string) { tt.race(b.mem, callID) }
			_, resp, err := b.rawDial(t, c.ID, c.AssistantID)
			refusedBody(t, resp, err, tt.status, tt.code)
			if got := b.mem.call(c.ID).Status; got != tt.want {
				t.Errorf("call status = %s, want %s", got.Text(), tt.want.Text())
			}
			b.waitLive(t, 0)
		})
	}
}

// failingHijack is a ResponseWriter whose connection cannot be taken over.
type failingHijack struct{ *httptest.ResponseRecorder }

func (failingHijack) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("hijack failed")
}

// A call claimed but never upgraded ends at once (failed,
// client-never-connected) rather than waiting in progress for housekeeping.
func TestUpgradeFailureEndsCall(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	r := httptest.NewRequest(http.MethodGet, "/new-web-call/connection?assistant_id="+c.AssistantID+"&call_id="+c.ID, nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	b.srv.ServeHTTP(failingHijack{httptest.NewRecorder()}, r)
	b.waitEnded(t, c.ID, call.Failed, call.ReasonClientNeverConnected)
	b.waitLive(t, 0)
}

func TestBadFramesAreNotFatal(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	tests := []struct {
		frame, code, field string
	}{
		{`hello`, protocol.CodeInvalidJSON, ""},
		{`{"type":"user.audio"}`, protocol.CodeUnknownType, "type"},
		{`{"type":"user.text","text":42}`, protocol.CodeInvalidField, "text"},
		{`{"type":"user.text","text":"   "}`, protocol.CodeInvalidField, "text"},
		{`{"type":"ping","id":1}`, protocol.CodeInvalidField, "id"},
		{`{"type":"session.update","textOnly":"true"}`, protocol.CodeInvalidField, "textOnly"},
	}
	for _, tt := range tests {
		cl.send(tt.frame)
		e := cl.expectError(tt.code, tt.field, false)
		_, want := protocol.Decode([]byte(tt.frame))
		if e.Message != protocol.ErrorEventFor(want).Message {
			t.Errorf("error for %s = %q, want the codec's %q", tt.frame, e.Message, protocol.ErrorEventFor(want).Message)
		}
	}
	cl.exchange("Are you still there?")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
}

// The abuse rule: the 21st bad frame within 10 s closes the socket with
// 4400 after a fatal error and call.ended; the call ends as the protocol
// document says (completed, customer-ended-call).
func TestTooManyBadFrames(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	for range protocol.BadFrameLimit + 1 {
		cl.send(`{"type":"nope"}`)
	}
	for range protocol.BadFrameLimit {
		cl.expectError(protocol.CodeUnknownType, "type", false)
	}
	cl.expectError(protocol.CodeTooManyErrors, "", true)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, protocol.CloseProtocolAbuse)
	b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
	b.waitLive(t, 0)
	if s := b.srv.Stats(); s.Abuse != 1 {
		t.Errorf("Stats().Abuse = %d, want 1", s.Abuse)
	}
}

func TestOversizeFrame(t *testing.T) {
	for _, size := range []int{protocol.MaxFrame + 1, 1 << 20} {
		t.Run(strconv.Itoa(size)+" bytes", func(t *testing.T) {
			b := setup(t)
			c := b.webCall()
			cl := b.dialFirst(t, c)
			frame := `{"type":"user.text","text":"` + strings.Repeat("a", size) + `"}`
			// The client cannot finish writing a 1 MiB frame until the
			// server reads it, which it does only while closing: write
			// concurrently.
			wrote := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				wrote <- cl.conn.Write(ctx, websocket.MessageText, []byte(frame))
			}()
			cl.expectError(protocol.CodeFrameTooLarge, "", true)
			cl.expectEnd(call.Completed, call.ReasonCustomerEnded, protocol.CloseProtocolAbuse)
			<-wrote
			b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
			b.waitLive(t, 0)
		})
	}
}

// A frame of exactly MaxFrame bytes is fine.
func TestMaxFrame(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	head, tail := `{"type":"session.update","metadata":{"pad":"`, `"}}`
	cl.send(head + strings.Repeat("a", protocol.MaxFrame-len(head)-len(tail)) + tail)
	cl.ping("after-max")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
}

func TestBinaryFrameIsAbuse(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.sendBytes(websocket.MessageBinary, make([]byte, 320))
	cl.expectError(protocol.CodeUnexpectedBinary, "", true)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, protocol.CloseProtocolAbuse)
	b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
}

// The socket is the call: when the client goes, however it goes, the call
// ends (customer-ended-call).
func TestClientDisconnectEndsCall(t *testing.T) {
	tests := []struct {
		name  string
		leave func(c *websocket.Conn)
	}{
		{"close handshake", func(c *websocket.Conn) { c.Close(websocket.StatusNormalClosure, "bye") }},
		{"connection dropped", func(c *websocket.Conn) { c.CloseNow() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := setup(t)
			c := b.webCall()
			cl := b.dialFirst(t, c)
			tt.leave(cl.conn)
			b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
			b.waitLive(t, 0)
			_, resp, err := b.rawDial(t, c.ID, c.AssistantID)
			refusedBody(t, resp, err, http.StatusGone, "gone")
		})
	}
}

func TestPingPong(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dial(t, c)
	// A ping may be answered between the pieces of a turn; read the first
	// message around it.
	cl.send(`{"type":"ping","id":"hb-1"}`)
	cl.send(`{"type":"ping"}`)
	pongs := 0
	var ids []string
	for pongs < 2 {
		if p, ok := cl.next().(protocol.Pong); ok {
			pongs++
			ids = append(ids, p.ID)
		}
	}
	if len(ids) != 2 || ids[0] != "hb-1" || ids[1] != "" {
		t.Errorf("pong ids = %q, want [hb-1 \"\"]", ids)
	}
	cl.send(`{"type":"hangup"}`)
	for {
		if ev := cl.next(); ev.Type() == protocol.TypeCallEnded {
			break
		}
	}
	cl.expectClose(websocket.StatusNormalClosure)
}

func TestSessionUpdate(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.send(`{"type":"session.update","textOnly":true,"metadata":{"page":"/book"}}`)
	cl.ping("1") // no reply to a good update
	cl.send(`{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":24000}}`)
	cl.ping("2") // audio formats are accepted and kept for later
	cl.send(`{"type":"session.update","textOnly":false}`)
	cl.expectError(protocol.CodeUnsupported, "textOnly", false)
	cl.send(`{"type":"playback.mark","turnId":"turn_1","playedMs":1200}`)
	cl.ping("3")
	cl.exchange("Text still works?")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
}

func TestSilenceTimeout(t *testing.T) {
	b := setup(t, func(o *setupOptions) { o.asst = func(a *assistant.Assistant) { a.SilenceTimeoutSeconds = 1 } })
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.expectEnd(call.Completed, call.ReasonSilenceTimeout, protocol.CloseIdle)
	b.waitEnded(t, c.ID, call.Completed, call.ReasonSilenceTimeout)
}

func TestAssistantEndsCall(t *testing.T) {
	b := setup(t, func(o *setupOptions) {
		o.asst = func(a *assistant.Assistant) { a.EndCallPhrases = []string{"goodbye"} }
	})
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.exchange("That's all, goodbye")
	cl.expectEnd(call.Completed, call.ReasonAssistantEnded, websocket.StatusNormalClosure)
	b.waitEnded(t, c.ID, call.Completed, call.ReasonAssistantEnded)
}

// A server failure: a fatal internal error, call.ended failed, close 1011.
func TestBrainFailures(t *testing.T) {
	t.Run("brain cannot be made", func(t *testing.T) {
		b := setup(t, func(o *setupOptions) {
			o.cfg = func(c *harnessConfig) {
				c.Brains = brainsFunc(func(context.Context, call.Call, assistant.Assistant) (conversation.Brain, error) {
					return nil, errors.New("no model provider configured")
				})
			}
		})
		c := b.webCall()
		cl := b.dial(t, c)
		cl.expectError(protocol.CodeInternal, "", true)
		cl.expectEnd(call.Failed, call.ReasonModelFailed, protocol.CloseInternalError)
		b.waitEnded(t, c.ID, call.Failed, call.ReasonModelFailed)
	})
	t.Run("brain panics", func(t *testing.T) {
		b := setup(t, func(o *setupOptions) {
			o.cfg = func(c *harnessConfig) {
				c.Brains = brainOf(respondFunc(func(context.Context, string, func(string)) (conversation.Reply, error) {
					panic("brain bug")
				}))
			}
		})
		c := b.webCall()
		cl := b.dialFirst(t, c)
		cl.say("hello")
		cl.expect(protocol.TypeTranscript)
		cl.expectError(protocol.CodeInternal, "", true)
		cl.expectEnd(call.Failed, ReasonSystemError, protocol.CloseInternalError)
		b.waitEnded(t, c.ID, call.Failed, ReasonSystemError)
		b.waitLive(t, 0)
		if n := b.rt.Panics(); n != 1 {
			t.Errorf("Runtime.Panics() = %d, want 1", n)
		}
	})
}

// A call ended outside its conversation (housekeeping, the API) stops its
// session: call.ended with the record's outcome and reason, close 4410.
func TestCallEndedElsewhere(t *testing.T) {
	b := setup(t)
	c := b.webCall()
	cl := b.dialFirst(t, c)
	if _, err := b.mem.End(context.Background(), c.ID, call.Completed, call.ReasonSystemCallLost, call.Result{}); err != nil {
		t.Fatal(err)
	}
	cl.expectEnd(call.Completed, call.ReasonSystemCallLost, protocol.CloseCallEnded)
	b.waitLive(t, 0)
}

func TestServerClose(t *testing.T) {
	b := setup(t)
	c1, c2 := b.webCall(), b.webCall()
	cl1, cl2 := b.dialFirst(t, c1), b.dialFirst(t, c2)
	if n := b.srv.Live(); n != 2 {
		t.Fatalf("Live() = %d, want 2", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- b.srv.Close(ctx) }()
	cl1.expectEnd(call.Completed, call.ReasonSystemShutdown, websocket.StatusGoingAway)
	cl2.expectEnd(call.Completed, call.ReasonSystemShutdown, websocket.StatusGoingAway)
	if err := <-closed; err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
	if n := b.srv.Live(); n != 0 {
		t.Errorf("Live() after Close = %d, want 0", n)
	}
	b.waitEnded(t, c1.ID, call.Completed, call.ReasonSystemShutdown)
	b.waitEnded(t, c2.ID, call.Completed, call.ReasonSystemShutdown)

	c3 := b.webCall()
	_, resp, err := b.rawDial(t, c3.ID, c3.AssistantID)
	refusedBody(t, resp, err, http.StatusServiceUnavailable, "unavailable")
	if got := b.mem.call(c3.ID).Status; got != call.Queued {
		t.Errorf("call refused during shutdown = %s, want still queued", got.Text())
	}
}

// A brain stuck until its context ends does not hold Close up.
func TestCloseWithBlockingBrain(t *testing.T) {
	inside := make(chan struct{})
	b := setup(t, func(o *setupOptions) {
		o.cfg = func(c *harnessConfig) {
			c.Brains = brainOf(respondFunc(func(ctx context.Context, _ string, emit func(string)) (conversation.Reply, error) {
				close(inside)
				<-ctx.Done()
				return conversation.Reply{}, ctx.Err()
			}))
		}
	})
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.say("Think hard about this.")
	cl.expect(protocol.TypeTranscript)
	<-inside
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- b.srv.Close(ctx) }()
	cl.expectEnd(call.Completed, call.ReasonSystemShutdown, websocket.StatusGoingAway)
	if err := <-closed; err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
	// Waiting for the brain would take Close's whole 5 s and fail it; a
	// loaded machine may slow the rest down, so only that is excluded.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Close() took %v with a blocked brain, want it not to wait for the brain (its budget is 5 s)", d)
	}
	b.waitEnded(t, c.ID, call.Completed, call.ReasonSystemShutdown)
}

// The HTTP server's timeouts stay on a hijacked connection unless cleared;
// a call outlives them.
func TestServerTimeoutsDoNotEndCalls(t *testing.T) {
	b := setup(t, func(o *setupOptions) {
		o.httpServer = func(s *http.Server) {
			s.ReadTimeout, s.WriteTimeout, s.ReadHeaderTimeout = 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
		}
	})
	c := b.webCall()
	cl := b.dialFirst(t, c)
	time.Sleep(600 * time.Millisecond)
	cl.exchange("Still here after the server's timeouts?")
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
}

// A client that does not read is cut off once the outbound buffer is full,
// without holding the conversation up, and its call ends like a dropped
// connection.
func TestSlowClientIsCutOff(t *testing.T) {
	var srv *Server
	chunk := strings.Repeat("x", 16<<10)
	b := setup(t, func(o *setupOptions) {
		o.cfg = func(c *harnessConfig) {
			c.OutboundBuffer = 4
			c.Brains = brainOf(respondFunc(func(ctx context.Context, _ string, emit func(string)) (conversation.Reply, error) {
				for i := 0; i < 100000 && srv.Stats().Overflows == 0; i++ {
					emit(chunk)
				}
				return conversation.Reply{Text: "cut short"}, nil
			}))
		}
	})
	srv = b.srv
	c := b.webCall()
	cl := b.dialFirst(t, c)
	cl.say("Tell me everything.") // and never read again
	waitFor(t, "an overflow", func() bool { return b.srv.Stats().Overflows == 1 })
	b.waitEnded(t, c.ID, call.Completed, call.ReasonCustomerEnded)
	b.waitLive(t, 0)
}

// A client that never answers the close handshake holds Close up for at
// most WriteTimeout.
func TestCloseWithUnresponsiveClient(t *testing.T) {
	b := setup(t, func(o *setupOptions) { o.cfg = func(c *harnessConfig) { c.WriteTimeout = 300 * time.Millisecond } })
	c := b.webCall()
	b.dialFirst(t, c) // and never read again
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.srv.Close(ctx); err != nil {
		t.Errorf("Close() = %v, want nil", err)
	}
	// Waiting for the client would take Close's whole 5 s and fail it; a
	// loaded machine may slow the 300 ms WriteTimeout down, so only that is
	// excluded.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Close() took %v, want it held up only by WriteTimeout (300ms), not its 5 s budget", d)
	}
	b.waitEnded(t, c.ID, call.Completed, call.ReasonSystemShutdown)
}

// TestDrain: a draining server refuses new connections with 503 and
// Retry-After, leaving their calls queued for another node, and its live
// sessions go on until their calls end.
func TestDrain(t *testing.T) {
	b := setup(t)
	live := b.webCall()
	cl := b.dialFirst(t, live)
	b.srv.Drain()
	c := b.webCall()
	_, resp, err := b.rawDial(t, c.ID, c.AssistantID)
	refusedBody(t, resp, err, http.StatusServiceUnavailable, "unavailable")
	if got := resp.Header.Get("Retry-After"); got != DrainRetryAfter {
		t.Errorf("Retry-After of a connection refused while draining = %q, want %q", got, DrainRetryAfter)
	}
	if got := b.mem.call(c.ID).Status; got != call.Queued {
		t.Errorf("call refused while draining = %s, want still queued", got.Text())
	}
	cl.exchange("still there?")
	if n := b.srv.Live(); n != 1 {
		t.Errorf("Live() while draining = %d, want 1 (the live session goes on)", n)
	}
	cl.send(`{"type":"hangup"}`)
	cl.expectEnd(call.Completed, call.ReasonCustomerEnded, websocket.StatusNormalClosure)
	b.waitLive(t, 0)
}
