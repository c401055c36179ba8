package store

import (
	"context"
	"time"

	"switchboard/internal/event"
	"switchboard/internal/schedule"
)

// Schedules is the scheduled campaigns (schedule.Schedule) and their state.
type Schedules interface {
	// CreateSchedule stores the schedule and all its attempts atomically;
	// NotFound when the purchase is not (or no longer) held.
	CreateSchedule(ctx context.Context, s schedule.Schedule, attempts []schedule.Attempt) error
	GetSchedule(ctx context.Context, orgID, id string) (schedule.Schedule, []schedule.Attempt, error)
	ListSchedules(ctx context.Context, orgID string, p Page) ([]ScheduleSummary, int, error)

	// CancelSchedule cancels the pending attempts (Canceled says how
	// many: CanceledAttempts) and marks the schedule canceled; a schedule with none pending
	// is left as it is (Changed false), unless a call of it is live: it is
	// then marked canceled all the same, so that the call's end does not
	// retry its attempt (EndAttemptCall).
	CancelSchedule(ctx context.Context, orgID, id string, at time.Time) (ScheduleChange, error)

	// DoneSchedules lists up to limit schedules, oldest first, not marked
	// completed whose attempts are all final: none pending, none with a
	// live call; each with its settings (as GetAttempt's, no dates nor
	// contacts) and its attempts counted as ListSchedules counts them.
	DoneSchedules(ctx context.Context, limit int) ([]ScheduleSummary, error)

	// CompleteSchedule marks one of the organization's schedules
	// completed at `at` and queues ev in the same transaction, if its
	// attempts are still all final and it was not marked yet; it reports
	// whether it marked it. A schedule is marked once.
	CompleteSchedule(ctx context.Context, orgID, id string, at time.Time, ev event.Event) (bool, error)

	// SetSchedulePaused pauses (paused) or resumes one of the
	// organization's schedules and reports whether that changed it; ev is
	// queued in the same transaction when it did. A schedule that is
	// canceled or finished (none of its attempts pending nor calling) is
	// over: it is left as it is (Changed false). A paused schedule's
	// attempts are not leased, and a claim (CreateCall) of one already
	// leased gives it back undialed.
	SetSchedulePaused(ctx context.Context, orgID, id string, paused bool, at time.Time, ev event.Event) (ScheduleChange, error)
}

// ScheduleSummary is a schedule with its attempts counted by progress
// (schedule.Progress: pending, calling, completed, canceled, failed), and
// its campaign progress counters.
type ScheduleSummary struct {
	schedule.Schedule
	Attempts map[string]int
	Progress schedule.Counters
}

// ScheduleChange is what a cancel, pause or resume did to a schedule,
// decided in the transaction that did it.
type ScheduleChange struct {
	// Changed is whether the request changed the schedule: false when it
	// was so already, or is over (canceled, or finished: none of its
	// attempts pending nor calling), and nothing was written.
	Changed bool
	// CanceledAttempts is how many pending attempts a cancel canceled.
	CanceledAttempts int
	// Paused and Canceled are whether the schedule is paused, canceled,
	// after the request.
	Paused, Canceled bool
	// State is the schedule's state after the request (schedule.State).
	State string
}
