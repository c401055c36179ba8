package telephony

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"switchboard/internal/audio"
	"switchboard/internal/call"
)

// Line is one answered call's connection to the far party, as a provider
// (or the web gateway) hands it to the call runtime: the audio both ways,
// keys, transfer and hang-up, what the line can do (Capabilities), and the
// runtime's events for a far end that follows the call (Listener). It is
// the whole contract between a line and the runtime: the runtime discovers
// nothing about a line by type assertion. See docs/ARCHITECTURE.md, "Lines
// and the call runtime"; package linetest is the conformance suite every
// implementation passes. Implementations are safe for concurrent use,
// except that Receive and Write are each called from one goroutine.
type Line interface {
	Listener
	// Capabilities is what the line can do. The runtime reads it once,
	// when the line is handed over, so a provider sets what it knows of
	// the call (its machine detection) before.
	Capabilities() Capabilities
	// Format is the line's audio encoding, the same in both directions.
	// The zero Format means the line carries text (until Receiver.StartAudio).
	Format() audio.Format
	// Receive hands the caller's audio (any number of bytes of Format),
	// DTMF digits and, on text lines, typed text to rx, from the calling
	// goroutine, until the line ends or ctx is done. It returns how the
	// line ended; the zero End when this side hung up or ctx ended it.
	Receive(ctx context.Context, rx Receiver) End
	// Write sends one 20 ms frame of the assistant's audio in Format. The
	// runtime calls it in real time from one goroutine. An error means
	// the line is gone: every Write after the line's end fails.
	Write(frame []byte) error
	// Clear drops the assistant audio the line itself has buffered toward
	// the caller (a barge-in); a line that buffers nothing does nothing.
	// It is safe at any time, after the end too, and does not block for
	// long.
	Clear()
	// SendDTMF plays digits (0-9, *, #, A-D) to the far party. It fails
	// on a line without a keypad.
	SendDTMF(ctx context.Context, digits string) error
	// Transfer hands the call to destination (E.164 or a SIP URI) without
	// staying on it, and returns once the far side accepted; the line
	// then ends (End.Reason assistant-transferred-call). A refusal is an
	// error wrapping ErrTransferRefused, and the call goes on. It fails on
	// a line that cannot transfer.
	Transfer(ctx context.Context, destination string) error
	// Hangup ends the line from this side and returns once it is torn
	// down (or ctx ends). It is idempotent, and safe before Receive and
	// after the line ended on its own.
	Hangup(ctx context.Context) error
}

// Capabilities is what a line can do beyond carrying the call's audio or
// text, as a value: the runtime reads it instead of asking the line's type.
type Capabilities struct {
	// Keypad: the far party has keys, both ways. Its presses reach
	// Receiver.DTMF and SendDTMF plays keys to it (SIP's RFC 4733, a
	// Twilio stream's dtmf messages and tones).
	Keypad bool
	// Transfer: Transfer can hand the call on (SIP REFER, Twilio <Dial>).
	// A line with neither a keypad nor transfer gives the conversation no
	// Control: it is offered no sendDTMF or transferCall tools, and the
	// API's transfer of the call is refused.
	Transfer bool
	// AMD is the provider's answering machine detection of the call.
	AMD AMD
	// Ready, when not nil, is closed once the far end is ready for the
	// assistant's first message, which waits for it (a web client that
	// turns audio on as it connects hears it). A nil Ready is ready now.
	Ready <-chan struct{}
}

// AMD is what a provider's answering machine detection found (Twilio's).
type AMD struct {
	// Ran: the provider ran detection on this call, so the runtime runs
	// no detector of its own.
	Ran bool
	// Machine: a machine answered. An assistant whose voicemail action is
	// leaveMessage leaves its message at once (the provider waited for the
	// greeting to end), then the call ends voicemail.
	Machine bool
}

// Listener hears the runtime's events of a call, in the order they
// happen, so that a far end that follows the call can: the web client is
// told everything, a Twilio stream marks each turn's audio, the sandbox
// persona answers each turn. Every Line is a Listener; a line embeds
// NopListener and overrides what its far end needs. The methods are called
// from the runtime's goroutines, also after the line has ended, and must
// not block for long (a line buffers, bounded).
type Listener interface {
	// SpeechStarted and SpeechStopped: the caller started and stopped
	// speaking, as the runtime's endpointer hears it.
	SpeechStarted()
	SpeechStopped()
	// AudioStart comes before the first frame of turn turnID's audio is
	// written, AudioDone after its last.
	AudioStart(turnID string)
	AudioDone(turnID string)
	// AudioClear says turn turnID was cut (a barge-in) after playedMs of
	// its audio were written; the runtime called Clear just before.
	AudioClear(turnID string, playedMs int64)
	// AudioPause and AudioResume: the turn's audio paused for the
	// caller's speech, after playedMs, and resumed where it paused; a
	// pause ends in AudioResume or AudioClear. Writes stop meanwhile; a
	// far end that buffers audio (the web client) stops playing it too.
	AudioPause(turnID string, playedMs int64)
	AudioResume(turnID string, playedMs int64)
	// Delta, TurnDone and Transcript are the conversation as text: a
	// piece of an assistant turn, the turn finished (with what the caller
	// heard of it; interrupted when cut), and a transcript line of either
	// role (final false: a partial). On a call with audio they come from
	// the voice pipeline, as the audio is played.
	Delta(turnID, text string)
	TurnDone(turnID, text string, interrupted bool)
	Transcript(role, text, turnID string, final bool)
	// CallEnded says how the call ended, as its record says (outcome and
	// reason); elsewhere reports that something other than its
	// conversation ended it first (the API, housekeeping, another node).
	// It comes before the runtime's Hangup.
	CallEnded(outcome call.Outcome, reason string, elsewhere bool)
}

// NopListener is a Listener that ignores every event, to embed in a line
// whose far end follows none of them (or only some: the line overrides
// those, and names each through the interface, as in
// `var _ = []any{telephony.Listener.AudioStart}`, so that renaming the
// event here breaks its build instead of leaving its method unused).
type NopListener struct{}

func (NopListener) SpeechStarted()                          {}
func (NopListener) SpeechStopped()                          {}
func (NopListener) AudioStart(string)                       {}
func (NopListener) AudioDone(string)                        {}
func (NopListener) AudioClear(string, int64)                {}
func (NopListener) AudioPause(string, int64)                {}
func (NopListener) AudioResume(string, int64)               {}
func (NopListener) Delta(string, string)                    {}
func (NopListener) TurnDone(string, string, bool)           {}
func (NopListener) Transcript(string, string, string, bool) {}
func (NopListener) CallEnded(call.Outcome, string, bool)    {}

var _ Listener = NopListener{}

// Receiver takes what the caller sends over a Line: the runtime hands one
// to Receive, which calls it from its own goroutine only.
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
	// StartAudio turns the call's audio on in format f from now on: a
	// line that began as text (a web call whose client asks for audio).
	// It fails when the call cannot have audio (the server runs no speech
	// engines) or has it already; the call then goes on as it was.
	StartAudio(f audio.Format) error
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
	// OrgID is set by a network whose inbound calls are simulated on an
	// organization's behalf (the sandbox: its own API key asked): the
	// number is one of that organization's inventory purchases.
	OrgID string
}

// Refusals an Admitter answers with (wrapped); providers map them to their
// own responses (SIP: 404, 403, 480).
var (
	ErrUnknownNumber  = errors.New("telephony: the number is not purchased on a connection of this provider")
	ErrSourceRefused  = errors.New("telephony: the source address is not among the connection's inbound sources")
	ErrNoInboundAgent = errors.New("telephony: the number has no inbound assistant")
	ErrUnavailable    = errors.New("telephony: the service cannot take calls now")
	// ErrBusy: the organization's routing endpoint refused the call as
	// busy (SIP 486, Twilio <Reject reason="busy">).
	ErrBusy = errors.New("telephony: the organization's routing refused the call: busy")
)

// Forward is a refusal that redirects the call, unanswered, to To (E.164):
// SIP 302 with To as the Contact, Twilio <Dial>.
type Forward struct{ To string }

func (f *Forward) Error() string {
	return "telephony: the organization's routing forwards the call to " + f.To
}

// Admitter decides an inbound call: it returns the id of the call it
// stored (ringing, direction inbound), or a refusal. The provider then
// answers and reports Answered with the line, or Ended if the answer
// failed.
type Admitter func(ctx context.Context, in Incoming) (callID string, err error)
