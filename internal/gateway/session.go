package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/telephony"
)

// enqueueGrace is the longest a sender (the call runtime, the reader)
// waits for room in a full outbound queue before the client is taken to be
// not reading and is cut off.
const enqueueGrace = 50 * time.Millisecond

// Why a session's connection is cut without a close handshake, or with 1008.
var (
	errOverflow = errors.New("gateway: outbound buffer full: the client is not reading")
	errCut      = errors.New("gateway: connection cut")
	errNoLine   = errors.New("gateway: a web call has no phone line")
	errEnded    = errors.New("gateway: the line has ended")
)

// session is one websocket connection and the call it carries. It is the
// call's telephony.Line: the call runtime runs the call over it, and it
// implements every event of telephony.Listener itself (no NopListener),
// which is how the client is told everything the protocol promises.
type session struct {
	srv  *Server
	log  *slog.Logger
	call call.Call

	// kill cancels the connection's context, with a cause, to cut the
	// client off now: the outbound buffer overflowed, or the session is
	// being torn down. killed is that context's Done channel.
	kill   context.CancelCauseFunc
	killed <-chan struct{}

	mu   sync.Mutex
	conn *websocket.Conn
	raw  net.Conn // the hijacked connection: closing it unblocks every read and write

	queue chan outbound // server events for the writer, bounded

	closing    atomic.Bool // call.ended is queued: nothing may follow it
	muted      atomic.Bool // a fatal error is queued: only call.ended may follow it
	writerGone atomic.Bool // the writer has stopped: nothing more will be sent
	overflowed atomic.Bool
	abused     atomic.Bool // the client broke the abuse rule: close 4400
	broken     atomic.Bool // the gateway failed (a recovered panic): close 1011
	shut       atomic.Bool // Server.Close asked the call to end (system-shutdown)
	finishOnce sync.Once

	// The line's side. rx is what the runtime receives the client's
	// input with, set by Receive (rxReady is closed then); the reader
	// waits for it. ended takes the line's own end (the client hung up or
	// went away), once. hungUp is closed by Hangup: the runtime is done
	// with the line. rxMu is held while the reader calls rx, and rxOff is
	// set under it as Receive returns: the Receiver is never called after
	// Receive has returned (the reader may be inside StartAudio or Audio
	// when the runtime hangs up).
	rx       telephony.Receiver
	rxReady  chan struct{}
	rxMu     sync.Mutex
	rxOff    bool
	ended    chan telephony.End
	endOnce  sync.Once
	hungUp   chan struct{}
	hangOnce sync.Once
	// over is set at the line's end, its own or the runtime's Hangup:
	// Write fails from then on.
	over    atomic.Bool
	audioOn atomic.Bool // the client's audio is on: binary frames are audio
	wg      sync.WaitGroup
	// opened is closed once the reader has handled the client's first
	// frame, or openGrace after the upgrade: the conversation waits for it
	// (Capabilities.Ready), so that a client that turns audio on as it
	// connects hears the first message.
	opened     chan struct{}
	openedOnce sync.Once

	// Settings from session.update, owned by the reader.
	audio    protocol.Audio
	metadata json.RawMessage
}

var _ telephony.Line = (*session)(nil)

// openGrace is how long the first message waits for the client's first
// frame (session.update, usually) before it is sent anyway.
const openGrace = 500 * time.Millisecond

// outbound is one item of the writer's queue.
type outbound struct {
	ev protocol.ServerEvent
	// close, when set, closes the socket after ev: ev is call.ended.
	close closing
	// audio, when set, is one binary frame of assistant audio.
	audio []byte
	// fatal marks a fatal error event, which is sent even though the
	// session is muted (it is what mutes it).
	fatal bool
}

// closing is a close frame.
type closing struct {
	code   websocket.StatusCode
	reason string
}

// closeByReason is the one table from how a call ended to the close that
// follows call.ended (the protocol document, "Ending a call"). Every other
// end the conversation decides closes normally; see finish for abuse,
// failures and calls ended elsewhere.
var closeByReason = map[string]closing{
	call.ReasonSilenceTimeout: {protocol.CloseIdle, "idle"},
	call.ReasonSystemShutdown: {protocol.CloseGoingAway, "server shutting down"},
	call.ReasonAPIEnded:       closeElsewhere,
}

var (
	closeNormal    = closing{protocol.CloseNormal, "call ended"}
	closeAbuse     = closing{protocol.CloseProtocolAbuse, "protocol abuse"}
	closeInternal  = closing{protocol.CloseInternalError, "internal error"}
	closeElsewhere = closing{protocol.CloseCallEnded, "call ended elsewhere"}
	closeOverflow  = closing{websocket.StatusPolicyViolation, "client is not reading"}
)

// newSession makes the session of a claimed call. It returns the
// connection's context (canceled by kill), which ServeHTTP passes to
// serve; the session keeps its cancel function, not the context.
func newSession(s *Server, c call.Call) (ss *session, connCtx context.Context) {
	ss = &session{
		srv:     s,
		log:     s.log.With("call_id", c.ID, "org_id", c.OrgID),
		call:    c,
		queue:   make(chan outbound, s.cfg.OutboundBuffer),
		rxReady: make(chan struct{}),
		ended:   make(chan telephony.End, 1),
		hungUp:  make(chan struct{}),
		opened:  make(chan struct{}),
	}
	connCtx, ss.kill = context.WithCancelCause(context.Background())
	ss.killed = connCtx.Done()
	return ss, connCtx
}

// isKilled reports whether the connection has been cut.
func (ss *session) isKilled() bool {
	select {
	case <-ss.killed:
		return true
	default:
		return false
	}
}

// serve runs the session on an upgraded connection until the call has
// ended and every goroutine of the session is gone. connCtx is the
// connection's context newSession returned.
func (ss *session) serve(connCtx context.Context, conn *websocket.Conn, raw net.Conn) {
	ss.mu.Lock()
	ss.conn, ss.raw = conn, raw
	ss.mu.Unlock()
	if connCtx.Err() != nil { // Server.Close gave up during the handshake
		raw.Close()
	}
	// One byte over the limit is enough to tell a frame is too large; the
	// reader never reads further, so the library never closes with its own
	// 1009 and the client gets the protocol's 4400.
	conn.SetReadLimit(protocol.MaxFrame + 1)
	ss.send(protocol.SessionStarted{CallID: ss.call.ID, AssistantID: ss.call.AssistantID})

	readCtx, stopReading := context.WithCancel(context.Background())
	wg := &ss.wg
	grace := time.AfterFunc(openGrace, ss.markOpened)
	defer func() {
		// Whatever happened, the connection goes, and every goroutine with it.
		grace.Stop()
		stopReading()
		ss.cut()
		wg.Wait()
	}()
	writerDone := make(chan struct{})
	wg.Go(func() {
		defer close(writerDone)
		ss.guard("writer", func() { ss.write(connCtx) }, func() { ss.writerGone.Store(true); ss.cut() })
	})
	wg.Go(func() { ss.guard("reader", func() { ss.read(readCtx) }, nil) })

	rt := ss.srv.cfg.Runtime
	if !rt.Start(ss.call, ss) {
		// The node is shutting down: the runtime takes no more calls.
		ss.endDirect(call.Completed, call.ReasonSystemShutdown)
		ss.finish(call.Completed, call.ReasonSystemShutdown, false)
		_ = ss.Hangup(context.Background())
	} else if ss.shut.Load() {
		rt.Cancel(ss.call.ID) // Server.Close came before the call ran
	}

	<-ss.hungUp
	// call.ended is queued (or the writer is gone): let the writer flush
	// and close, within bounds.
	t := time.NewTimer(2 * ss.srv.cfg.WriteTimeout)
	defer t.Stop()
	select {
	case <-writerDone:
	case <-t.C:
		ss.log.Warn("the writer did not finish in time; cutting the connection")
	}
}

// shutDown ends the session's call as the server shuts down
// (system-shutdown; Server.Close).
func (ss *session) shutDown() {
	ss.shut.Store(true)
	ss.srv.cfg.Runtime.Cancel(ss.call.ID)
}

// cut drops the connection without a close handshake.
func (ss *session) cut() {
	ss.kill(errCut)
	ss.mu.Lock()
	raw := ss.raw
	ss.mu.Unlock()
	if raw != nil {
		raw.Close()
	}
}

// guard runs one goroutine's work; a panic is logged, fails the call
// (failed, ReasonSystemError) and runs onPanic. It never re-panics: one bad
// session must not take the server down.
func (ss *session) guard(name string, fn func(), onPanic func()) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		ss.srv.stats.panics.Add(1)
		ss.log.Error("panic in a gateway session; failing the call", "goroutine", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		ss.broken.Store(true)
		ss.endDirect(call.Failed, ReasonSystemError)
		ss.lineEnd(telephony.End{Outcome: string(call.Failed), Reason: ReasonSystemError})
		if onPanic != nil {
			onPanic()
		}
	}()
	fn()
}

// endDirect ends the call outside the conversation (handshake failures,
// panics, a runtime that takes no more calls). When the call has already
// ended it changes nothing.
func (ss *session) endDirect(outcome call.Outcome, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if _, err := ss.srv.cfg.Calls.End(ctx, ss.call.ID, outcome, reason, call.Result{}); err != nil {
		ss.log.Error("ending the call failed", "outcome", outcome, "reason", reason, "err", err)
	}
}

// --- the telephony.Line the runtime runs the call over ---

// Capabilities: no keypad and no transfer (so the conversation is not
// offered sendDTMF or transferCall, and the API's transfer is refused);
// the first message waits for the client's first frame (opened).
func (ss *session) Capabilities() telephony.Capabilities {
	return telephony.Capabilities{Ready: ss.opened}
}

// Format is zero: a web call starts as text; the client turns audio on
// with session.update (Receiver.StartAudio).
func (ss *session) Format() audio.Format { return audio.Format{} }

// Receive hands the reader's input to rx until the client hangs up or goes
// away (completed, customer-ended-call, as the protocol's table says for
// both), the runtime hangs up (the zero End) or ctx ends.
func (ss *session) Receive(ctx context.Context, rx telephony.Receiver) telephony.End {
	ss.rx = rx
	close(ss.rxReady)
	defer func() {
		ss.rxMu.Lock()
		ss.rxOff = true
		ss.rxMu.Unlock()
	}()
	select {
	case e := <-ss.ended:
		// The runtime's hang-up closes the socket, which ends the line
		// too: once the runtime has hung up, its end is the one.
		select {
		case <-ss.hungUp:
			return telephony.End{}
		default:
		}
		return e
	case <-ss.hungUp:
		return telephony.End{}
	case <-ctx.Done():
		return telephony.End{}
	}
}

// lineEnd reports the line's own end, once. Once call.ended is queued
// (the runtime ended the call: CallEnded, then Hangup) the socket's close
// is that end's consequence, so the line reports the zero End: the
// client's close racing the runtime's Hangup must not turn this side's
// end into customer-ended-call.
func (ss *session) lineEnd(e telephony.End) {
	ss.over.Store(true)
	if ss.closing.Load() {
		e = telephony.End{}
	}
	ss.endOnce.Do(func() { ss.ended <- e })
}

// deliver waits until the runtime receives (Receive has been called) and
// calls fn with its Receiver; false when it never will (the call is over,
// Receive has returned, or the connection was cut).
func (ss *session) deliver(fn func(telephony.Receiver)) bool {
	select {
	case <-ss.rxReady:
	case <-ss.hungUp:
		return false
	case <-ss.killed:
		return false
	}
	ss.rxMu.Lock()
	defer ss.rxMu.Unlock()
	if ss.rxOff {
		return false
	}
	fn(ss.rx)
	return true
}

// Write queues one frame of assistant audio. It fails once the line has
// ended (the client hung up or went away, or the runtime hung up) or the
// session can send nothing more, which stops the pipeline's pacer.
func (ss *session) Write(frame []byte) error {
	if ss.isKilled() || ss.writerGone.Load() {
		return errCut
	}
	if ss.over.Load() {
		return errEnded
	}
	ss.enqueue(outbound{audio: frame})
	return nil
}

// Clear does nothing: the client is told assistant.audio.clear (AudioClear).
func (ss *session) Clear() {}

func (ss *session) SendDTMF(context.Context, string) error { return errNoLine }

func (ss *session) Transfer(context.Context, string) error { return errNoLine }

// Hangup tells the session the runtime is done with the line; serve then
// lets the writer flush call.ended and close.
func (ss *session) Hangup(context.Context) error {
	ss.over.Store(true)
	ss.hangOnce.Do(func() { close(ss.hungUp) })
	return nil
}

// markOpened lets the conversation start (see opened).
func (ss *session) markOpened() { ss.openedOnce.Do(func() { close(ss.opened) }) }

// --- what the client is told ---

func (ss *session) Delta(turnID, text string) {
	ss.send(protocol.TextDelta{TurnID: turnID, Text: text})
}

func (ss *session) TurnDone(turnID, text string, interrupted bool) {
	ss.send(protocol.TurnDone{TurnID: turnID, Text: text, Interrupted: interrupted})
}

func (ss *session) Transcript(role, text, turnID string, final bool) {
	ss.send(protocol.Transcript{Role: protocol.Role(role), Text: text, TurnID: turnID, Final: final})
}

func (ss *session) SpeechStarted()           { ss.send(protocol.SpeechStarted{}) }
func (ss *session) SpeechStopped()           { ss.send(protocol.SpeechStopped{}) }
func (ss *session) AudioStart(turnID string) { ss.send(protocol.AudioStart{TurnID: turnID}) }
func (ss *session) AudioDone(turnID string)  { ss.send(protocol.AudioDone{TurnID: turnID}) }
func (ss *session) AudioClear(turnID string, playedMs int64) {
	ss.send(protocol.AudioClear{TurnID: turnID, PlayedMs: playedMs})
}

// AudioPause and AudioResume: the client's own buffer stops at once too
// (assistant.audio.pause / .resume).
func (ss *session) AudioPause(turnID string, playedMs int64) {
	ss.send(protocol.AudioPause{TurnID: turnID, PlayedMs: playedMs})
}

func (ss *session) AudioResume(turnID string, playedMs int64) {
	ss.send(protocol.AudioResume{TurnID: turnID, PlayedMs: playedMs})
}

// CallEnded sends call.ended, then the close.
func (ss *session) CallEnded(outcome call.Outcome, reason string, elsewhere bool) {
	ss.finish(outcome, reason, elsewhere)
}

// finish queues the last event, call.ended, and the close that follows it.
// outcome and reason are the call record's; elsewhere (the call ended
// outside its conversation first) closes 4410. Abuse closes 4400 after the
// fatal error the reader sent; a failure sends a fatal `internal` error
// first and closes 1011.
func (ss *session) finish(outcome call.Outcome, reason string, elsewhere bool) {
	ss.finishOnce.Do(func() {
		cl, ok := closeByReason[reason]
		if !ok {
			cl = closeNormal
		}
		switch {
		case ss.abused.Load():
			cl = closeAbuse
		case ss.broken.Load() || (outcome == call.Failed && !elsewhere):
			ss.fatal(protocol.ErrorEventFor(errors.New(reason)))
			cl = closeInternal
		case elsewhere:
			cl = closeElsewhere
		}
		ss.log.Info("call ended", "outcome", outcome, "reason", reason, "close", int(cl.code))
		ss.closing.Store(true)
		ss.enqueue(outbound{ev: protocol.CallEnded{Outcome: string(outcome), EndedReason: reason}, close: cl})
	})
}

// send queues a server event for the writer.
func (ss *session) send(ev protocol.ServerEvent) { ss.enqueue(outbound{ev: ev}) }

// fatal queues a fatal error event; nothing but call.ended follows it.
func (ss *session) fatal(ev protocol.ErrorEvent) {
	ss.muted.Store(true)
	ss.enqueue(outbound{ev: ev, fatal: true})
}

// enqueue hands o to the writer. It never blocks for more than
// enqueueGrace: a client that lets the queue fill up that long is not
// reading, and is cut off with 1008 (its call then ends as a dropped
// connection does).
func (ss *session) enqueue(o outbound) {
	last := o.close.code != 0
	switch {
	case ss.writerGone.Load(),
		!last && ss.closing.Load(),
		!last && !o.fatal && ss.muted.Load():
		return
	}
	select {
	case ss.queue <- o:
		return
	default:
	}
	if ss.isKilled() {
		return
	}
	t := time.NewTimer(enqueueGrace)
	defer t.Stop()
	select {
	case ss.queue <- o:
	case <-ss.killed:
	case <-t.C:
		if !ss.writerGone.Load() && ss.overflowed.CompareAndSwap(false, true) {
			ss.srv.stats.overflows.Add(1)
			ss.log.Warn("the client is not reading; closing with 1008", "buffer", cap(ss.queue))
		}
		ss.kill(errOverflow)
	}
}

// write is the writer: the only goroutine that writes data frames, so seq
// follows the order frames leave the socket. It stamps seq and at as it
// sends, and ends after the close that follows call.ended, or when the
// connection is cut (ctx, the connection's context, is canceled) or fails.
func (ss *session) write(ctx context.Context) {
	defer ss.writerGone.Store(true)
	var seq int64
	for {
		if ctx.Err() != nil {
			if errors.Is(context.Cause(ctx), errOverflow) {
				ss.close(closeOverflow)
			}
			return
		}
		var o outbound
		select {
		case <-ctx.Done():
			continue
		case o = <-ss.queue:
		}
		if o.audio != nil {
			if err := ss.writeFrame(ctx, websocket.MessageBinary, o.audio); err != nil {
				ss.log.Debug("write failed: the client is gone", "err", err)
				return
			}
			continue
		}
		if o.ev != nil {
			b, err := protocol.Encode(protocol.Stamp(o.ev, seq+1, ss.srv.cfg.Now()))
			if err != nil { // a bug: the event breaks the protocol's promises
				ss.log.Error("server event does not encode; dropped", "type", o.ev.Type(), "err", err)
			} else {
				seq++
				if err := ss.writeFrame(ctx, websocket.MessageText, b); err != nil {
					ss.log.Debug("write failed: the client is gone", "err", err)
					return
				}
			}
		}
		if o.close.code != 0 {
			ss.close(o.close)
			return
		}
	}
}

// writeFrame writes one frame within WriteTimeout, or until ctx (the
// connection's) is canceled.
func (ss *session) writeFrame(ctx context.Context, typ websocket.MessageType, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, ss.srv.cfg.WriteTimeout)
	defer cancel()
	return ss.conn.Write(ctx, typ, b)
}

// close closes the socket with a handshake, cutting it if the client does
// not answer within WriteTimeout.
func (ss *session) close(cl closing) {
	t := time.AfterFunc(ss.srv.cfg.WriteTimeout, func() { ss.raw.Close() })
	defer t.Stop()
	if err := ss.conn.Close(cl.code, cl.reason); err != nil {
		ss.log.Debug("close handshake incomplete", "code", int(cl.code), "err", err)
	}
}

// read is the reader: it decodes each client frame and acts on it, until
// the socket closes or the client breaks the abuse rule. Its end is the
// line's end (the client went away, or broke the rules): the call then
// ends customer-ended-call. ctx stops the reading.
func (ss *session) read(ctx context.Context) {
	defer ss.lineEnd(telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded})
	defer ss.markOpened()
	var bad protocol.BadFrames
	hungUp := false
	for {
		typ, r, err := ss.conn.Reader(ctx)
		if err != nil {
			ss.log.Debug("socket closed", "close", int(websocket.CloseStatus(err)), "err", err)
			return
		}
		if hungUp { // frames after hangup are ignored
			if _, err := io.Copy(io.Discard, r); err != nil {
				return
			}
			continue
		}
		on := ss.audioOn.Load()
		if typ != websocket.MessageText && !on {
			ss.abuseErr(protocol.CheckBinary(0, false))
			return
		}
		frame, err := io.ReadAll(io.LimitReader(r, protocol.MaxFrame+1))
		if err != nil {
			ss.log.Debug("socket closed mid-frame", "err", err)
			return
		}
		if typ != websocket.MessageText {
			if err := protocol.CheckBinary(len(frame), true); err != nil {
				ss.abuseErr(err)
				return
			}
			if !ss.deliver(func(rx telephony.Receiver) { rx.Audio(frame) }) { // audio is on: the runtime receives
				return
			}
			continue
		}
		ev, err := protocol.Decode(frame)
		if err != nil {
			if pe := (*protocol.Error)(nil); errors.As(err, &pe) && pe.Fatal() {
				ss.abuse(pe)
				return
			}
			if bad.Add(ss.srv.cfg.Now()) {
				ss.abuse(&protocol.Error{Code: protocol.CodeTooManyErrors,
					Message: fmt.Sprintf("more than %d bad frames within %s", protocol.BadFrameLimit, protocol.BadFrameWindow)})
				return
			}
			ss.send(protocol.ErrorEventFor(err))
			ss.markOpened()
			continue
		}
		if _, upd := ev.(protocol.SessionUpdate); !upd {
			ss.markOpened()
		}
		if !ss.handle(ev, &hungUp) {
			return
		}
		ss.markOpened()
	}
}

// handle acts on one client event; false means the call is over here (the
// runtime will receive nothing more).
func (ss *session) handle(ev protocol.ClientEvent, hungUp *bool) bool {
	switch e := ev.(type) {
	case protocol.UserText:
		return ss.deliver(func(rx telephony.Receiver) { rx.Text(e.Text) })
	case protocol.Hangup:
		*hungUp = true
		ss.lineEnd(telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded})
	case protocol.Ping:
		ss.send(protocol.Pong{ID: e.ID})
	case protocol.SessionUpdate:
		return ss.update(e)
	case protocol.PlaybackMark:
		if ss.audioOn.Load() {
			ss.deliver(func(rx telephony.Receiver) { rx.Mark(e.TurnID, e.PlayedMs) })
		}
	}
	return true
}

// update applies session.update: metadata; the audio format, until the
// first binary frame; and textOnly false, which turns the call's audio on
// in that format (the runtime starts its voice pipeline). A request the
// session cannot honour is answered with a non-fatal `unsupported` naming
// the field, and changes nothing.
func (ss *session) update(u protocol.SessionUpdate) bool {
	on := ss.audioOn.Load()
	switch {
	case u.Audio != nil && on && *u.Audio != ss.audio:
		// The pipeline's decoder and encoder are built for the format
		// textOnly false came with; clients send both in one update.
		ss.send(protocol.ErrorEventFor(protocol.AudioLocked(ss.audio)))
		return true
	case u.TextOnly != nil && *u.TextOnly && on:
		ss.send(protocol.ErrorEventFor(protocol.AudioStaysOn()))
		return true
	}
	if u.Audio != nil && !on {
		ss.audio = *u.Audio
	}
	if u.Metadata != nil {
		ss.metadata = u.Metadata
	}
	if u.TextOnly == nil || *u.TextOnly || on {
		return true
	}
	f := ss.audio
	if f.Encoding == "" {
		f = protocol.DefaultAudio
	}
	var err error
	if !ss.deliver(func(rx telephony.Receiver) {
		err = rx.StartAudio(audio.Format{Encoding: audio.Encoding(f.Encoding), SampleRate: f.SampleRate})
	}) {
		return false
	}
	if err != nil {
		ss.log.Info("audio refused", "err", err)
		ss.send(protocol.ErrorEventFor(protocol.AudioUnavailable()))
		return true
	}
	ss.audio = f
	ss.audioOn.Store(true)
	return true
}

// abuseErr is abuse for an error of the protocol's checks (a *protocol.Error).
func (ss *session) abuseErr(err error) {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		pe = &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()} // CheckBinary returns only *protocol.Error
	}
	ss.abuse(pe)
}

// abuse reports a fatal client error and marks the session for close 4400;
// the reader then stops, which ends the call (customer-ended-call, as the
// protocol document's table says).
func (ss *session) abuse(pe *protocol.Error) {
	ss.srv.stats.abuse.Add(1)
	ss.log.Info("the client broke the abuse rule; closing with 4400", "code", pe.Code, "message", pe.Message)
	ss.abused.Store(true)
	ss.fatal(protocol.ErrorEventFor(pe))
}

// hijackRecorder keeps the hijacked connection, so that the session can cut
// it whatever the websocket library is blocked in, and clears the deadlines
// the HTTP server left on it (its ReadTimeout and WriteTimeout would
// otherwise end every call after a few seconds).
type hijackRecorder struct {
	http.ResponseWriter
	conn net.Conn
}

func (h *hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Time{})
	h.conn = c
	return c, brw, nil
}
