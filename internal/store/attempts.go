package store

import (
	"context"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
)

// Attempts is a schedule's attempts (schedule.Attempt): one per contact
// and date, handed out by the promoter, claimed and dialed by a dialer.
type Attempts interface {
	// GetAttempt reads an attempt and its schedule's settings (without
	// its Dates and ContactIDs), for the dialer and a call's end.
	GetAttempt(ctx context.Context, id string) (schedule.Attempt, schedule.Schedule, error)

	// FailAttempt moves a pending attempt to failed with a reason.
	FailAttempt(ctx context.Context, id, reason string, at time.Time) error

	// LeasedAttempts counts pending attempts whose lease runs past now: the
	// dials handed out and not yet made.
	LeasedAttempts(ctx context.Context, now time.Time) (int, error)

	// ClaimDials gives a node's dialer up to limit attempts the promoter
	// has handed out (pending, leased past now) that no dialer holds
	// (their hold ended by now), earliest due first, each held until
	// now+hold: two dialers, on any nodes, never hold the same attempt at
	// once. An attempt whose dialer died is claimed again once its hold
	// ends, while its hand-out lasts (after that the promoter hands it out
	// again). The claim is not the dial: CreateCall's claim of the attempt
	// decides that.
	// Each comes with what placing its call needs (Dial).
	ClaimDials(ctx context.Context, now time.Time, hold time.Duration, limit int) ([]Dial, error)

	// LeaseAttempts is the promoter's hand-out: up to limit pending
	// attempts that are due by now and not leased (never, or their lease
	// ran out), earliest due first, each leased until now+lease and its
	// lease count raised, and returned with the new count (Leases) and
	// LeasedUntil. Two callers, on any nodes, never lease the same attempt
	// at once. It keeps every cap: it leases only attempts whose schedule
	// is not paused, that are inside their calling hours at now (one due
	// but outside is moved to the next opening instead, never dropped),
	// and whose lease keeps the live calls of their schedule
	// (MaxConcurrentCalls), number and organization under the caps (caps:
	// the server's; an organization's own lower them; 0 is none). Live
	// calls are phone calls not ended, on any node, plus attempts leased
	// and not dialed. An attempt over a cap stays pending, unleased.
	LeaseAttempts(ctx context.Context, now time.Time, lease time.Duration, limit int, caps schedule.Caps) ([]schedule.Attempt, error)

	// EndAttemptCall is UpdateCall for a call placed by an attempt: in
	// the same transaction, when the call has just ended, it does end to
	// the attempt (a retry) and queues end's events.
	EndAttemptCall(ctx context.Context, c call.Call, prev call.Status, end AttemptEnd, events ...event.Event) error
}

// AttemptEnd is what EndAttemptCall does to the attempt of a call that
// ends: a retry, or nothing (the attempt stays dialed, final).
type AttemptEnd struct {
	// Retry sends the attempt back to pending, due at DueAt (the
	// effective time; RequestedAt is the time asked for), its ending try
	// appended to its tries; Retrying is queued with it. A schedule
	// canceled meanwhile is not retried.
	Retry       bool
	RequestedAt time.Time
	DueAt       time.Time
	Retrying    event.Event
}

// Dial is an attempt a dialer claimed (ClaimDials), with its schedule's
// number, message and zone and its contact: what the call is placed and
// its variables are made with.
type Dial struct {
	schedule.Attempt
	// PurchaseID is the schedule's number, the call's caller ID.
	PurchaseID string
	// To is the contact's phone number; "" when the contact was deleted.
	To string
	// Contact is the attempt's contact (ID, Name, PhoneNumber, Timezone,
	// Metadata); zero when it was deleted.
	Contact phone.Contact
	// Message and Timezone are the schedule's.
	Message, Timezone string
}
