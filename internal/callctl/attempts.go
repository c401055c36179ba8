package callctl

import (
	"context"
	"strconv"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
	"switchboard/internal/view"
)

// Schedule webhook events beyond schedule.attempt.completed, which is
// queued with the end of every try's call (Events).
const (
	// EventAttemptRetrying: a try ended so that the schedule's retry policy
	// sends the attempt back for another try (queued with the call's end).
	EventAttemptRetrying = "schedule.attempt.retrying"
	// EventSchedulePaused and EventScheduleResumed: POST
	// /v1/phone/schedules/{id}/pause and /resume changed the schedule.
	EventSchedulePaused  = "schedule.paused"
	EventScheduleResumed = "schedule.resumed"
	// EventScheduleCompleted: no attempt of the schedule is left pending
	// or with a live call (queued once, by the leader's sweep:
	// campaign.Service.Complete).
	EventScheduleCompleted = "schedule.completed"
)

// save stores a call whose status was prev. The end of a call placed by
// an attempt also decides the attempt's retry, written in the same
// transaction (store.EndAttemptCall): the call's end and its retry are
// never apart.
func (s *Service) save(ctx context.Context, c call.Call, prev call.Status) error {
	evs := s.events(c)
	if c.AttemptID == "" || c.Status != call.Ended || prev == call.Ended {
		return s.store.UpdateCall(ctx, c, prev, evs...)
	}
	end, err := s.attemptEnd(ctx, c)
	if err != nil {
		return err
	}
	return s.store.EndAttemptCall(ctx, c, prev, end, evs...)
}

// attemptEnd decides what the end of c does to its attempt: a retry when
// the schedule's policy retries the call's outcome (and endedReason, for a
// failure: schedule.RetryableFailure), due at the calling hours' next
// opening after the end plus the retry's AfterMinutes, in the contact's
// zone (else the schedule's).
func (s *Service) attemptEnd(ctx context.Context, c call.Call) (store.AttemptEnd, error) {
	a, sc, err := s.store.GetAttempt(ctx, c.AttemptID)
	if apperr.Is(err, apperr.NotFound) {
		return store.AttemptEnd{}, nil
	}
	if err != nil {
		return store.AttemptEnd{}, err
	}
	event := func(typ string, extra ...string) store.Event {
		b := []byte(`{"scheduleId":`)
		b = view.AppendString(b, sc.ID)
		for i := 0; i+1 < len(extra); i += 2 {
			b = append(b, ',')
			b = view.AppendString(b, extra[i])
			b = append(b, ':')
			b = append(b, extra[i+1]...)
		}
		b = append(b, `,"call":`...)
		b = view.NewCallAt(c, s.publicURL).AppendJSON(b)
		return store.Event{ID: id.New("evt"), Type: typ, At: c.UpdatedAt, Data: append(b, '}'), CallID: c.ID}
	}
	var end store.AttemptEnd
	if a.State != schedule.Dialed || a.CallID != c.ID {
		return end, nil // not the attempt's current try
	}
	requested, ok := sc.Retry.NextTry(a.Tries, string(c.Outcome), c.EndedReason, c.EndedAt)
	if !ok {
		return end, nil
	}
	tz := ""
	if ct, err := s.store.GetContact(ctx, c.OrgID, a.ContactID); err == nil {
		tz = ct.Timezone
	} else if !apperr.Is(err, apperr.NotFound) {
		return store.AttemptEnd{}, err
	}
	due := schedule.NextOpening(requested, schedule.Zone(tz, sc.Timezone), sc.Hours)
	str := func(v string) string { return string(view.AppendString(nil, v)) }
	tm := func(v view.Time) string { return string(v.AppendJSON(nil)) }
	end.Retry, end.RequestedAt, end.DueAt = true, requested, due
	end.Retrying = event(EventAttemptRetrying, "attemptId", str(a.ID), "try", strconv.Itoa(len(a.Tries)+2),
		"requestedAt", tm(view.Time(requested)), "dueAt", tm(view.Time(due)))
	return end, nil
}
