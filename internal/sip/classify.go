package sip

import (
	"switchboard/internal/call"
	"switchboard/internal/telephony"
)

// Ended reasons of SIP calls, besides the call package's own (customer-busy,
// customer-did-not-answer, api-ended-call, …).
const (
	ReasonInvalidNumber  = "sip-invalid-number"
	ReasonAuthFailed     = "sip-auth-failed"
	ReasonCallRejected   = "sip-call-rejected"
	ReasonProviderFailed = "sip-provider-failed"
	// ReasonMediaTimeout: no RTP from the far party for Config.MediaTimeout.
	ReasonMediaTimeout = "sip-media-timeout"
	// ReasonTransferred: the line was handed to another destination (REFER).
	ReasonTransferred = "assistant-transferred-call"
	reasonAPIEnded    = "api-ended-call"
)

// StatusRingTimeout is the status Classify is given when nobody answered
// within Config.RingTimeout: the call is canceled and classified as a 408
// (Request Timeout), which is what a carrier's own ring timer answers.
const StatusRingTimeout = 408

// Classify is the SIP status table of docs/ARCHITECTURE.md ("Lines and the
// call runtime") and docs/telephony.md, the one place it lives: how a call
// whose INVITE got the final response status ends, and whether dialing
// again may succeed. authenticated says whether the INVITE carried
// credentials (after a 401/407 challenge): only then are 401, 403 and 407
// authentication failures; without them a 401/407 (no password on the
// connection) or 403 is a rejection like any other 4xx. Status 0 stands
// for a transport error or a transaction timeout (no final response).
// 1xx and 2xx are not failures: Classify returns nil.
//
//	486, 600                        busy       customer-busy            retryable
//	408, 480, ring timeout          no-answer  customer-did-not-answer  retryable
//	404, 410, 484, 604              failed     sip-invalid-number
//	401, 403, 407 after auth        failed     sip-auth-failed
//	487                             canceled   api-ended-call
//	other 3xx, 4xx, 6xx             failed     sip-call-rejected
//	5xx, 0 (transport, timeout)     failed     sip-provider-failed      retryable
func Classify(status int, authenticated bool) *telephony.Error {
	e := func(outcome call.Outcome, reason string, retryable bool) *telephony.Error {
		return &telephony.Error{Outcome: string(outcome), Reason: reason, Retryable: retryable, Status: status}
	}
	switch {
	case status >= 100 && status < 300:
		return nil
	case status == 486 || status == 600:
		return e(call.Busy, call.ReasonCustomerBusy, true)
	case status == 408 || status == 480:
		return e(call.NoAnswer, call.ReasonCustomerNoAnswer, true)
	case status == 404 || status == 410 || status == 484 || status == 604:
		return e(call.Failed, ReasonInvalidNumber, false)
	case authenticated && (status == 401 || status == 403 || status == 407):
		return e(call.Failed, ReasonAuthFailed, false)
	case status == 487:
		return e(call.Canceled, reasonAPIEnded, false)
	case status >= 300 && status < 500, status >= 600 && status < 700:
		return e(call.Failed, ReasonCallRejected, false)
	default: // 5xx, 0 and anything out of range
		return e(call.Failed, ReasonProviderFailed, true)
	}
}
