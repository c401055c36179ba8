// Package schedule is scheduled outbound calling: a schedule names contacts
// of one purchased number and the dates to call them; each (contact, date)
// is an Attempt stored in the database and dialed at its due time.
package schedule

import (
	"time"
)

// Limits of one schedule.
const (
	MaxDates    = 1000
	MaxContacts = 10000
	// MaxAttempts caps contacts × dates so one request cannot ask for
	// millions of rows; split bigger campaigns into several schedules.
	MaxAttempts = 100000
	// Skew is how far in the past a date may be and still be accepted
	// (clocks differ; a date meant as "now" must not be refused).
	Skew = 5 * time.Second
	// DateLayout is the one accepted date form: ISO 8601 UTC with milliseconds.
	DateLayout = "2006-01-02T15:04:05.000Z"
)

// Schedule is a named set of attempts on one purchased number.
type Schedule struct {
	ID         string
	OrgID      string
	Name       string
	PurchaseID string
	Message    string
	Timezone   string
	Dates      []time.Time
	ContactIDs []string
	CreatedAt  time.Time
	CanceledAt time.Time
}

// AttemptState is where an attempt is in its life.
type AttemptState string

// Attempt states. An attempt that is dialed links its call; its outcome is the call's.
const (
	Pending  AttemptState = "pending"
	Dialed   AttemptState = "dialed"
	Canceled AttemptState = "canceled"
	Failed   AttemptState = "failed"
)

// Attempt is one call to one contact at one date.
type Attempt struct {
	ID         string
	OrgID      string
	ScheduleID string
	ContactID  string
	DueAt      time.Time
	State      AttemptState
	CallID     string
	// Error says why a Failed attempt placed no call.
	Error     string
	UpdatedAt time.Time
	// Leases is how many times the attempt was handed to the dial queue,
	// and LeasedUntil when the latest hand-out runs out (zero: never
	// handed out). A dial job carries its lease number; a job whose number
	// is not the attempt's latest was superseded.
	Leases      int
	LeasedUntil time.Time
	// Filled in from the linked call when read back.
	CallStatus  int
	CallOutcome string
}

// ParseDate accepts only DateLayout.
func ParseDate(s string) (time.Time, bool) {
	t, err := time.Parse(DateLayout, s)
	if err != nil || len(s) != len(DateLayout) {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// Progress is an attempt's state as users see it: a dialed attempt is
// "calling" until its call ends, then "completed".
func Progress(state AttemptState, callEnded bool) string {
	if state != Dialed {
		return string(state)
	}
	if callEnded {
		return "completed"
	}
	return "calling"
}

// Live reports whether an attempt in the given progress may still produce a call.
func Live(progress string) bool { return progress == string(Pending) || progress == "calling" }
