package callctl

import (
	"context"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/event"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
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
	end.Retry, end.RequestedAt, end.DueAt = true, requested, due
	end.Retrying = event.NewAttemptRetrying(c, s.publicURL, event.Retry{ScheduleID: sc.ID, AttemptID: a.ID, Try: len(a.Tries) + 2,
		RequestedAt: requested, DueAt: due})
	return end, nil
}
