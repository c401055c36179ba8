package store

import (
	"context"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/event"
)

// Calls is the call records and their transitions.
type Calls interface {
	// CreateCall stores a new call. When c.AttemptID is set it also moves
	// that attempt from pending to dialed, linked to the call, in the same
	// transaction; a Conflict means the attempt was no longer pending, or
	// its schedule is paused (the attempt's lease is then given back), and
	// no call was stored.
	//
	// An outbound phone call to a number on the organization's do-not-call
	// list is not stored: the error is phone.Suppressed (a Conflict with
	// code suppressed), and a pending attempt c.AttemptID names becomes
	// schedule.Suppressed, with the suppressed events queued, in the same
	// transaction. The list is read under the lock AddDNC takes on the
	// number, so a dial and an add of one number are ordered: a number
	// added before the claim is never dialed.
	CreateCall(ctx context.Context, c call.Call, suppressed ...event.Event) error

	// CreateCalls is CreateCall for many calls in one transaction (a
	// dialer's batch): each call is decided as CreateCall decides it, and
	// its outcome is at its index in the returned errors (nil: stored). The
	// second error, when set, means nothing was stored.
	CreateCalls(ctx context.Context, calls []NewCall) ([]error, error)
	GetCall(ctx context.Context, orgID, id string) (call.Call, error)

	// GetCallAnyOrg is for provider events, which know only the call id.
	GetCallAnyOrg(ctx context.Context, id string) (call.Call, error)

	// GetCallsAnyOrg is GetCallAnyOrg for many ids at once (a batch of
	// provider events); ids not found are left out, in no given order.
	GetCallsAnyOrg(ctx context.Context, ids []string) ([]call.Call, error)

	// ListCalls returns a page of calls, newest first, and the total matching.
	ListCalls(ctx context.Context, orgID string, f CallFilter) ([]call.Call, int, error)

	// UpdateCall saves c if the stored status is still prev (Conflict
	// otherwise). In the same transaction it queues events for the
	// organization's subscribed webhook endpoints and, when c has just
	// ended, its analysis (state pending).
	UpdateCall(ctx context.Context, c call.Call, prev call.Status, events ...event.Event) error

	// UpdateCalls is UpdateCall for many calls in one transaction (a batch
	// of provider events): each is saved as UpdateCall saves it, and its
	// outcome is at its index in the returned errors (nil: saved; a call
	// named twice is a Conflict the second time). The second error, when
	// set, means nothing was saved.
	UpdateCalls(ctx context.Context, updates []CallUpdate) ([]error, error)

	// SetCallRecording records that the call has a recording at path
	// (relative to the data directory); NotFound when the organization has
	// no such call. Only this method sets Call.Recording.
	SetCallRecording(ctx context.Context, orgID, callID, path string) error

	// StaleCalls lists calls of any organization that are not ended and were
	// last updated before the given time.
	StaleCalls(ctx context.Context, updatedBefore time.Time, limit int) ([]call.Call, error)
}

// CallFilter selects calls for a listing. Zero fields do not filter.
type CallFilter struct {
	Type          call.Type
	Status        *call.Status
	Direction     call.Direction
	CreatedAfter  time.Time
	CreatedBefore time.Time
	// Outcome selects calls that ended so (the dashboard's filter; the
	// REST listing does not offer it).
	Outcome call.Outcome
	// CallID selects the call with that id, and Number (E.164) the calls
	// from or to that number: the dashboard's search, each an indexed
	// lookup within the organization.
	CallID string
	Number string
	Page
}

// NewCall is a call for CreateCalls, with the events queued if its number
// turns out to be on the do-not-call list (CreateCall's suppressed).
type NewCall struct {
	Call       call.Call
	Suppressed []event.Event
}

// CallUpdate is one call's change for Store.UpdateCalls: Call is saved if
// the stored status is still Prev, with Events queued.
type CallUpdate struct {
	Call   call.Call
	Prev   call.Status
	Events []event.Event
}

// Counter is implemented by stores that can total calls by status across
// organizations cheaply (for metrics).
type Counter interface {
	CallCounts(ctx context.Context) (map[call.Status]int64, error)
}
