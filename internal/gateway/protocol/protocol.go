// Package protocol is the codec of the web-call gateway's websocket protocol,
// version v1: the events a client and the server exchange as JSON text
// frames, strict decoding of client frames, rendering of server events, and
// the limits and close codes the gateway enforces. It does no I/O, so the
// gateway, end-to-end tests and Go clients share one definition of the wire.
//
// Audio sessions add binary frames of raw audio in both directions; this
// package fixes their rules (CheckBinary, Audio) and the events around them,
// and converts a session's format for internal/audio (Audio.Format).
//
// The contract is docs/gateway-protocol.md (prose, examples) and
// docs/asyncapi.yaml (AsyncAPI 3.0 with JSON Schemas); this package is its
// reference implementation, and its tests check the examples in both.
package protocol

import "time"

// Version is the protocol version announced in session.started. v1 only ever
// grows by additions (new event types, new optional fields), so clients built
// against it keep working.
const Version = "v1"

// MaxFrame is the largest frame, text or binary, in bytes, a client may
// send. Nothing in v1 needs more (user.text is capped at MaxUserText; a
// real-time client sends 20–100 ms of audio per frame, 1,920 bytes per 20 ms
// at most), so a bigger frame is abuse and closes the socket with
// CloseProtocolAbuse.
const MaxFrame = 64 << 10

// Limits on client fields, in bytes of UTF-8.
const (
	// MaxUserText bounds user.text's text: about a page of typing, and far
	// more than one spoken turn.
	MaxUserText = 4000
	// MaxIDBytes bounds the client-chosen ids echoed back or looked up
	// (ping.id, playback.mark.turnId).
	MaxIDBytes = 256
	// MaxDepth bounds the nesting of objects and arrays in a frame, so the
	// free-form metadata stays safe for anything that walks it recursively.
	MaxDepth = 32
)

// WebSocket close codes the gateway uses. Codes 1000–1011 are RFC 6455's;
// 4000–4999 is the range RFC 6455 leaves to applications, and ours end in the
// HTTP status they resemble. The close reason is for humans; clients branch
// on the code.
const (
	// CloseNormal follows call.ended for every end the conversation decided:
	// hangup, the assistant ending the call, the maximum duration.
	CloseNormal = 1000
	// CloseGoingAway follows call.ended (system-shutdown) when the server stops.
	CloseGoingAway = 1001
	// CloseInternalError follows a fatal `error` (code internal) and
	// call.ended when the server fails the call.
	CloseInternalError = 1011
	// CloseProtocolAbuse closes a client that broke the abuse rule: a text
	// or binary frame over MaxFrame, more than BadFrameLimit bad frames within
	// BadFrameWindow, or a binary frame in a text-only session. A fatal
	// `error` event precedes it when the server can still write.
	CloseProtocolAbuse = 4400
	// CloseCallNotFound closes a socket whose call disappeared between the
	// HTTP checks and the upgrade. Before the upgrade the answer is HTTP 404.
	CloseCallNotFound = 4404
	// CloseIdle follows call.ended (silence-timed-out): the user said nothing
	// for the assistant's silence timeout.
	CloseIdle = 4408
	// CloseCallEnded closes a socket whose call was found ended after the
	// upgrade (it ended between the HTTP checks and the upgrade, or was ended
	// from outside the conversation). Before the upgrade the answer is HTTP 410.
	CloseCallEnded = 4410
)

// BadFrameLimit and BadFrameWindow are the abuse rule for bad frames: a
// client may send up to BadFrameLimit frames that fail to decode within any
// BadFrameWindow and gets an `error` event for each; the next one closes the
// socket with CloseProtocolAbuse. See BadFrames.
const (
	BadFrameLimit  = 20
	BadFrameWindow = 10 * time.Second
)

// BadFrames applies the bad-frame abuse rule to one connection. Its zero
// value is ready; it is not safe for concurrent use (the reader owns it).
// Time is passed in, so tests need no clock.
type BadFrames struct {
	times [BadFrameLimit]time.Time // ring of the latest bad frames
	n     int                      // how many are recorded, ≤ BadFrameLimit
	next  int                      // index of the oldest once the ring is full
}

// Add records one bad frame received at now and reports whether the client
// has now sent more than BadFrameLimit bad frames within BadFrameWindow, in
// which case the gateway closes with CloseProtocolAbuse.
func (b *BadFrames) Add(now time.Time) bool {
	if b.n < BadFrameLimit {
		b.times[b.n] = now
		b.n++
		return false
	}
	if now.Sub(b.times[b.next]) < BadFrameWindow {
		return true
	}
	b.times[b.next] = now
	b.next = (b.next + 1) % BadFrameLimit
	return false
}
