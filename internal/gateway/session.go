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

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/gateway/protocol"
	"switchboard/internal/recording"
	"switchboard/internal/voice"
)

const (
	// inputBuffer is how many client turns may wait while the assistant is
	// replying; past it the reader waits (TCP pushes back on the client).
	inputBuffer = 16
	// enqueueGrace is the longest a sender (the conversation, the reader)
	// waits for room in a full outbound queue before the client is taken
	// to be not reading and is cut off.
	enqueueGrace = 50 * time.Millisecond
)

// Why a session's connection is cut without a close handshake, or with 1008.
var (
	errOverflow = errors.New("gateway: outbound buffer full: the client is not reading")
	errCut      = errors.New("gateway: connection cut")
)

// session is one websocket connection and the call it carries.
type session struct {
	srv  *Server
	log  *slog.Logger
	call call.Call
	asst assistant.Assistant

	// stopEngine cancels the conversation's context: Server.Close (the
	// call ends system-shutdown) and CallEnded (it ended elsewhere) call it.
	stopEngine context.CancelFunc
	// kill cancels the connection's context, with a cause, to cut the
	// client off now: the outbound buffer overflowed, or the session is
	// being torn down. killed is that context's Done channel.
	kill   context.CancelCauseFunc
	killed <-chan struct{}

	mu   sync.Mutex
	conn *websocket.Conn
	raw  net.Conn // the hijacked connection: closing it unblocks every read and write

	queue    chan outbound           // server events for the writer, bounded
	in       chan conversation.Input // reader → conversation; the reader closes it
	convDone chan struct{}           // closed when the conversation has returned

	closing    atomic.Bool // call.ended is queued: nothing may follow it
	muted      atomic.Bool // a fatal error is queued: only call.ended may follow it
	writerGone atomic.Bool // the writer has stopped: nothing more will be sent
	overflowed atomic.Bool
	abused     atomic.Bool // the client broke the abuse rule: close 4400
	broken     atomic.Bool // the gateway failed (a recovered panic): close 1011
	ending     atomic.Bool // this session is ending its call itself
	rec        atomic.Pointer[call.Call]
	finishOnce sync.Once

	// Settings from session.update, owned by the reader.
	audio    protocol.Audio
	metadata json.RawMessage

	// voice is the audio pipeline once the client turned audio on
	// (session.update textOnly false); nil in text-only sessions.
	voice atomic.Pointer[voice.Pipeline]
	// recorder records the audio, when the assistant has recording on.
	recorder  atomic.Pointer[recording.Recorder]
	inMu      sync.RWMutex
	inClosed  bool           // the reader closed in
	wg        sync.WaitGroup // every goroutine of the session
	expecting []string       // the engine's expected answers before audio was on
	// opened is closed once the reader has handled the client's first
	// frame: the conversation waits for it (up to openGrace), so that a
	// client that turns audio on as it connects hears the first message.
	opened     chan struct{}
	openedOnce sync.Once
}

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
}

var (
	closeNormal    = closing{protocol.CloseNormal, "call ended"}
	closeAbuse     = closing{protocol.CloseProtocolAbuse, "protocol abuse"}
	closeInternal  = closing{protocol.CloseInternalError, "internal error"}
	closeElsewhere = closing{protocol.CloseCallEnded, "call ended elsewhere"}
	closeOverflow  = closing{websocket.StatusPolicyViolation, "client is not reading"}
)

// newSession makes the session of a claimed call. It returns the session's
// two lifetimes, which ServeHTTP passes to serve: the conversation's
// context (canceled by stopEngine) and the connection's (canceled by kill).
// The session keeps their cancel functions, not the contexts.
func newSession(s *Server, c call.Call, a assistant.Assistant) (ss *session, engineCtx, connCtx context.Context) {
	ss = &session{
		srv:      s,
		log:      s.log.With("call_id", c.ID, "org_id", c.OrgID),
		call:     c,
		asst:     a,
		queue:    make(chan outbound, s.cfg.OutboundBuffer),
		in:       make(chan conversation.Input, inputBuffer),
		convDone: make(chan struct{}),
		opened:   make(chan struct{}),
	}
	engineCtx, ss.stopEngine = context.WithCancel(context.Background())
	connCtx, ss.kill = context.WithCancelCause(context.Background())
	ss.killed = connCtx.Done()
	return ss, engineCtx, connCtx
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
// ended and every goroutine of the session is gone. engineCtx and connCtx
// are the lifetimes newSession returned.
func (ss *session) serve(engineCtx, connCtx context.Context, conn *websocket.Conn, raw net.Conn) {
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
	defer func() {
		// Whatever happened, the connection goes, and every goroutine with it.
		stopReading()
		ss.cut()
		wg.Wait()
	}()
	writerDone := make(chan struct{})
	wg.Go(func() {
		defer close(writerDone)
		ss.guard("writer", func() { ss.write(connCtx) }, func() { ss.writerGone.Store(true); ss.cut() })
	})
	wg.Go(func() { ss.guard("reader", func() { ss.read(readCtx, connCtx) }, nil) })
	wg.Go(func() {
		defer close(ss.convDone)
		ss.guard("conversation", func() { ss.converse(engineCtx) }, func() { ss.finish(call.Failed, ReasonSystemError) })
	})

	<-ss.convDone
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
		if onPanic != nil {
			onPanic()
		}
	}()
	fn()
}

// converse makes the assistant's brain and runs the conversation, which
// ends the call exactly once and reports it through Output.Ended. ctx is
// the conversation's: canceled, the call ends system-shutdown.
func (ss *session) converse(ctx context.Context) {
	out := output{ss}
	grace := time.NewTimer(openGrace)
	select {
	case <-ss.opened:
	case <-grace.C:
	case <-ctx.Done():
	}
	grace.Stop()
	brain, err := ss.srv.cfg.Brains.New(ctx, ss.call, ss.asst)
	if err != nil {
		outcome, reason := call.Failed, call.ReasonModelFailed
		if ctx.Err() != nil {
			outcome, reason = call.Completed, call.ReasonSystemShutdown
		} else {
			ss.log.Error("the assistant's brain could not be made; ending the call", "err", err)
		}
		ss.endDirect(outcome, reason)
		out.Ended(outcome, reason)
		return
	}
	conversation.Run(ctx, conversation.Config{
		Call:      ss.call,
		Assistant: ss.asst,
		Brain:     brain,
		Turns:     ss.srv.cfg.Store,
		Ender:     ender{ss},
		Log:       ss.log,
		Now:       ss.srv.cfg.Now,
	}, ss.in, out)
}

// ender ends the session's call and keeps the record the store returned,
// so that call.ended says what the record says.
type ender struct{ s *session }

func (e ender) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	e.s.ending.Store(true)
	e.s.finishRecording() // in place before the end is recorded
	c, err := e.s.srv.cfg.Calls.End(ctx, callID, outcome, reason, result)
	if err == nil && c.Status == call.Ended {
		e.s.rec.Store(&c)
	}
	return c, err
}

// endDirect ends the call outside the conversation (handshake failures,
// panics). When the call has already ended it changes nothing.
func (ss *session) endDirect(outcome call.Outcome, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if _, err := (ender{ss}).End(ctx, ss.call.ID, outcome, reason, call.Result{}); err != nil {
		ss.log.Error("ending the call failed", "outcome", outcome, "reason", reason, "err", err)
	}
}

// output is the conversation's conversation.Output. In a text session
// every method queues events for the writer and returns at once; once
// audio is on, the engine's output goes through the voice pipeline, which
// speaks it and sends its events through wire.
type output struct{ s *session }

func (o output) Delta(turnID, text string) {
	if v := o.s.voice.Load(); v != nil {
		v.Delta(turnID, text)
		return
	}
	wire(o).Delta(turnID, text)
}

func (o output) TurnDone(turnID, text string, interrupted bool) {
	if v := o.s.voice.Load(); v != nil {
		v.TurnDone(turnID, text, interrupted)
		return
	}
	wire(o).TurnDone(turnID, text, interrupted)
}

func (o output) Transcript(role, text, turnID string, final bool) {
	wire(o).Transcript(role, text, turnID, final)
}

func (o output) Ended(outcome call.Outcome, reason string) { o.s.finish(outcome, reason) }

// TextDone implements conversation.Speaker: a turn is spoken once audio is on.
func (o output) TextDone(turnID, text string) bool {
	if v := o.s.voice.Load(); v != nil {
		return v.TextDone(turnID, text)
	}
	return false
}

// Cut implements conversation.Speaker.
func (o output) Cut(turnID, shown string) (string, *call.Breakdown) {
	if v := o.s.voice.Load(); v != nil {
		return v.Cut(turnID, shown)
	}
	return shown, nil
}

// Expect implements conversation.Expecter; the answers are kept for a
// pipeline that starts later.
func (o output) Expect(answers []string) {
	if v := o.s.voice.Load(); v != nil {
		v.Expect(answers)
		return
	}
	o.s.inMu.Lock()
	o.s.expecting = answers
	o.s.inMu.Unlock()
}

// wire is the voice pipeline's Output: events and audio straight to the
// writer's queue.
type wire struct{ s *session }

func (w wire) Delta(turnID, text string) {
	w.s.send(protocol.TextDelta{TurnID: turnID, Text: text})
}

func (w wire) TurnDone(turnID, text string, interrupted bool) {
	w.s.send(protocol.TurnDone{TurnID: turnID, Text: text, Interrupted: interrupted})
}

func (w wire) Transcript(role, text, turnID string, final bool) {
	w.s.send(protocol.Transcript{Role: protocol.Role(role), Text: text, TurnID: turnID, Final: final})
}

func (w wire) Ended(outcome call.Outcome, reason string) { w.s.finish(outcome, reason) }
func (w wire) SpeechStarted()                            { w.s.send(protocol.SpeechStarted{}) }
func (w wire) SpeechStopped()                            { w.s.send(protocol.SpeechStopped{}) }
func (w wire) AudioStart(turnID string)                  { w.s.send(protocol.AudioStart{TurnID: turnID}) }
func (w wire) AudioDone(turnID string)                   { w.s.send(protocol.AudioDone{TurnID: turnID}) }
func (w wire) AudioClear(turnID string, playedMs int64) {
	w.s.send(protocol.AudioClear{TurnID: turnID, PlayedMs: playedMs})
}

var _ voice.Pauser = wire{}

// AudioPause and AudioResume make wire a voice.Pauser: the client's own
// buffer stops at once too (assistant.audio.pause / .resume).
func (w wire) AudioPause(turnID string, playedMs int64) {
	w.s.send(protocol.AudioPause{TurnID: turnID, PlayedMs: playedMs})
}

func (w wire) AudioResume(turnID string, playedMs int64) {
	w.s.send(protocol.AudioResume{TurnID: turnID, PlayedMs: playedMs})
}

// Audio queues one frame of assistant audio. It fails once the session
// can send nothing more, which stops the pipeline's pacer.
func (w wire) Audio(frame []byte) error {
	if w.s.isKilled() || w.s.writerGone.Load() {
		return errCut
	}
	w.s.enqueue(outbound{audio: frame})
	return nil
}

// finish queues the last event, call.ended, and the close that follows it.
// The outcome and reason are the call record's when the record disagrees
// with the conversation (the call ended elsewhere first: close 4410).
// Abuse closes 4400 after the fatal error the reader sent; a failure sends
// a fatal `internal` error first and closes 1011.
func (ss *session) finish(outcome call.Outcome, reason string) {
	ss.finishOnce.Do(func() {
		elsewhere := false
		if rec := ss.rec.Load(); rec != nil && (rec.Outcome != outcome || rec.EndedReason != reason) {
			outcome, reason, elsewhere = rec.Outcome, rec.EndedReason, true
		}
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
// the socket closes or the client breaks the abuse rule. Closing the input
// channel when it returns is what ends the call when the client goes away.
// ctx stops the reading; connCtx is the connection's, which a voice
// pipeline started here lives within.
func (ss *session) read(ctx, connCtx context.Context) {
	defer ss.closeIn()
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
		v := ss.voice.Load()
		if typ != websocket.MessageText && v == nil {
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
			if err := v.Write(frame); err != nil { // the format was validated: a bug
				ss.log.Error("audio frame refused", "err", err)
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
		switch e := ev.(type) {
		case protocol.UserText:
			if !ss.input(ctx, conversation.Input{Kind: conversation.UserText, Text: e.Text}) {
				return
			}
		case protocol.Hangup:
			hungUp = true
			if !ss.input(ctx, conversation.Input{Kind: conversation.Hangup}) {
				return
			}
		case protocol.Ping:
			ss.send(protocol.Pong{ID: e.ID})
		case protocol.SessionUpdate:
			ss.update(connCtx, e)
		case protocol.PlaybackMark:
			if v := ss.voice.Load(); v != nil {
				v.Mark(e.TurnID, e.PlayedMs)
			}
		}
		ss.markOpened()
	}
}

// markOpened lets the conversation start (see opened).
func (ss *session) markOpened() { ss.openedOnce.Do(func() { close(ss.opened) }) }

// input hands a client event to the conversation, waiting while it is busy
// replying (bounded by the conversation's own turn timeout). The reader and
// the voice pipeline both send; only the reader closes (closeIn).
func (ss *session) input(ctx context.Context, in conversation.Input) bool {
	ss.inMu.RLock()
	defer ss.inMu.RUnlock()
	if ss.inClosed {
		return false
	}
	select {
	case ss.in <- in:
		return true
	case <-ss.convDone:
		return false
	case <-ctx.Done():
		return false
	}
}

// closeIn tells the conversation the client went away.
func (ss *session) closeIn() {
	ss.inMu.Lock()
	defer ss.inMu.Unlock()
	ss.inClosed = true
	close(ss.in)
}

// update applies session.update: metadata; the audio format, until the
// first binary frame; and textOnly false, which starts the voice pipeline
// in that format. A request the session cannot honour is answered with a
// non-fatal `unsupported` naming the field, and changes nothing. connCtx is
// the connection's context, within which a voice pipeline lives.
func (ss *session) update(connCtx context.Context, u protocol.SessionUpdate) {
	on := ss.voice.Load() != nil
	switch {
	case u.Audio != nil && on && *u.Audio != ss.audio:
		// The pipeline's decoder and encoder are built for the format
		// textOnly false came with; clients send both in one update.
		ss.send(protocol.ErrorEventFor(protocol.AudioLocked(ss.audio)))
		return
	case u.TextOnly != nil && *u.TextOnly && on:
		ss.send(protocol.ErrorEventFor(protocol.AudioStaysOn()))
		return
	}
	if u.Audio != nil && !on {
		ss.audio = *u.Audio
	}
	if u.Metadata != nil {
		ss.metadata = u.Metadata
	}
	if u.TextOnly != nil && !*u.TextOnly && !on {
		if err := ss.startVoice(connCtx); err != nil {
			ss.log.Info("audio refused", "err", err)
			ss.send(protocol.ErrorEventFor(protocol.AudioUnavailable()))
		}
	}
}

// startVoice turns audio on: the assistant's speech engines, a pipeline in
// the session's audio format, and its goroutine, owned by the session and
// stopped when the conversation ends or the connection is cut (connCtx).
func (ss *session) startVoice(connCtx context.Context) error {
	voices := ss.srv.cfg.Voices
	if voices == nil {
		return errors.New("this server has no speech engines")
	}
	stt, tts, err := voices.For(ss.asst)
	if err != nil {
		return err
	}
	f := ss.audio
	if f.Encoding == "" {
		f = protocol.DefaultAudio
	}
	format := audio.Format{Encoding: audio.Encoding(f.Encoding), SampleRate: f.SampleRate}
	cfg := voice.Settings(voice.Config{
		In: format, Out: format, Transcriber: stt, Synthesizer: tts,
		Input:    func(in conversation.Input) bool { return ss.input(connCtx, in) },
		Now:      ss.srv.cfg.Now,
		Log:      ss.log,
		Observer: ss.srv.cfg.VoiceObserver,
	}, ss.asst)
	var rec *recording.Recorder
	if ss.srv.cfg.Recordings != nil && ss.asst.Recording.Enabled {
		if rec, err = ss.srv.cfg.Recordings.Start(ss.call.OrgID, ss.call.ID); err != nil {
			ss.log.Warn("the call's recording did not start; the call goes on unrecorded", "err", err)
			rec = nil
		} else {
			cfg.Recorder = rec
		}
	}
	p, err := voice.New(cfg, wire{ss})
	if err != nil {
		if rec != nil {
			_ = rec.Close()
		}
		return err
	}
	ss.recorder.Store(rec)
	ss.inMu.RLock()
	if ss.expecting != nil {
		p.Expect(ss.expecting)
	}
	ss.inMu.RUnlock()
	ctx, cancel := context.WithCancel(connCtx)
	ss.wg.Go(func() {
		select {
		case <-ss.convDone:
		case <-ctx.Done():
		}
		cancel()
	})
	ss.wg.Go(func() {
		ss.guard("voice", func() {
			if err := p.Run(ctx); err != nil && ctx.Err() == nil {
				ss.log.Warn("the voice pipeline stopped", "err", err)
			}
			ss.finishRecording()
		}, nil)
	})
	ss.audio = f
	ss.voice.Store(p)
	return nil
}

// finishRecording puts the call's recording in place and on the call
// (once; a failed one is logged and deleted).
func (ss *session) finishRecording() {
	rec := ss.recorder.Load()
	if rec == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	ss.srv.cfg.Recordings.Finish(ctx, ss.call.OrgID, ss.call.ID, rec)
}

// abuse reports a fatal client error and marks the session for close 4400;
// the reader then stops, which ends the call (customer-ended-call, as the
// protocol document's table says).
// abuseErr is abuse for an error of the protocol's checks (a *protocol.Error).
func (ss *session) abuseErr(err error) {
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		pe = &protocol.Error{Code: protocol.CodeInternal, Message: err.Error()} // CheckBinary returns only *protocol.Error
	}
	ss.abuse(pe)
}

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
