// Package telephony declares what the call service needs from a phone network
// and from a call's line. Network is a phone network: placing and hanging up
// calls, hearing about their progress, and the inventory of numbers an
// organization can buy (the sandbox network in telephony/sandbox, SIP trunks
// in internal/sip, Twilio in internal/twilio). Line is the one contract
// between an answered call's line and the call runtime (internal/callrun):
// its Capabilities, the runtime's events (Listener) and what the line hands
// the runtime (Receiver); every line pins it (SIP, Twilio, the sandbox
// persona, the web gateway's session) and passes telephony/linetest.
// Networks report to the CallControl they are started with.
package telephony

import (
	"context"
	"errors"
	"time"
)

// Number is a phone number a provider can sell or assign.
type Number struct {
	// Number is the E.164 form, e.g. +14155550100.
	Number string `json:"number"`
	// Provider is the name of the provider that owns the number.
	Provider string `json:"provider"`
	// Region is the ISO 3166-1 alpha-2 region of the number, e.g. US.
	Region string `json:"region"`
	// Locality is a human label for the number's area (city or area code).
	Locality string `json:"locality,omitempty"`
	// Capabilities lists what the number can do: "voice".
	Capabilities []string `json:"capabilities"`
}

// PlaceRequest asks a provider to dial one outbound call.
type PlaceRequest struct {
	// CallID is Switchboard's call id; every Event for this call carries it.
	CallID string
	// From is the purchased number the call is placed from (E.164).
	From string
	// To is the destination (E.164).
	To string
	// Trunk is the connection of the From number: a SIP trunk, or for
	// Twilio only its ConnectionID, which names the Twilio connection
	// (the account) the call is placed with.
	Trunk Trunk
	// DetectMachine asks for answering machine detection where the
	// provider has it (Twilio): "" none, "hangup" (a machine is hung up
	// on: Ended voicemail) or "leaveMessage" (the call connects after the
	// greeting, for the assistant to leave a message).
	DetectMachine string
}

// EventKind is the progress a provider reports for a call.
type EventKind int

const (
	// Ringing means the destination is alerting.
	Ringing EventKind = iota + 1
	// Answered means the destination picked up; the conversation may start.
	Answered
	// Ended means the call is over; Outcome and Reason say how.
	Ended
)

// String names the kind for logs.
func (k EventKind) String() string {
	switch k {
	case Ringing:
		return "ringing"
	case Answered:
		return "answered"
	case Ended:
		return "ended"
	}
	return "unknown"
}

// Event is one step of a call's progress, reported by a provider.
type Event struct {
	CallID string
	Kind   EventKind
	At     time.Time
	// Outcome is set on Ended: completed, busy, no-answer, voicemail, failed or canceled.
	Outcome string
	// Reason is set on Ended: a namespaced endedReason such as "customer-ended-call".
	Reason string
	// ProviderCallID is the provider's id of the call (the SIP Call-ID,
	// Twilio's CallSid), set on the first event that knows it.
	ProviderCallID string
	// Line is set on Answered by providers that carry the call's audio:
	// the runtime now owns the call's end (see Line), and the provider
	// sends no Ended event for it.
	Line Line
}

// EventSink receives provider events. A provider calls it from its own
// goroutines, never while holding a lock the sink might need; the sink must
// not block for long.
type EventSink func(Event)

// CallControl is what a provider reports to, above it: callctl.Service.
// A provider is given it as it starts (lifecycle.Reporter), not when it is
// built, because call control is built with the providers it places calls
// on.
type CallControl interface {
	// HandleEvent receives the provider's events, as an EventSink does.
	HandleEvent(ev Event)
	// Admit decides an inbound call, as an Admitter does.
	Admit(ctx context.Context, in Incoming) (callID string, err error)
}

// CallControlFuncs is a CallControl of two functions, for tests and tools
// that run a provider without call control: a nil Sink drops the events,
// a nil Admitter refuses every inbound call (ErrUnavailable).
type CallControlFuncs struct {
	Sink     EventSink
	Admitter Admitter
}

// HandleEvent implements CallControl.
func (f CallControlFuncs) HandleEvent(ev Event) {
	if f.Sink != nil {
		f.Sink(ev)
	}
}

// Admit implements CallControl.
func (f CallControlFuncs) Admit(ctx context.Context, in Incoming) (string, error) {
	if f.Admitter == nil {
		return "", ErrUnavailable
	}
	return f.Admitter(ctx, in)
}

// Network is a phone network: the sandbox, SIP trunks or Twilio, each
// implemented by a provider (sandbox.Network, sip.Provider,
// twilio.Provider). Implementations are safe for concurrent use.
type Network interface {
	// Name is the network's name as used in the API, a number's or a
	// call's provider ("sandbox", "sip", "twilio").
	Name() string
	// Inventory lists numbers available to buy, in a stable order.
	Inventory(ctx context.Context) ([]Number, error)
	// Purchase reserves a number from the inventory for an organization's use.
	// It returns ErrNumberUnavailable when the number is not in the inventory.
	Purchase(ctx context.Context, number string) error
	// Release gives a purchased number back to the inventory.
	Release(ctx context.Context, number string) error
	// Place starts dialing. It returns once the provider has accepted the
	// call; progress arrives later as Events for req.CallID. An error means
	// no call was placed and no Event will follow.
	Place(ctx context.Context, req PlaceRequest) error
	// Hangup ends a live call; an Ended event with outcome canceled (not yet
	// answered) or completed follows. Hanging up an unknown or already
	// ended call is not an error.
	Hangup(ctx context.Context, callID string) error
	// Close stops every live call (each ends with an Ended event) and
	// releases the provider's resources.
	Close() error
}

// ErrNumberUnavailable is returned by Purchase for a number the provider
// does not offer.
var ErrNumberUnavailable = errors.New("telephony: number not available from this provider")
