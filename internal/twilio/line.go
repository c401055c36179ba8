package twilio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// ErrLineClosed is returned by Write, SendDTMF and Transfer once the line
// has ended.
var ErrLineClosed = errors.New("twilio: line closed")

// Queues between the line's reader and Receive.
const (
	// mediaQueue is one second of caller audio (20 ms messages); when
	// Receive falls behind, the oldest is dropped and counted.
	mediaQueue = 50
	// dtmfQueue holds keys pressed while Receive is busy; more are dropped.
	dtmfQueue = 32
	// markQueue holds the turns with a playback report not yet handed to
	// Receive; reports of one turn collapse into the latest.
	markQueue = 8
	// maxBadMessages in a row end the line: a stream that sends only
	// garbage is broken.
	maxBadMessages = 100
	// writeTimeout bounds one websocket write; a write that takes longer
	// closes the socket and ends the line.
	writeTimeout = 5 * time.Second
	// closeTimeout bounds waiting for the line's teardown in Hangup and
	// Transfer when their context has no deadline.
	closeTimeout = 15 * time.Second
)

// silenceMulaw is a 20 ms frame of μ-law silence.
var silenceMulaw = bytes.Repeat([]byte{0xFF}, 160)

// Line is one answered Twilio call's Media Stream as a telephony.Line:
// μ-law at 8 kHz both ways over the websocket Twilio opened to us
// (bidirectional, <Connect><Stream>).
//
// One goroutine of the provider serves it: it reads the socket
// (every read bounded by the media timeout), feeds the queues Receive
// drains, and at the end tears the line down. Writes to the socket, from
// Write, Clear, SendDTMF and the marks, are serialized and each bounded
// by writeTimeout.
//
// Of the runtime's events (telephony.Listener) it follows a turn's audio:
// AudioStart tells it which turn Write is sending, so that each frame is
// followed by a mark "sb:<ms>:<turn>" that Twilio echoes when the caller
// has heard it (Receiver.Mark); AudioDone, AudioClear and Clear end the
// turn. The others are telephony.NopListener's.
type Line struct {
	telephony.NopListener

	p  *Provider
	pc *pcall
	// detected: Twilio's answering machine detection ran for this call;
	// machine: it found a machine (set before the line is handed over).
	detected, machine bool
	conn              *websocket.Conn
	client            *Client
	streamSid         string
	callSid           string

	// wmu serializes socket writes; buf is the message being written.
	wmu    sync.Mutex
	buf    []byte
	inDTMF bool
	dtmfMu sync.Mutex // one SendDTMF at a time

	// tmu guards the turn being sent and the marks echoed.
	tmu     sync.Mutex
	turn    string // turn whose frames Write marks; "" none
	turnMs  int64  // ms of turn sent so far
	cleared string // the last turn Clear cut: its late echoes are dropped
	marks   []markEcho

	media     chan []byte
	dtmf      chan byte
	markReady chan struct{} // a mark is waiting in marks
	lastMedia atomic.Int64  // unix nanos of the last media from Twilio

	transferMu   sync.Mutex
	transferring atomic.Bool

	endMu   sync.Mutex
	ended   bool
	end     telephony.End
	rest    bool          // teardown ends the call at Twilio (REST)
	done    chan struct{} // closed when the line ends
	stopped chan struct{} // closed when it is torn down
}

type markEcho struct {
	turn string
	ms   int64
}

func newLine(p *Provider, pc *pcall, conn *websocket.Conn, client *Client, streamSid, callSid string) *Line {
	l := &Line{
		p: p, pc: pc, conn: conn, client: client, streamSid: streamSid, callSid: callSid,
		buf:   make([]byte, 0, 512),
		media: make(chan []byte, mediaQueue), dtmf: make(chan byte, dtmfQueue), markReady: make(chan struct{}, 1),
		done: make(chan struct{}), stopped: make(chan struct{}),
	}
	l.lastMedia.Store(time.Now().UnixNano())
	return l
}

// Format is μ-law at 8 kHz, the only format of Media Streams.
func (l *Line) Format() audio.Format { return audio.Format{Encoding: audio.Mulaw, SampleRate: 8000} }

// Capabilities: keys both ways (dtmf messages in, tones out), transfer
// (<Dial>), and Twilio's answering machine detection when the call asked
// for it (AMD.Machine when a machine answered: with leaveMessage Twilio
// waited for its greeting to end before connecting the stream).
func (l *Line) Capabilities() telephony.Capabilities {
	return telephony.Capabilities{Keypad: true, Transfer: true, AMD: telephony.AMD{Ran: l.detected, Machine: l.machine}}
}

// CallSID is Twilio's id of the call.
func (l *Line) CallSID() string { return l.callSid }

func (l *Line) isEnded() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// End is how the line ended; the zero End while it lives or when this side
// ended it.
func (l *Line) End() telephony.End {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	return l.end
}

// finish ends the line once (the first end wins). rest asks the teardown
// to end the call at Twilio too (the line failed while the call may live).
func (l *Line) finish(end telephony.End, rest bool) bool {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	if l.ended {
		return false
	}
	l.ended, l.end, l.rest = true, end, rest
	close(l.done)
	return true
}

// serve reads the stream until it ends, then tears the line down. It runs
// on its own goroutine, counted in Provider.wg.
func (l *Line) serve() {
	l.read()
	l.teardown()
}

func (l *Line) read() {
	bad := 0
	for {
		deadline := time.Unix(0, l.lastMedia.Load()).Add(l.p.cfg.MediaTimeout)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		typ, b, err := l.conn.Read(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		if err != nil {
			l.readFailed(err, timedOut)
			return
		}
		msg, payload, err := decodeStreamMessage(b)
		if err == nil && typ != websocket.MessageText {
			err = errors.New("twilio: binary stream message")
		}
		if err != nil {
			l.p.stats.badMessages.Add(1)
			if bad++; bad >= maxBadMessages {
				l.p.log.Warn("twilio stream sends only bad messages", "call_id", l.pc.id, "call_sid", l.callSid, "err", err)
				l.finish(telephony.End{Outcome: string(call.Failed), Reason: ReasonStreamFailed}, true)
				return
			}
			continue
		}
		bad = 0
		switch msg.Event {
		case "media":
			l.lastMedia.Store(time.Now().UnixNano())
			l.enqueueMedia(payload)
		case "dtmf":
			select {
			case l.dtmf <- msg.DTMF.Digit[0]:
			default:
				l.p.stats.dtmfDropped.Add(1)
			}
		case "mark":
			l.echoed(msg.Mark.Name)
		case "stop":
			// The call ended, or its TwiML was replaced (our transfer);
			// Twilio closes the socket next.
			if l.transferring.Load() {
				l.finish(telephony.End{Outcome: string(call.Completed), Reason: ReasonTransferred}, false)
			} else {
				l.finish(telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded}, false)
			}
			return
		}
	}
}

// readFailed ends the line after a failed read, unless it had ended.
func (l *Line) readFailed(err error, timedOut bool) {
	if l.isEnded() {
		return
	}
	switch {
	case timedOut:
		l.p.log.Info("twilio media timeout", "call_id", l.pc.id, "call_sid", l.callSid)
		l.finish(telephony.End{Outcome: string(call.Failed), Reason: ReasonMediaTimeout}, true)
	case l.transferring.Load():
		l.finish(telephony.End{Outcome: string(call.Completed), Reason: ReasonTransferred}, false)
	case websocket.CloseStatus(err) == websocket.StatusNormalClosure || websocket.CloseStatus(err) == websocket.StatusGoingAway:
		// Closed without a stop: the call went away all the same.
		l.finish(telephony.End{Outcome: string(call.Completed), Reason: call.ReasonCustomerEnded}, false)
	default:
		l.p.log.Info("twilio stream broke", "call_id", l.pc.id, "call_sid", l.callSid, "err", err)
		l.finish(telephony.End{Outcome: string(call.Failed), Reason: ReasonStreamFailed}, true)
	}
}

// enqueueMedia hands caller audio to Receive, dropping the oldest queued
// message when Receive has fallen a second behind.
func (l *Line) enqueueMedia(b []byte) {
	select {
	case l.media <- b:
		return
	default:
	}
	select {
	case <-l.media:
		l.p.stats.mediaDropped.Add(1)
	default:
	}
	select {
	case l.media <- b:
	default:
		l.p.stats.mediaDropped.Add(1)
	}
}

// echoed takes a mark Twilio returned. Twilio returns a mark when the audio
// sent before it has played, and also, at once, every mark still pending
// when we sent clear ("Media Streams - WebSocket Messages", clear): those
// of the cut turn would overstate what was heard, so echoes of the turn
// Clear cut are dropped.
func (l *Line) echoed(name string) {
	turn, ms, ok := parseMark(name)
	if !ok {
		return
	}
	l.tmu.Lock()
	if turn == l.cleared {
		l.tmu.Unlock()
		return
	}
	merged := false
	for i := range l.marks {
		if l.marks[i].turn == turn {
			l.marks[i].ms = max(l.marks[i].ms, ms)
			merged = true
			break
		}
	}
	if !merged {
		if len(l.marks) == markQueue {
			copy(l.marks, l.marks[1:])
			l.marks = l.marks[:markQueue-1]
		}
		l.marks = append(l.marks, markEcho{turn: turn, ms: ms})
	}
	l.tmu.Unlock()
	select {
	case l.markReady <- struct{}{}:
	default:
	}
}

func (l *Line) takeMarks(dst []markEcho) []markEcho {
	l.tmu.Lock()
	defer l.tmu.Unlock()
	dst = append(dst[:0], l.marks...)
	l.marks = l.marks[:0]
	return dst
}

// Receive hands the caller's audio (the μ-law payload of each media
// message), DTMF keys (dtmf messages) and playback reports (echoed marks)
// to rx until the line ends, and returns how it ended: Twilio's stop
// (completed, customer-ended-call; after a transfer,
// assistant-transferred-call), no media for the media timeout (failed,
// twilio-media-timeout), a broken socket (failed, twilio-stream-failed),
// or the zero End when this side hung up or ctx ended. Call it from one
// goroutine at a time.
func (l *Line) Receive(ctx context.Context, rx telephony.Receiver) telephony.End {
	var marks []markEcho
	deliverMarks := func() {
		marks = l.takeMarks(marks)
		for _, m := range marks {
			rx.Mark(m.turn, m.ms)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return telephony.End{}
		case b := <-l.media:
			rx.Audio(b)
		case d := <-l.dtmf:
			rx.DTMF(d)
		case <-l.markReady:
			deliverMarks()
		case <-l.done:
			for { // what arrived before the end
				select {
				case b := <-l.media:
					rx.Audio(b)
				case d := <-l.dtmf:
					rx.DTMF(d)
				default:
					deliverMarks()
					return l.End()
				}
			}
		}
	}
}

// writeLocked sends l.buf as one text message. l.wmu is held.
func (l *Line) writeLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := l.conn.Write(ctx, websocket.MessageText, l.buf); err != nil {
		if l.isEnded() {
			return ErrLineClosed
		}
		return fmt.Errorf("twilio: writing to the media stream: %w", err)
	}
	return nil
}

// Write sends one frame of the assistant's audio (μ-law, 160 bytes for 20
// ms) as a media message, then a mark naming the turn and how much of it
// has been sent. Twilio buffers what it is sent and plays it in real time;
// the runtime paces the frames. Frames written while SendDTMF plays a key
// are dropped (counted).
func (l *Line) Write(frame []byte) error {
	if l.isEnded() {
		return ErrLineClosed
	}
	if len(frame) == 0 {
		return nil
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.inDTMF {
		l.p.stats.writesDropped.Add(1)
		return nil
	}
	l.buf = appendMedia(l.buf[:0], l.streamSid, frame)
	if err := l.writeLocked(); err != nil {
		return err
	}
	l.tmu.Lock()
	turn := l.turn
	if turn != "" {
		l.turnMs += int64(len(frame)) * 1000 / 8000
	}
	ms := l.turnMs
	l.tmu.Unlock()
	if turn == "" {
		return nil
	}
	l.buf = appendMark(l.buf[:0], l.streamSid, markName(turn, ms))
	return l.writeLocked()
}

// Clear sends clear: Twilio drops the audio it has buffered and returns
// the pending marks at once. The turn being sent ends (its late echoes are
// ignored, see echoed).
func (l *Line) Clear() {
	if l.isEnded() {
		return
	}
	l.tmu.Lock()
	if l.turn != "" {
		l.cleared = l.turn
	}
	l.turn = ""
	l.tmu.Unlock()
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.buf = appendClear(l.buf[:0], l.streamSid)
	if err := l.writeLocked(); err != nil {
		l.p.log.Debug("twilio clear not sent", "call_id", l.pc.id, "err", err)
	}
}

// AudioStart starts marking Write's frames with turnID.
func (l *Line) AudioStart(turnID string) {
	l.tmu.Lock()
	l.turn, l.turnMs = turnID, 0
	l.tmu.Unlock()
}

// AudioDone ends turn turnID: all its frames were written.
func (l *Line) AudioDone(turnID string) {
	l.tmu.Lock()
	if l.turn == turnID {
		l.turn = ""
	}
	l.tmu.Unlock()
}

// AudioClear ends turn turnID after a cut (Clear has sent clear).
func (l *Line) AudioClear(turnID string, _ int64) {
	l.tmu.Lock()
	if l.turn == turnID {
		l.turn, l.cleared = "", turnID
	}
	l.tmu.Unlock()
}

// SendDTMF plays digits to the far party as tones in the audio (Media
// Streams have no message for it): each key 100 ms of its two tones then
// 100 ms of silence, sent in real time; the assistant's audio is muted
// meanwhile. It returns once the last key has been sent.
func (l *Line) SendDTMF(ctx context.Context, digits string) error {
	if err := checkDigits(digits); err != nil {
		return err
	}
	l.dtmfMu.Lock()
	defer l.dtmfMu.Unlock()
	l.wmu.Lock()
	l.inDTMF = true
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		l.inDTMF = false
		l.wmu.Unlock()
	}()
	tick := time.NewTicker(audio.FrameDuration)
	defer tick.Stop()
	send := func(frame []byte) error {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return ErrLineClosed
		}
		l.wmu.Lock()
		defer l.wmu.Unlock()
		l.buf = appendMedia(l.buf[:0], l.streamSid, frame)
		return l.writeLocked()
	}
	for i := 0; i < len(digits); i++ {
		tone := dtmfTone(digits[i])
		for f := 0; f+160 <= len(tone); f += 160 {
			if err := send(tone[f : f+160]); err != nil {
				return err
			}
		}
		if i == len(digits)-1 {
			break
		}
		for range dtmfGapMs / 20 {
			if err := send(silenceMulaw); err != nil {
				return err
			}
		}
	}
	return nil
}

// Transfer hands the call to destination (E.164 or a sip: URI) by
// replacing the call's TwiML with <Dial> through the REST API ("Call
// resource", update with Twiml). Twilio then stops the stream (stop, then
// it closes the socket) and dials; Receive returns completed,
// assistant-transferred-call. A refusal by Twilio is an error wrapping
// telephony.ErrTransferRefused and the call goes on. If the stream is not
// stopped within Config.TransferTimeout the line ends all the same (the
// call now runs the <Dial>).
func (l *Line) Transfer(ctx context.Context, destination string) error {
	twiml, err := DialTwiML(destination)
	if err != nil {
		return err
	}
	l.transferMu.Lock()
	defer l.transferMu.Unlock()
	if l.isEnded() {
		return ErrLineClosed
	}
	l.transferring.Store(true)
	if _, err := l.client.UpdateCall(ctx, l.callSid, CallUpdate{Twiml: twiml}); err != nil {
		l.transferring.Store(false)
		return fmt.Errorf("%w: %w", telephony.ErrTransferRefused, err)
	}
	l.p.log.Info("twilio call transferred", "call_id", l.pc.id, "call_sid", l.callSid, "to", destination)
	timer := time.NewTimer(l.p.cfg.TransferTimeout)
	defer timer.Stop()
	select {
	case <-l.done:
	case <-timer.C:
	case <-ctx.Done():
	}
	if l.finish(telephony.End{Outcome: string(call.Completed), Reason: ReasonTransferred}, false) {
		// Twilio has not closed the stream: close it ourselves; the call
		// runs the <Dial> whatever becomes of the socket.
		_ = l.conn.Close(websocket.StatusNormalClosure, "transferred")
	}
	// The transfer is done whatever becomes of the teardown.
	_ = l.wait(ctx)
	return nil
}

// Hangup ends the call: it updates it at Twilio to completed ("Call
// resource", Status), then closes the socket (with no TwiML after
// <Connect>, that alone ends the call too), and waits, within ctx, for the
// line's teardown. Receive then returns the zero End. Later calls, and
// calls after the line ended, only wait.
func (l *Line) Hangup(ctx context.Context) error {
	var err error
	if l.finish(telephony.End{}, false) {
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		if _, uerr := l.client.UpdateCall(rctx, l.callSid, CallUpdate{Status: StatusCompleted}); uerr != nil && !callEnded(uerr) {
			err = uerr
		}
		cancel()
		_ = l.conn.Close(websocket.StatusNormalClosure, "call ended")
	}
	if werr := l.wait(ctx); werr != nil {
		return werr
	}
	return err
}

// wait waits for the teardown within ctx (and closeTimeout).
func (l *Line) wait(ctx context.Context) error {
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-l.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errors.New("twilio: the line's teardown did not finish")
	}
}

// teardown runs once the reader has stopped: the call is ended at Twilio
// when the line failed, the socket closed, the call forgotten.
func (l *Line) teardown() {
	l.endMu.Lock()
	rest, end := l.rest, l.end
	l.endMu.Unlock()
	if rest {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultRequestTimeout)
		if _, err := l.client.UpdateCall(ctx, l.callSid, CallUpdate{Status: StatusCompleted}); err != nil && !callEnded(err) {
			l.p.log.Warn("twilio call not ended after its stream failed", "call_id", l.pc.id, "call_sid", l.callSid, "err", err)
		}
		cancel()
	}
	_ = l.conn.Close(websocket.StatusNormalClosure, "")
	l.p.lineEnded(l)
	l.p.log.Info("twilio line ended", "call_id", l.pc.id, "call_sid", l.callSid, "outcome", end.Outcome, "reason", end.Reason)
	close(l.stopped)
}

var (
	_ telephony.Line = (*Line)(nil)
	// The events the line overrides, named through the interface: a
	// rename in telephony must fail here, not leave the marks behind the
	// embedded no-op.
	_ = []any{telephony.Listener.AudioStart, telephony.Listener.AudioDone, telephony.Listener.AudioClear}
)
