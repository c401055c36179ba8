package telephony

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"switchboard/internal/audio"
)

// Line is one answered call's connection to the far party, as a provider
// (or the web gateway) hands it to the call runtime: the audio both ways,
// DTMF, transfer and hang-up. See docs/ARCHITECTURE.md, "Lines and the call
// runtime". Implementations are safe for concurrent use, except that
// Receive and Write are each called from one goroutine.
type Line interface {
	// Format is the line's audio encoding, the same in both directions.
	// The zero Format means the line carries text only (TextLine).
	Format() audio.Format
	// Receive hands the caller's audio (any number of bytes of Format),
	// DTMF digits and, on text lines, typed text to rx, from the calling
	// goroutine, until the line ends or ctx is done. It returns how the
	// line ended; the zero End when ctx ended it.
	Receive(ctx context.Context, rx Receiver) End
	// Write sends one 20 ms frame of the assistant's audio in Format. The
	// runtime calls it in real time from one goroutine. An error means
	// the line is gone.
	Write(frame []byte) error
	// Clear drops the assistant audio the line itself has buffered toward
	// the caller (a barge-in); a line that buffers nothing does nothing.
	Clear()
	// SendDTMF plays digits (0-9, *, #, A-D) to the far party.
	SendDTMF(ctx context.Context, digits string) error
	// Transfer hands the call to destination (E.164 or a SIP URI) without
	// staying on it, and returns once the far side accepted; the line
	// then ends (End.Reason assistant-transferred-call). A refusal is an
	// error wrapping ErrTransferRefused, and the call goes on.
	Transfer(ctx context.Context, destination string) error
	// Hangup ends the line from this side. It is idempotent.
	Hangup(ctx context.Context) error
}

// Receiver takes what the caller sends over a Line.
type Receiver interface {
	// Audio is caller audio in the line's Format.
	Audio(b []byte)
	// DTMF is one key the caller pressed: 0-9, *, #, A-D.
	DTMF(digit byte)
	// Text is a caller turn typed or said as text (text lines).
	Text(s string)
	// Mark is the far end's report that it has played playedMs of the
	// assistant's audio of turn turnID (a web client's playback.mark, a
	// Twilio mark echoed back), so that what the caller heard of a cut
	// turn is exact. Lines whose far end buffers nothing never call it.
	Mark(turnID string, playedMs int64)
}

// TextLine is a Line whose far party hears the assistant as text (the
// sandbox persona when no speech engines run).
type TextLine interface {
	Line
	// Heard is one complete assistant turn as the far party heard it.
	Heard(text string)
}

// End is how a line ended on its own.
type End struct {
	// Outcome and Reason classify the end (call.Outcome values and
	// namespaced endedReasons); empty when this side ended it.
	Outcome string
	Reason  string
}

// Fault reports whether the end is a failure of the line (media timeout,
// network) rather than a party hanging up.
func (e End) Fault() bool { return e.Outcome == "failed" }

// ErrTransferRefused is wrapped by Line.Transfer's error when the far side
// refused the transfer (the call goes on).
var ErrTransferRefused = errors.New("telephony: transfer refused")

// Error is a provider's classified failure of a call: how the call ends
// and whether dialing again may succeed. Every provider classifies its own
// failures (the SIP status table lives in internal/sip).
type Error struct {
	Outcome   string // call.Outcome value: busy, no-answer, failed, canceled
	Reason    string // endedReason, e.g. sip-invalid-number
	Retryable bool
	// Status is the provider's own code (a SIP status), 0 when none.
	Status int
	Err    error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("telephony: %s (%s)", e.Outcome, e.Reason)
	if e.Status != 0 {
		msg += fmt.Sprintf(", status %d", e.Status)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Trunk is where and how an outbound call leaves: the SIP connection of
// the purchased number it is placed from. Providers without trunks ignore
// it, except for ConnectionID: for Twilio it names the Twilio connection
// (the account) the call is placed with, and the other fields are empty.
type Trunk struct {
	ConnectionID string
	Address      string // host:port
	Transport    string // udp, tcp or tls
	Username     string
	Password     string // the unsealed password; never logged
}

// String names the trunk without its credentials (for logs).
func (t Trunk) String() string { return t.ConnectionID + " " + t.Transport + ":" + t.Address }

// Incoming is an inbound call a provider asks the service to admit.
type Incoming struct {
	Provider string
	// ConnectionID is the connection the provider heard the call on, when
	// it knows (a Twilio webhook's path names it, and was signed with
	// that connection's token); the number must be on it.
	ConnectionID string
	// To is the dialed number (E.164) and From the caller's, as given.
	To, From string
	// Source is the network address the call came from (SIP); invalid
	// when the provider authenticated the call another way (Twilio's
	// signature).
	Source netip.Addr
	// ProviderCallID is the provider's id of the call (the SIP Call-ID).
	ProviderCallID string
}

// Refusals an Admitter answers with (wrapped); providers map them to their
// own responses (SIP: 404, 403, 480).
var (
	ErrUnknownNumber  = errors.New("telephony: the number is not purchased on a connection of this provider")
	ErrSourceRefused  = errors.New("telephony: the source address is not among the connection's inbound sources")
	ErrNoInboundAgent = errors.New("telephony: the number has no inbound assistant")
	ErrUnavailable    = errors.New("telephony: the service cannot take calls now")
)

// Admitter decides an inbound call: it returns the id of the call it
// stored (ringing, direction inbound), or a refusal. The provider then
// answers and reports Answered with the line, or Ended if the answer
// failed.
type Admitter func(ctx context.Context, in Incoming) (callID string, err error)
