package schedule

import (
	"fmt"
	"math"
	"time"
)

// Retry is how one outcome of a try is retried.
//
// MaxAttempts counts retries, not dials: it is how many times a try that
// ended with this outcome sends the attempt back for another try. A try
// is retried when the attempt's tries that ended with this outcome, this
// one included, number at most MaxAttempts; 0 never retries. With busy
// {15, 2} an attempt whose tries are all busy is dialed 3 times: the first
// try and two retries, 15 minutes after each busy end. Each outcome counts
// its own tries, so one attempt is dialed at most 1 + the sum of the
// MaxAttempts of its policy.
//
// AfterMinutes is how long after the try's end the retry is due (its
// requested time; the effective due time is the next opening of the
// calling hours at or after it). It may have decimals (0.5 is 30 s).
type Retry struct {
	AfterMinutes float64 `json:"afterMinutes"`
	MaxAttempts  int     `json:"maxAttempts"`
}

// After is AfterMinutes as a duration, to the millisecond.
func (r Retry) After() time.Duration {
	return time.Duration(math.Round(r.AfterMinutes*60_000)) * time.Millisecond
}

// RetryPolicy is a schedule's retry of each outcome that may be retried.
// A completed or canceled try is never retried; a failed one only when its
// failure is retryable (RetryableFailure).
type RetryPolicy struct {
	Busy      Retry `json:"busy"`
	NoAnswer  Retry `json:"noAnswer"`
	Voicemail Retry `json:"voicemail"`
	Failed    Retry `json:"failed"`
}

// Limits of a Retry.
const (
	MaxRetryAfterMinutes = 7 * 24 * 60 // a week
	MaxRetryAttempts     = 10
)

// DefaultRetry is the policy of a schedule that names none: busy after 15
// minutes, twice; no answer after 60 minutes, twice; voicemail never;
// a retryable failure after 15 minutes, twice.
func DefaultRetry() RetryPolicy {
	return RetryPolicy{
		Busy:     Retry{AfterMinutes: 15, MaxAttempts: 2},
		NoAnswer: Retry{AfterMinutes: 60, MaxAttempts: 2},
		Failed:   Retry{AfterMinutes: 15, MaxAttempts: 2},
	}
}

// RetryOutcomes are the policy's keys, as the API names them, with the
// call outcome each one is for.
var RetryOutcomes = []struct{ Key, Outcome string }{
	{"busy", "busy"}, {"noAnswer", "no-answer"}, {"voicemail", "voicemail"}, {"failed", "failed"},
}

// For returns the retry of a call outcome (busy, no-answer, voicemail,
// failed) and whether that outcome is retried at all.
func (p RetryPolicy) For(outcome string) (*Retry, bool) {
	switch outcome {
	case "busy":
		return &p.Busy, true
	case "no-answer":
		return &p.NoAnswer, true
	case "voicemail":
		return &p.Voicemail, true
	case "failed":
		return &p.Failed, true
	}
	return nil, false
}

// Ref is For for changing p's fields in place (by API key: busy, noAnswer, …).
func (p *RetryPolicy) Ref(key string) *Retry {
	switch key {
	case "busy":
		return &p.Busy
	case "noAnswer":
		return &p.NoAnswer
	case "voicemail":
		return &p.Voicemail
	case "failed":
		return &p.Failed
	}
	return nil
}

// Validate checks every retry, naming fields under prefix (e.g. "retry.").
func (p RetryPolicy) Validate(prefix string) []FieldError {
	var errs []FieldError
	for _, o := range RetryOutcomes {
		r, _ := p.For(o.Outcome)
		if r.AfterMinutes < 0 || r.AfterMinutes > MaxRetryAfterMinutes || math.IsNaN(r.AfterMinutes) {
			errs = append(errs, FieldError{prefix + o.Key + ".afterMinutes", fmt.Sprintf("must be a number of minutes from 0 to %d (decimals allowed)", MaxRetryAfterMinutes)})
		}
		if r.MaxAttempts < 0 || r.MaxAttempts > MaxRetryAttempts {
			errs = append(errs, FieldError{prefix + o.Key + ".maxAttempts", fmt.Sprintf("must be an integer from 0 to %d (retries after the first try)", MaxRetryAttempts)})
		}
	}
	return errs
}

// retryableFailures are the endedReasons of failed calls that dialing
// again may fix: the providers' own classification (telephony.Error's
// Retryable) as it reaches the call record, the one table that keeps it.
// A test checks it against every provider's table (internal/sip's
// Classify, internal/twilio's ClassifyStatus).
var retryableFailures = map[string]bool{
	"provider-failed":        true, // the sandbox's and callctl's generic refusal
	"sip-provider-failed":    true, // SIP 5xx, transport error, timeout
	"twilio-call-failed":     true, // Twilio status "failed"
	"twilio-stream-failed":   true, // Twilio completed the call but the media stream never connected
	"twilio-provider-failed": true, // Twilio's API unavailable or rate limited
}

// RetryableFailure reports whether a failed call with this endedReason may
// be retried. Failures of the number or the account (invalid number,
// rejected, authentication), of the call once it ran (media timeouts,
// assistant errors) and lost calls (a dial that may have reached the
// network) are not.
func RetryableFailure(endedReason string) bool { return retryableFailures[endedReason] }

// Try is one dial of an attempt: when it was due (the effective time),
// when its call was created, the call, and how the call ended (empty
// while it runs).
type Try struct {
	Due         time.Time `json:"due"`
	DialedAt    time.Time `json:"dialedAt"`
	CallID      string    `json:"callId"`
	Outcome     string    `json:"outcome"`
	EndedReason string    `json:"endedReason"`
}

// NextTry decides the retry of an attempt whose try just ended with
// outcome and endedReason at ended; earlier are the attempt's tries
// before it. It returns the retry's requested time (ended + AfterMinutes)
// and whether there is one; the caller moves it to the calling hours
// (NextOpening).
func (p RetryPolicy) NextTry(earlier []Try, outcome, endedReason string, ended time.Time) (time.Time, bool) {
	r, ok := p.For(outcome)
	if !ok || r.MaxAttempts <= 0 {
		return time.Time{}, false
	}
	if outcome == "failed" && !RetryableFailure(endedReason) {
		return time.Time{}, false
	}
	n := 1 // this try
	for _, t := range earlier {
		if t.Outcome == outcome {
			n++
		}
	}
	if n > r.MaxAttempts {
		return time.Time{}, false
	}
	return ended.Add(r.After()), true
}
