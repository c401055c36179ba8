// Package call is the call record and its lifecycle. Every status change of
// every call goes through Call.Transition, which enforces the table in
// docs/api.md ("Call lifecycle"); nothing else writes Status.
package call

import (
	"encoding/json"
	"fmt"
	"time"
)

// Status is the contract's integer call status.
type Status int

// The contract's call statuses.
const (
	Queued     Status = 0
	Ringing    Status = 1
	InProgress Status = 2
	Ended      Status = 3
)

// Text is the status's name as shown in statusText.
func (s Status) Text() string {
	switch s {
	case Queued:
		return "queued"
	case Ringing:
		return "ringing"
	case InProgress:
		return "in-progress"
	case Ended:
		return "ended"
	}
	return "unknown"
}

// ParseStatus accepts the integer or the statusText name.
func ParseStatus(s string) (Status, bool) {
	for st := Queued; st <= Ended; st++ {
		if s == st.Text() || s == fmt.Sprint(int(st)) {
			return st, true
		}
	}
	return 0, false
}

// Type is the channel of a call.
type Type string

// Call types.
const (
	Web   Type = "web"
	Phone Type = "phone"
)

// Direction says who placed a phone call: the service (outbound) or the
// far party (inbound). Web calls have none.
type Direction string

// Call directions.
const (
	Outbound Direction = "outbound"
	Inbound  Direction = "inbound"
)

// Outcome says how an ended call went.
type Outcome string

// Outcomes of an ended call.
const (
	Completed Outcome = "completed"
	Busy      Outcome = "busy"
	NoAnswer  Outcome = "no-answer"
	Voicemail Outcome = "voicemail"
	Failed    Outcome = "failed"
	Canceled  Outcome = "canceled"
)

// ValidOutcome reports whether o is one of the outcomes above.
func ValidOutcome(o Outcome) bool {
	switch o {
	case Completed, Busy, NoAnswer, Voicemail, Failed, Canceled:
		return true
	}
	return false
}

// Ended reasons, namespaced by who or what ended the call.
const (
	ReasonCustomerEnded     = "customer-ended-call"
	ReasonCustomerBusy      = "customer-busy"
	ReasonCustomerNoAnswer  = "customer-did-not-answer"
	ReasonCustomerVoicemail = "customer-voicemail"
	ReasonAssistantEnded    = "assistant-ended-call"
	// ReasonAssistantTransferred: the assistant handed the call to another
	// party (a cold transfer the line accepted).
	ReasonAssistantTransferred = "assistant-transferred-call"
	ReasonProviderFailed       = "provider-failed"
	ReasonClientNeverConnected = "client-never-connected"
	ReasonSystemShutdown       = "system-shutdown"
	ReasonSystemCallLost       = "system-call-lost"
	ReasonMaxDuration          = "exceeded-max-duration"
	ReasonSilenceTimeout       = "silence-timed-out"
	ReasonModelFailed          = "assistant-model-failed"
	ReasonSystemError          = "system-error"
	// ReasonTranscriberFailed: speech-to-text failed (and its fallback, if any).
	ReasonTranscriberFailed = "transcriber-failed"
	// ReasonVoiceFailed: text-to-speech failed (and its fallback, if any).
	ReasonVoiceFailed = "voice-failed"
	// ReasonAPIEnded: POST /v1/calls/{id}/end hung the call up.
	ReasonAPIEnded = "api-ended-call"
	// ReasonNodeLost: the node that held the call's line stopped renewing
	// its lease (it died or lost the database); the leader ended the call.
	ReasonNodeLost = "node-lost"
)

// Call is the record of one conversation attempt over one channel.
type Call struct {
	ID          string
	OrgID       string
	Type        Type
	Status      Status
	AssistantID string
	// Phone calls only.
	PurchaseID string
	From       string
	To         string
	Provider   string
	// Direction is outbound or inbound on phone calls, empty on web calls.
	Direction Direction
	// ProviderCallID is the provider's id of a phone call (the SIP
	// Call-ID, Twilio's CallSid), once the provider has told it.
	ProviderCallID string
	// AttemptID links a call placed by a schedule to its attempt.
	AttemptID string
	// PublicKeyID is the publishable key (pkey_…) that started a web call,
	// '' when a secret key did: the gateway then admits only the key's
	// origins.
	PublicKeyID string

	Outcome     Outcome
	EndedReason string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	StartedAt   time.Time // when the conversation began (answered/connected)
	EndedAt     time.Time
	// Result is set by the conversation when the call ends.
	Result Result
	// Recording is the path of the call's recording under the data
	// directory ('' when it has none); set once the recording is in place
	// (store.SetCallRecording), never by UpdateCall.
	Recording string
	// NodeID is the node (cluster) that holds the call's line: the one
	// that placed or admitted a phone call, took its line when answered,
	// or whose gateway claimed a web call; '' before any did. Live
	// control is sent there, and the call ends node-lost if that node
	// dies.
	NodeID string
	// Variables are what the call's assistant's templates are rendered
	// from: a JSON object (package vars), fixed when the call is created;
	// nil for none. Kept as stored, so that listings copy it as it is.
	Variables json.RawMessage
	// Routing is how an inbound call's assistant was chosen (a
	// routing.Record as JSON); nil on other calls.
	Routing json.RawMessage
}

// DurationSeconds is the talk time: from start to end, 0 if it never started.
func (c *Call) DurationSeconds() float64 {
	if c.StartedAt.IsZero() || c.EndedAt.IsZero() {
		return 0
	}
	return c.EndedAt.Sub(c.StartedAt).Round(time.Millisecond).Seconds()
}

// transitions is the lifecycle table: from → allowed next statuses.
// A web call skips Ringing; any live call may end.
var transitions = map[Status][]Status{
	Queued:     {Ringing, InProgress, Ended},
	Ringing:    {InProgress, Ended},
	InProgress: {Ended},
	Ended:      {},
}

// Transitions returns the lifecycle table, for docs and tests.
func Transitions() map[Status][]Status {
	out := make(map[Status][]Status, len(transitions))
	for k, v := range transitions {
		out[k] = append([]Status(nil), v...)
	}
	return out
}

// ErrTransition is returned for a status change the lifecycle forbids.
type ErrTransition struct {
	From, To Status
}

func (e *ErrTransition) Error() string {
	return fmt.Sprintf("call: cannot go from %s to %s", e.From.Text(), e.To.Text())
}

// Change is what a transition sets besides the status.
type Change struct {
	To      Status
	At      time.Time
	Outcome Outcome // required when To is Ended
	Reason  string  // required when To is Ended
	// ProviderCallID, when set, is recorded on the call (the provider's
	// first event that knows it carries it).
	ProviderCallID string
	// NodeID, when set, is the node that holds the call's line from now
	// on (it took the line with this change).
	NodeID string
}

// Transition applies ch to c if the lifecycle allows it. It is the only
// code that changes Status, StartedAt, EndedAt, Outcome, EndedReason,
// ProviderCallID and, once created, NodeID.
func (c *Call) Transition(ch Change) error {
	allowed := false
	for _, s := range transitions[c.Status] {
		if s == ch.To {
			allowed = true
			break
		}
	}
	if !allowed {
		return &ErrTransition{From: c.Status, To: ch.To}
	}
	if ch.To == Ended && (!ValidOutcome(ch.Outcome) || ch.Reason == "") {
		return fmt.Errorf("call: ending needs an outcome and a reason, got %q/%q", ch.Outcome, ch.Reason)
	}
	at := ch.At.UTC()
	switch ch.To {
	case InProgress:
		c.StartedAt = at
	case Ended:
		c.EndedAt = at
		c.Outcome = ch.Outcome
		c.EndedReason = ch.Reason
	}
	if ch.ProviderCallID != "" {
		c.ProviderCallID = ch.ProviderCallID
	}
	if ch.NodeID != "" {
		c.NodeID = ch.NodeID
	}
	c.Status = ch.To
	c.UpdatedAt = at
	return nil
}
