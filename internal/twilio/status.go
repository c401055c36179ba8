package twilio

import (
	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// Ended reasons of Twilio calls, besides the call package's own.
const (
	// ReasonCallFailed: Twilio reported the call failed (status failed:
	// a carrier error, an unreachable number).
	ReasonCallFailed = "twilio-call-failed"
	// ReasonCallCanceled: the call was canceled at Twilio, not by us.
	ReasonCallCanceled = "twilio-call-canceled"
	// ReasonStreamFailed: the call was answered but its Media Stream did
	// not connect, or broke.
	ReasonStreamFailed = "twilio-stream-failed"
	// ReasonMediaTimeout: no media from Twilio for Config.MediaTimeout.
	ReasonMediaTimeout = "twilio-media-timeout"
	// ReasonCallLost: Twilio told us nothing of the call (no callback, no
	// TwiML fetch) long after it should have.
	ReasonCallLost = "twilio-call-lost"
	// Refusals of the call create request (Place's *telephony.Error).
	ReasonAuthFailed     = "twilio-auth-failed"
	ReasonInvalidNumber  = "twilio-invalid-number"
	ReasonInvalidFrom    = "twilio-invalid-from"
	ReasonCallRejected   = "twilio-call-rejected"
	ReasonProviderFailed = "twilio-provider-failed"
	// ReasonTransferred: the line was handed to another party (<Dial>).
	ReasonTransferred = call.ReasonAssistantTransferred
)

// Twilio's call statuses ("Call resource", Status; status callbacks'
// CallStatus: "answered" arrives as in-progress).
const (
	StatusQueued     = "queued"
	StatusInitiated  = "initiated"
	StatusRinging    = "ringing"
	StatusInProgress = "in-progress"
	StatusCompleted  = "completed"
	StatusBusy       = "busy"
	StatusNoAnswer   = "no-answer"
	StatusFailed     = "failed"
	StatusCanceled   = "canceled"
)

// Ranks of statuses: a call's status only moves up (see ClassifyStatus).
const (
	rankNone = iota
	rankInitiated
	rankRinging
	rankInProgress
	rankTerminal
)

// StatusClass is what one status callback means for a call.
type StatusClass struct {
	// Rank orders the statuses (initiated < ringing < in-progress <
	// terminal); a callback whose rank is not above the call's is stale
	// or a duplicate. 0 is a status this table does not know (ignored).
	Rank int
	// End is set for terminal statuses: how the call ends when no line
	// took it over (with a line, the runtime owns the end).
	End *telephony.Error
}

// ClassifyStatus is the table of status callbacks, the one place it lives.
// streamExpected says whether we answered the call's TwiML with a
// <Connect><Stream> that has not connected (so a completed call lost its
// stream rather than being hung up before anything began).
//
//	queued, initiated    rank 1
//	ringing              rank 2   → Ringing event
//	in-progress          rank 3   (answered; Answered comes with the stream)
//	busy                 terminal  busy       customer-busy            retryable
//	no-answer            terminal  no-answer  customer-did-not-answer  retryable
//	failed               terminal  failed     twilio-call-failed       retryable
//	canceled             terminal  canceled   twilio-call-canceled
//	completed, stream expected     failed     twilio-stream-failed     retryable
//	completed            terminal  completed  customer-ended-call
func ClassifyStatus(status string, streamExpected bool) StatusClass {
	end := func(outcome call.Outcome, reason string, retryable bool) StatusClass {
		return StatusClass{Rank: rankTerminal, End: &telephony.Error{Outcome: string(outcome), Reason: reason, Retryable: retryable}}
	}
	switch status {
	case StatusQueued, StatusInitiated:
		return StatusClass{Rank: rankInitiated}
	case StatusRinging:
		return StatusClass{Rank: rankRinging}
	case StatusInProgress:
		return StatusClass{Rank: rankInProgress}
	case StatusBusy:
		return end(call.Busy, call.ReasonCustomerBusy, true)
	case StatusNoAnswer:
		return end(call.NoAnswer, call.ReasonCustomerNoAnswer, true)
	case StatusFailed:
		return end(call.Failed, ReasonCallFailed, true)
	case StatusCanceled:
		return end(call.Canceled, ReasonCallCanceled, false)
	case StatusCompleted:
		if streamExpected {
			return end(call.Failed, ReasonStreamFailed, true)
		}
		return end(call.Completed, call.ReasonCustomerEnded, false)
	}
	return StatusClass{}
}

// placeError classifies a refused call create request as the call's end
// (Place returns it; no event follows).
func placeError(err error) *telephony.Error {
	c := ClassifyError(err)
	te := &telephony.Error{Outcome: string(call.Failed), Status: c.Status, Err: err}
	switch c.Kind {
	case KindCredentials:
		te.Reason = ReasonAuthFailed
	case KindTo:
		te.Reason = ReasonInvalidNumber
	case KindFrom:
		te.Reason = ReasonInvalidFrom
	case KindUnavailable, KindRateLimited:
		te.Reason, te.Retryable = ReasonProviderFailed, true
	default:
		te.Reason = ReasonCallRejected
	}
	return te
}
