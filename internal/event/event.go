// Package event is the webhook event catalogue: every event type
// Switchboard sends, and one builder per event that makes its payload
// (the "data" of a delivery's body, docs/api.md "Events"), so that each
// event's moment and fields are decided in one place. A builder's Event
// is the row the store queues, in the transaction of the change it
// announces, for the endpoints that subscribe to its type (store.Outbox).
//
// It is a leaf of the domain: it imports the call and schedule types and
// their JSON form (view), nothing of the store or the transports.
package event

import (
	"encoding/json"
	"strconv"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/schedule"
	"switchboard/internal/view"
)

// Webhook event types.
const (
	CallStarted       = "call.started"
	CallEnded         = "call.ended"
	TranscriptReady   = "call.transcript.ready"
	AnalysisReady     = "call.analysis.ready"
	AttemptCompleted  = "schedule.attempt.completed"
	AttemptRetrying   = "schedule.attempt.retrying"
	AttemptSuppressed = "schedule.attempt.suppressed"
	SchedulePaused    = "schedule.paused"
	ScheduleResumed   = "schedule.resumed"
	ScheduleCompleted = "schedule.completed"
)

// Types lists every webhook event type: what an endpoint may subscribe
// to, and what a listener, or an endpoint created without a list,
// receives.
var Types = []string{CallStarted, CallEnded, TranscriptReady, AnalysisReady, AttemptCompleted,
	AttemptRetrying, AttemptSuppressed, SchedulePaused, ScheduleResumed, ScheduleCompleted}

// Event is a webhook event to queue for an organization's endpoints that
// subscribe to its type.
type Event struct {
	// ID names the event in logs. The store does not keep it: each
	// subscribed endpoint gets a message of its own (msg_…), whose id is
	// the webhook-id of every delivery attempt.
	ID   string
	Type string
	At   time.Time
	// Data is the event's JSON payload ("data" of the webhook body).
	Data []byte
	// CallID is the call the event is about, if any: its messages are
	// listed with the call (store.Outbox.ListCallMessages).
	CallID string
}

// idPrefix begins every event's id (evt_…).
const idPrefix = "evt"

// ForCall are the events call c's new state announces: call.started when
// it became in-progress; call.ended, call.transcript.ready and, for a call
// a schedule placed, schedule.attempt.completed when it ended; none for
// any other state. base is the server's public URL (for a recording's
// URL).
func ForCall(c call.Call, base string) []Event {
	switch c.Status {
	case call.InProgress:
		return []Event{NewCallStarted(c, base)}
	case call.Ended:
		out := []Event{NewCallEnded(c, base), NewTranscriptReady(c, base)}
		if c.AttemptID != "" {
			out = append(out, NewAttemptCompleted(c, base))
		}
		return out
	}
	return nil
}

// NewCallStarted is call.started, sent when a call becomes in-progress: a
// phone call was answered, a web client connected. Its data is
// {"call"}, the call as GET /v1/calls/{id} shows it (base is the server's
// public URL, for a recording's URL).
func NewCallStarted(c call.Call, base string) Event {
	return ofCall(CallStarted, c, withCall(nil, view.NewCallAt(c, base)))
}

// NewCallEnded is call.ended, sent when a call ends, whatever its outcome
// — including calls that never started (busy, no answer, refused by the
// provider, a web call nobody joined). Its data is {"call"}, the ended
// call.
func NewCallEnded(c call.Call, base string) Event {
	return ofCall(CallEnded, c, withCall(nil, view.NewCallAt(c, base)))
}

// NewTranscriptReady is call.transcript.ready, sent at the same moment as
// call.ended: the turns can be read with GET /v1/calls/{id}/transcripts.
// Its data is {"call"}, the ended call.
func NewTranscriptReady(c call.Call, base string) Event {
	return ofCall(TranscriptReady, c, withCall(nil, view.NewCallAt(c, base)))
}

// NewAttemptCompleted is schedule.attempt.completed, sent when a call
// placed by a schedule has ended: for every try, also one that is retried
// (attempts that fail without placing a call send nothing). Its data is
// {"attemptId", "call"}.
func NewAttemptCompleted(c call.Call, base string) Event {
	b := view.AppendString(key(nil, "attemptId"), c.AttemptID)
	return ofCall(AttemptCompleted, c, withCall(b, view.NewCallAt(c, base)))
}

// Retry is what the end of a try decided for its attempt: another try
// (schedule.Retry.NextTry), announced by NewAttemptRetrying.
type Retry struct {
	ScheduleID, AttemptID string
	// Try is the coming try's number: 2 for the first retry.
	Try int
	// RequestedAt is when the retry policy asks for the try; DueAt when
	// it will be made (the calling hours' next opening from RequestedAt).
	RequestedAt, DueAt time.Time
}

// NewAttemptRetrying is schedule.attempt.retrying, sent when a try's call
// ended (c) and the schedule's retry sends the attempt back for another
// try (queued in the transaction that ends the call, with call.ended and
// schedule.attempt.completed). Its data is {"scheduleId", "attemptId",
// "try", "requestedAt", "dueAt", "call"}, the call being the ended one.
func NewAttemptRetrying(c call.Call, base string, r Retry) Event {
	b := view.AppendString(key(nil, "scheduleId"), r.ScheduleID)
	b = view.AppendString(key(b, "attemptId"), r.AttemptID)
	b = strconv.AppendInt(key(b, "try"), int64(r.Try), 10)
	b = view.Time(r.RequestedAt).AppendJSON(key(b, "requestedAt"))
	b = view.Time(r.DueAt).AppendJSON(key(b, "dueAt"))
	return ofCall(AttemptRetrying, c, withCall(b, view.NewCallAt(c, base)))
}

// NewAttemptSuppressed is schedule.attempt.suppressed, sent when a
// scheduled attempt came due but its number was on the do-not-call list:
// no call was placed (queued in the transaction that decided it). c is the
// call the attempt would have placed, which is not stored, so the event
// names no call. Its data is {"attemptId", "phonePurchaseId",
// "phoneNumber", "reason"}.
func NewAttemptSuppressed(c call.Call) Event {
	b := view.AppendString(key(nil, "attemptId"), c.AttemptID)
	b = view.AppendString(key(b, "phonePurchaseId"), c.PurchaseID)
	b = view.AppendString(key(b, "phoneNumber"), c.To)
	b = view.AppendString(key(b, "reason"), "do-not-call")
	return Event{ID: id.New(idPrefix), Type: AttemptSuppressed, At: c.CreatedAt, Data: append(b, '}')}
}

// NewSchedulePaused is schedule.paused, sent when POST
// /v1/phone/schedules/{id}/pause changed the schedule, at at. Its data is
// {"scheduleId", "at"}.
func NewSchedulePaused(scheduleID string, at time.Time) Event {
	return ofSchedule(SchedulePaused, at, append(scheduleAt(scheduleID, at), '}'))
}

// NewScheduleResumed is schedule.resumed, sent when POST
// /v1/phone/schedules/{id}/resume changed the schedule, at at. Its data is
// {"scheduleId", "at"}.
func NewScheduleResumed(scheduleID string, at time.Time) Event {
	return ofSchedule(ScheduleResumed, at, append(scheduleAt(scheduleID, at), '}'))
}

// NewScheduleCompleted is schedule.completed, sent when no attempt of the
// schedule is left pending or with a live call, whatever ended the last
// ones (calls, failures, cancels, do-not-call suppressions); sent once, by
// the leader's sweep. Its data is {"scheduleId", "at", "progress"}, the
// schedule's final progress as GET /v1/phone/schedules/{id} shows it.
func NewScheduleCompleted(scheduleID string, at time.Time, progress schedule.Counters) Event {
	// Counters are ints and a map of ints: encoding them cannot fail.
	p, _ := json.Marshal(progress)
	b := append(key(scheduleAt(scheduleID, at), "progress"), p...)
	return ofSchedule(ScheduleCompleted, at, append(b, '}'))
}

// NewAnalysisReady is call.analysis.ready, sent when the call's analysis
// became ready, at at (nothing is sent when it fails). analysis is the
// analysis's JSON (summary, sentiment, successEvaluation, structuredData,
// notes). Its data is {"callId", "analysis", "call"}, the call as the other
// events render it (its recording's URL under base, the server's public
// URL). A call has one analysis, so the event's id is the call's.
func NewAnalysisReady(c call.Call, base string, analysis []byte, at time.Time) Event {
	b := view.AppendString(key(nil, "callId"), c.ID)
	b = append(key(b, "analysis"), analysis...)
	b = withCall(b, view.NewCallAt(c, base))
	return Event{ID: idPrefix + "_" + c.ID, Type: AnalysisReady, At: at, Data: b, CallID: c.ID}
}

// ofCall is an event about call c, at its last change.
func ofCall(typ string, c call.Call, data []byte) Event {
	return Event{ID: id.New(idPrefix), Type: typ, At: c.UpdatedAt, Data: data, CallID: c.ID}
}

// ofSchedule is an event about a schedule, at at.
func ofSchedule(typ string, at time.Time, data []byte) Event {
	return Event{ID: id.New(idPrefix), Type: typ, At: at, Data: data}
}

// scheduleAt begins a schedule event's data: {"scheduleId", "at"}.
func scheduleAt(scheduleID string, at time.Time) []byte {
	b := view.AppendString(key(nil, "scheduleId"), scheduleID)
	return view.Time(at).AppendJSON(key(b, "at"))
}

// key appends the member name's `"name":`, after a comma, or after the
// object's opening brace when b is empty.
func key(b []byte, name string) []byte {
	if len(b) == 0 {
		b = append(b, '{')
	} else {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// withCall appends the member "call" (v) to the object begun in b and
// closes it.
func withCall(b []byte, v view.Call) []byte {
	return append(v.AppendJSON(key(b, "call")), '}')
}
