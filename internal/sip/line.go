package sip

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtp"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// ErrLineClosed is returned by Write, SendDTMF and Transfer once the line
// has ended.
var ErrLineClosed = errors.New("sip: line closed")

// rxQueue is how many received packets wait for Receive: one second.
const rxQueue = 50

// Line is one answered SIP dialog as a telephony.Line: G.711 RTP both ways
// (PCMU or PCMA, whichever was agreed), RFC 4733 telephone-events both ways
// and SIP INFO digits received, REFER for transfer, BYE for hang-up.
//
// Two goroutines of the provider serve it while it lives: the reader
// (RTP from the socket through a reorder buffer, see reorderBuffer, into a
// one-second queue that drops the oldest packet when the runtime does not
// keep up) and the clock, which
// every 20 ms sends a silence frame when the runtime has not written one
// (carriers expect a continuous stream, and NAT bindings need it), checks
// the media timeout, and at the end sends the BYE and closes the sockets.
//
// It follows none of the runtime's events (telephony.NopListener): RTP
// buffers nothing past the runtime's pacer, and the far party gets no
// word of the conversation but its audio.
type Line struct {
	telephony.NopListener

	p         *Provider
	lg        *leg
	dlg       dialog
	cod       codecs
	recvDTMF  []uint8 // telephone-event payload types accepted
	referHost string  // host[:port] that E.164 transfer targets go to
	med       *rtpMedia
	rtp       *media.RTPSession

	// Sending, under wmu. Each packet takes one 20 ms slot of the media
	// clock: sent counts them against the time since start.
	wmu     sync.Mutex
	pkt     rtp.Packet
	seq     uint16
	ts      uint32
	ssrc    uint32
	start   time.Time
	sent    int64
	marker  bool
	inDTMF  bool
	silence []byte
	dtmfBuf []byte
	dtmfMu  sync.Mutex // one SendDTMF at a time

	// Receiving.
	pkts       chan rtpIn
	info       chan byte // digits from SIP INFO
	lastRTP    atomic.Int64
	detector   dtmfDetector // Receive's goroutine only
	readerDone chan struct{}
	rxStats    atomic.Pointer[reorderStats] // the reader's, when it has stopped

	// Transfer.
	transferMu       sync.Mutex
	notify           chan int // sipfrag statuses of NOTIFYs
	transferAccepted atomic.Bool

	// End.
	endMu   sync.Mutex
	ended   bool
	end     telephony.End
	bye     bool
	done    chan struct{} // closed when the line ends
	stopped chan struct{} // closed when it is torn down
}

// newLine starts the media of an answered dialog and the line's goroutines.
// It takes med over (closing it on error).
func (p *Provider) newLine(lg *leg, dlg dialog, med *rtpMedia, cod codecs, remote remoteMedia, referHost string) (*Line, error) {
	sess := med.sess
	name := "PCMU"
	if cod.Format.Encoding == audio.Alaw {
		name = "PCMA"
	}
	list := []media.Codec{{Name: name, PayloadType: cod.AudioPT, SampleRate: 8000, SampleDur: packetDuration, NumChannels: 1}}
	recv := []uint8{}
	addTE := func(pt int) {
		if pt < 0 || bytes.IndexByte(recv, uint8(pt)) >= 0 {
			return
		}
		recv = append(recv, uint8(pt))
		list = append(list, media.Codec{Name: "telephone-event", PayloadType: uint8(pt), SampleRate: 8000, SampleDur: packetDuration, NumChannels: 1})
	}
	if !lg.inbound {
		addTE(ptTelephoneOff) // what our offer asked the peer to send with
	}
	addTE(cod.DTMFPT)
	// Comfort noise is ignored, but listed so that diago's RTP session
	// does not log each packet of a CN-only stream as unsupported.
	list = append(list, media.Codec{Name: "CN", PayloadType: 13, SampleRate: 8000, SampleDur: packetDuration, NumChannels: 1})
	sess.Codecs = list
	ra := remote.Addr
	sess.SetRemoteAddr(&net.UDPAddr{IP: net.IP(ra.Addr().AsSlice()), Port: int(ra.Port())})
	rtpSess := media.NewRTPSession(sess)
	if err := rtpSess.MonitorBackground(); err != nil {
		med.close()
		return nil, fmt.Errorf("sip: rtcp: %w", err)
	}
	var rnd [10]byte
	_, _ = rand.Read(rnd[:])
	silence := byte(0xFF) // μ-law +0
	if cod.Format.Encoding == audio.Alaw {
		silence = 0xD5
	}
	now := time.Now()
	l := &Line{
		p: p, lg: lg, dlg: dlg, cod: cod, recvDTMF: recv, referHost: referHost, med: med,
		rtp: rtpSess,
		seq: binary.BigEndian.Uint16(rnd[0:2]), ts: binary.BigEndian.Uint32(rnd[2:6]), ssrc: binary.BigEndian.Uint32(rnd[6:10]),
		start: now, marker: true, silence: bytes.Repeat([]byte{silence}, 160), dtmfBuf: make([]byte, 0, 4),
		pkts: make(chan rtpIn, rxQueue), info: make(chan byte, 16), readerDone: make(chan struct{}),
		notify: make(chan int, 8), done: make(chan struct{}), stopped: make(chan struct{}),
	}
	l.lastRTP.Store(now.UnixNano())
	p.stats.lines.Add(1)
	p.wg.Add(2)
	go l.read()
	go l.run()
	return l, nil
}

// Capabilities: keys both ways (RFC 4733 telephone-events; SIP INFO
// received; SendDTMF fails with ErrDTMFUnsupported when the far party
// offered no telephone-event) and transfer (REFER).
func (l *Line) Capabilities() telephony.Capabilities {
	return telephony.Capabilities{Keypad: true, Transfer: true}
}

// Format is the agreed G.711 law at 8 kHz.
func (l *Line) Format() audio.Format { return l.cod.Format }

// CallID is the SIP Call-ID of the line's dialog.
func (l *Line) CallID() string { return l.lg.sipCallID }

// read moves packets from the socket, in order (reorderBuffer), to the
// queue Receive drains, until the socket closes. While packets wait behind
// a gap it reads with a deadline, so that they are released in time even
// if nothing else arrives (peers that send no RTP in silence).
func (l *Line) read() {
	defer l.p.wg.Done()
	defer close(l.readerDone)
	var rb reorderBuffer
	defer func() { l.rxStats.Store(&rb.stats) }()
	buf := make([]byte, media.RTPBufSize)
	var pkt rtp.Packet
	var out []rtpIn
	deadline := false
	for {
		now := time.Now()
		if w := rb.wait(now); w > 0 {
			_ = l.med.sess.StopRTP(1, w)
			deadline = true
		} else if deadline {
			_ = l.med.sess.StartRTP(1)
			deadline = false
		}
		n, err := l.rtp.ReadRTP(buf, &pkt)
		now = time.Now()
		out = out[:0]
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return // closed
			}
			out = rb.expire(now, out)
		} else if n > 0 && len(pkt.Payload) > 0 {
			l.lastRTP.Store(now.UnixNano())
			out = rb.push(rtpIn{seq: pkt.SequenceNumber, pt: pkt.PayloadType, ssrc: pkt.SSRC, ts: pkt.Timestamp,
				payload: bytes.Clone(pkt.Payload)}, now, out)
		}
		for _, p := range out {
			l.enqueue(p)
		}
	}
}

// enqueue hands a packet to Receive, dropping the oldest queued one when
// the queue is full.
func (l *Line) enqueue(p rtpIn) {
	select {
	case l.pkts <- p:
		return
	default:
	}
	select {
	case <-l.pkts:
		l.p.stats.rtpDrop.Add(1)
	default:
	}
	select {
	case l.pkts <- p:
	default:
		l.p.stats.rtpDrop.Add(1)
	}
}

// run is the line's clock and its teardown.
func (l *Line) run() {
	defer l.p.wg.Done()
	t := time.NewTicker(packetDuration)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			l.teardown()
			return
		case now := <-t.C:
			l.fill(now)
			if now.Sub(time.Unix(0, l.lastRTP.Load())) > l.p.cfg.MediaTimeout {
				l.p.log.Info("sip media timeout", "call_id", l.lg.callID, "sip_call_id", l.lg.sipCallID)
				l.finish(telephony.End{Outcome: string(call.Failed), Reason: ReasonMediaTimeout}, true)
			}
		}
	}
}

// fill sends a silence frame when the runtime has left the stream more
// than one frame behind the clock. One frame of slack keeps a runtime frame
// that comes a little late from being doubled by silence; after a stall of
// more than 200 ms the clock skips ahead (marker bit set) instead of
// bursting the gap.
func (l *Line) fill(now time.Time) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.inDTMF || l.isEnded() {
		return
	}
	due := int64(now.Sub(l.start) / packetDuration)
	behind := due - l.sent
	if behind > 10 {
		skip := behind - 2
		l.sent += skip
		l.ts += uint32(skip) * 160
		l.marker = true
		behind = 2
	}
	if behind >= 2 {
		_ = l.sendLocked(l.silence, l.cod.AudioPT, l.ts, len(l.silence))
	}
}

func (l *Line) sentPackets() int64 {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	return l.sent
}

func (l *Line) isEnded() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// sendLocked sends one RTP packet stamped ts and advances the clock by
// advance samples (one slot). l.wmu is held.
func (l *Line) sendLocked(payload []byte, pt uint8, ts uint32, advance int) error {
	l.pkt.Header = rtp.Header{Version: 2, Marker: l.marker, PayloadType: pt, SequenceNumber: l.seq, Timestamp: ts, SSRC: l.ssrc}
	l.pkt.Payload = payload
	l.marker = false
	l.seq++
	l.ts += uint32(advance)
	l.sent++
	err := l.rtp.WriteRTP(&l.pkt)
	if err != nil && errors.Is(err, net.ErrClosed) {
		return ErrLineClosed
	}
	return nil // a lost datagram is not a dead line
}

// Write sends one frame of the assistant's audio (160 bytes of the line's
// law for 20 ms) as one RTP packet, at once: the runtime paces the frames.
// Frames written while SendDTMF plays a digit are dropped (counted), as
// RFC 4733 §2.5.1.1 asks the sender to mute audio during an event.
func (l *Line) Write(frame []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.isEnded() {
		return ErrLineClosed
	}
	if len(frame) == 0 {
		return nil
	}
	if l.inDTMF {
		l.p.stats.wDrop.Add(1)
		return nil
	}
	return l.sendLocked(frame, l.cod.AudioPT, l.ts, len(frame))
}

// Clear does nothing: a line sends each frame as it is written and buffers
// none.
func (l *Line) Clear() {}

// Receive hands the caller's audio (the payload of each RTP packet of the
// agreed law, after the jitter buffer) and DTMF keys (RFC 4733 events, once
// per press, and SIP INFO) to rx until the line ends, and returns how it
// ended: the far party's BYE (completed, customer-ended-call), no RTP for
// the media timeout (failed, sip-media-timeout), a transfer (completed,
// assistant-transferred-call), or the zero End when this side hung up or
// ctx ended. Call it from one goroutine at a time.
func (l *Line) Receive(ctx context.Context, rx telephony.Receiver) telephony.End {
	for {
		select {
		case <-ctx.Done():
			return telephony.End{}
		case pk := <-l.pkts:
			l.dispatch(pk, rx)
		case d := <-l.info:
			rx.DTMF(d)
		case <-l.done:
			for { // what arrived before the end
				select {
				case pk := <-l.pkts:
					l.dispatch(pk, rx)
				case d := <-l.info:
					rx.DTMF(d)
				default:
					return l.End()
				}
			}
		}
	}
}

func (l *Line) dispatch(pk rtpIn, rx telephony.Receiver) {
	if pk.pt == l.cod.AudioPT {
		rx.Audio(pk.payload)
		return
	}
	if bytes.IndexByte(l.recvDTMF, pk.pt) >= 0 {
		if d, ok := l.detector.packet(pk.ssrc, pk.ts, pk.payload); ok {
			rx.DTMF(d)
		}
	}
	// Comfort noise and anything else: ignored.
}

// End is how the line ended; the zero End while it lives or when this side
// ended it.
func (l *Line) End() telephony.End {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	return l.end
}

// finish ends the line once (the first end wins): Receive returns end, and
// the clock goroutine tears the line down, sending a BYE first when bye.
func (l *Line) finish(end telephony.End, bye bool) bool {
	l.endMu.Lock()
	defer l.endMu.Unlock()
	if l.ended {
		return false
	}
	l.ended, l.end, l.bye = true, end, bye
	close(l.done)
	return true
}

func (l *Line) teardown() {
	l.endMu.Lock()
	bye := l.bye
	l.endMu.Unlock()
	if bye {
		l.p.byeQuietly(l.dlg)
	}
	_ = l.rtp.MonitorClose()
	l.med.close()
	<-l.readerDone
	l.p.unregister(l.lg)
	l.p.stats.lines.Add(-1)
	rs := l.rxStats.Load()
	l.p.log.Info("sip line ended", "call_id", l.lg.callID, "sip_call_id", l.lg.sipCallID,
		"outcome", l.end.Outcome, "reason", l.end.Reason, "rtp_received", rs.Received,
		"rtp_lost", rs.Lost, "rtp_late", rs.Late+rs.Duplicate, "rtp_sent", l.sentPackets())
	close(l.stopped)
}

// Hangup sends BYE (once; later calls do nothing) and waits, within ctx,
// until the line is torn down. Receive then returns the zero End.
func (l *Line) Hangup(ctx context.Context) error {
	l.finish(telephony.End{}, true)
	select {
	case <-l.stopped:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SendDTMF plays digits to the far party as RFC 4733 telephone-events on the
// RTP stream, with the payload type the far party's SDP gave: each key 100
// ms (five packets of growing duration, then the end packet three times),
// 100 ms apart; the assistant's audio is muted meanwhile. It returns once
// the last key has been sent. It fails with ErrDTMFUnsupported when the far
// party offered no telephone-event.
func (l *Line) SendDTMF(ctx context.Context, digits string) error {
	if err := checkDigits(digits); err != nil {
		return err
	}
	if l.cod.DTMFPT < 0 {
		return ErrDTMFUnsupported
	}
	l.dtmfMu.Lock()
	defer l.dtmfMu.Unlock()
	tick := time.NewTicker(packetDuration)
	defer tick.Stop()
	wait := func(n int) error {
		for range n {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			case <-l.done:
				return ErrLineClosed
			}
		}
		return nil
	}
	for i := 0; i < len(digits); i++ {
		code, _ := dtmfEventCode(digits[i])
		if err := l.sendEvent(code, wait); err != nil {
			return err
		}
		if i < len(digits)-1 {
			if err := wait(5); err != nil {
				return err
			}
		}
	}
	return nil
}

// sendEvent sends one key's eight packets, 20 ms apart, all stamped with the
// media clock at the key's start.
func (l *Line) sendEvent(code byte, wait func(int) error) (err error) {
	l.wmu.Lock()
	if l.isEnded() {
		l.wmu.Unlock()
		return ErrLineClosed
	}
	l.inDTMF, l.marker = true, true
	start := l.ts
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		l.inDTMF = false
		l.wmu.Unlock()
	}()
	for k := range 8 {
		if k > 0 {
			if err := wait(1); err != nil {
				return err
			}
		}
		ev := telephoneEvent{Event: code, Volume: 10, Duration: uint16(min(k+1, 5) * 160), End: k >= 5}
		l.wmu.Lock()
		l.dtmfBuf = ev.append(l.dtmfBuf[:0])
		err := l.sendLocked(l.dtmfBuf, uint8(l.cod.DTMFPT), start, 160)
		l.wmu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// referTarget is the Refer-To URI of a transfer destination: a SIP URI as
// given, or an E.164 number at the line's trunk (outbound) or at the
// caller's host (inbound).
func (l *Line) referTarget(dest string) (sip.Uri, error) {
	var u sip.Uri
	dest = strings.TrimSpace(dest)
	if low := strings.ToLower(dest); strings.HasPrefix(low, "sip:") || strings.HasPrefix(low, "sips:") {
		if err := sip.ParseUri(dest, &u); err != nil || u.Host == "" {
			return u, fmt.Errorf("sip: transfer destination %q is not a SIP URI", dest)
		}
		return u, nil
	}
	n := NormalizeNumber(dest)
	if n == "" || !strings.HasPrefix(dest, "+") {
		return u, fmt.Errorf("sip: transfer destination %q is neither an E.164 number (+…) nor a sip: URI", dest)
	}
	host, port, err := splitTrunkAddress(l.referHost)
	if err != nil {
		return u, fmt.Errorf("sip: transfer: no host to send %s to", n)
	}
	return sip.Uri{Scheme: "sip", User: n, Host: host, Port: port, UriParams: sip.NewParams(), Headers: sip.NewParams()}, nil
}

// Transfer hands the call to destination with REFER (RFC 3515, a cold
// transfer) and waits for the outcome:
//
//   - a final response other than 2xx to the REFER (403, 405, 501, 603…)
//     is a refusal: an error wrapping telephony.ErrTransferRefused, and the
//     call goes on;
//   - 202 Accepted, then a NOTIFY whose sipfrag is 2xx (the target
//     answered): transferred;
//   - 202 then a NOTIFY with a final failure (486, 404…): refused, the
//     call goes on with us;
//   - 202 then the far party's BYE, or no final NOTIFY within
//     Config.TransferTimeout: transferred (the far party took the call
//     over; many carriers send no NOTIFY, or hang up at once).
//
// When transferred, the line sends BYE and Receive returns completed,
// assistant-transferred-call.
func (l *Line) Transfer(ctx context.Context, destination string) error {
	target, err := l.referTarget(destination)
	if err != nil {
		return err
	}
	l.transferMu.Lock()
	defer l.transferMu.Unlock()
	if l.isEnded() {
		return ErrLineClosed
	}
	for len(l.notify) > 0 { // statuses of an earlier attempt
		<-l.notify
	}
	req := sip.NewRequest(sip.REFER, l.dlg.remoteTarget())
	req.AppendHeader(sip.NewHeader("Refer-To", "<"+target.String()+">"))
	ours := l.p.contact(l.p.contactUser, "udp").Address
	req.AppendHeader(sip.NewHeader("Referred-By", "<sip:"+ours.Host+">"))
	rctx, cancel := context.WithTimeout(ctx, byeTimeout)
	res, err := l.dlg.Do(rctx, req)
	cancel()
	if err != nil {
		return fmt.Errorf("sip: REFER to %s: %w", target.String(), err)
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%w: REFER to %s answered %d %s", telephony.ErrTransferRefused, target.String(), res.StatusCode, res.Reason)
	}
	l.transferAccepted.Store(true)
	timer := time.NewTimer(l.p.cfg.TransferTimeout)
	defer timer.Stop()
	for {
		select {
		case code := <-l.notify:
			if code < 200 {
				continue
			}
			if code >= 300 {
				l.transferAccepted.Store(false)
				return fmt.Errorf("%w: the transfer to %s failed with %d", telephony.ErrTransferRefused, target.String(), code)
			}
		case <-l.done:
			// Hung up by the far party after accepting: transferred (the
			// BYE handler recorded it so).
			return nil
		case <-timer.C:
		case <-ctx.Done():
			// The far party accepted and is acting on it: finish our side.
		}
		break
	}
	l.p.log.Info("sip call transferred", "call_id", l.lg.callID, "sip_call_id", l.lg.sipCallID, "to", target.String())
	l.finish(telephony.End{Outcome: string(call.Completed), Reason: ReasonTransferred}, true)
	select {
	case <-l.stopped:
	case <-ctx.Done():
	}
	return nil
}

var _ telephony.Line = (*Line)(nil)
