// Package schedule is scheduled outbound calling: a schedule names contacts
// of one purchased number and the dates to call them; each (contact, date)
// is an Attempt stored in the database and dialed at its due time.
package schedule

import (
	"sync"
	"time"

	"switchboard/internal/call"
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

	// Campaign settings (docs/ARCHITECTURE.md, "Campaign settings").
	// Hours is when attempts may be dialed, in each contact's timezone,
	// else Timezone; Retry how each outcome is retried;
	// MaxConcurrentCalls caps the schedule's live calls (0: no cap of its
	// own). PausedAt is set while the schedule is paused.
	Hours              CallingHours
	Retry              RetryPolicy
	MaxConcurrentCalls int
	PausedAt           time.Time
}

// AttemptState is where an attempt is in its life.
type AttemptState string

// Attempt states. An attempt that is dialed links its call; its outcome is the call's.
const (
	Pending  AttemptState = "pending"
	Dialed   AttemptState = "dialed"
	Canceled AttemptState = "canceled"
	Failed   AttemptState = "failed"
	// Suppressed: the number was on the organization's do-not-call list
	// when the attempt was to be dialed; no call was placed.
	Suppressed AttemptState = "suppressed"
)

// Attempt is one call to one contact at one date.
type Attempt struct {
	ID         string
	OrgID      string
	ScheduleID string
	ContactID  string
	// RequestedAt is when the attempt was asked for: its date, or for a
	// retry its try's end plus the retry's AfterMinutes. DueAt is the
	// effective due time: the calling hours' next opening at or after it
	// (moved again if the promoter finds it outside the window).
	RequestedAt time.Time
	DueAt       time.Time
	State       AttemptState
	// Tries are the attempt's finished tries before its current call,
	// oldest first (CurrentTry adds the current one).
	Tries  []Try
	CallID string
	// Error says why a Failed attempt placed no call.
	Error     string
	UpdatedAt time.Time
	// Leases is how many times the attempt was handed to the dial queue,
	// and LeasedUntil when the latest hand-out runs out (zero: never
	// handed out). A dial job carries its lease number; a job whose number
	// is not the attempt's latest was superseded.
	Leases      int
	LeasedUntil time.Time
	// LeaseBase is Leases when the current try began (a retry keeps
	// counting leases, so dial jobs stay unique): the try has been handed
	// out Leases-LeaseBase times.
	LeaseBase int
	// Filled in from the linked call when read back.
	CallStatus      int
	CallOutcome     string
	CallEndedReason string
	CallCreatedAt   time.Time
}

// CurrentTry is the try of the attempt's current call, if it has one.
func (a Attempt) CurrentTry() (Try, bool) {
	if a.CallID == "" {
		return Try{}, false
	}
	t := Try{Due: a.DueAt, DialedAt: a.CallCreatedAt, CallID: a.CallID}
	if a.CallStatus == int(call.Ended) {
		t.Outcome, t.EndedReason = a.CallOutcome, a.CallEndedReason
	}
	return t, true
}

// AllTries are the finished tries and the current one, oldest first.
func (a Attempt) AllTries() []Try {
	out := append([]Try{}, a.Tries...)
	if t, ok := a.CurrentTry(); ok {
		out = append(out, t)
	}
	return out
}

// Zone is where an attempt's calling hours are read: the contact's
// timezone when it has a valid one, else the schedule's, else UTC.
func Zone(contactTZ, scheduleTZ string) *time.Location {
	for _, tz := range []string{contactTZ, scheduleTZ} {
		if loc := loadZone(tz); loc != nil {
			return loc
		}
	}
	return time.UTC
}

// zones caches the zones loaded: time.LoadLocation reads and parses the
// zone's file each time, and Zone runs for every attempt the promoter
// looks at and every scheduled call's end. Only valid IANA names are
// kept, so the cache is bounded by the zone database.
var zones sync.Map // name → *time.Location

func loadZone(tz string) *time.Location {
	if tz == "" {
		return nil
	}
	if loc, ok := zones.Load(tz); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil
	}
	zones.Store(tz, loc)
	return loc
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

// Schedule states, as the API shows them (State).
const (
	StateActive   = "active"
	StatePaused   = "paused"
	StateCanceled = "canceled"
	StateFinished = "finished"
)

// State is the schedule's state given live, how many of its attempts may
// still produce a call (pending, or calling: Live): canceled or finished
// once none may (canceled when it was canceled), else paused while it is
// paused and not canceled, else active. A canceled schedule with a call
// still under way is active until that call ends.
func (s Schedule) State(live int) string {
	switch {
	case live > 0 && !s.PausedAt.IsZero() && s.CanceledAt.IsZero():
		return StatePaused
	case live > 0:
		return StateActive
	case !s.CanceledAt.IsZero():
		return StateCanceled
	}
	return StateFinished
}

// Live reports whether an attempt in the given progress may still produce a call.
func Live(progress string) bool { return progress == string(Pending) || progress == "calling" }

// Counters are a schedule's progress: its attempts counted by where they
// are. Pending attempts wait (for their due time, a retry, the calling
// hours, a cap or a resume); Dialing ones were handed to a dialer or have
// a live call; Completed counts the attempts whose last call ended, by its
// outcome (completed, busy, no-answer, voicemail, failed, canceled);
// Suppressed ones were not dialed because the number is on the do-not-call
// list; Canceled and Failed ones will never be dialed.
type Counters struct {
	Pending    int            `json:"pending"`
	Dialing    int            `json:"dialing"`
	Completed  map[string]int `json:"completed"`
	Suppressed int            `json:"suppressed"`
	Canceled   int            `json:"canceled"`
	Failed     int            `json:"failed"`
}

// Add counts n attempts in state; callEnded and outcome are their linked
// call's, leased says they are handed out and not yet dialed.
func (c *Counters) Add(state AttemptState, leased, callEnded bool, outcome string, n int) {
	if c.Completed == nil {
		c.Completed = map[string]int{}
	}
	switch {
	case state == Pending && leased:
		c.Dialing += n
	case state == Pending:
		c.Pending += n
	case state == Dialed && callEnded:
		c.Completed[outcome] += n
	case state == Dialed:
		c.Dialing += n
	case state == Canceled:
		c.Canceled += n
	case state == Failed:
		c.Failed += n
	case state == Suppressed:
		c.Suppressed += n
	}
}

// Count counts attempts as read at now.
func Count(as []Attempt, now time.Time) Counters {
	c := Counters{Completed: map[string]int{}}
	for _, a := range as {
		c.Add(a.State, a.LeasedUntil.After(now), a.CallStatus == int(call.Ended), a.CallOutcome, 1)
	}
	return c
}

// Caps are limits on live calls (0: none). An organization's setting can
// only lower the server's (Lower).
type Caps struct {
	// PerOrg caps the organization's live phone calls.
	PerOrg int `json:"maxConcurrentCalls"`
	// PerNumber caps the live phone calls of each of its numbers.
	PerNumber int `json:"maxConcurrentCallsPerNumber"`
}

// Lower is the stricter of two caps, field by field (0 is no cap).
func (c Caps) Lower(o Caps) Caps {
	low := func(a, b int) int {
		switch {
		case a == 0:
			return b
		case b == 0:
			return a
		}
		return min(a, b)
	}
	return Caps{PerOrg: low(c.PerOrg, o.PerOrg), PerNumber: low(c.PerNumber, o.PerNumber)}
}
