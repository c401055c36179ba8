// Package scheduling runs scheduled outbound calls. A schedule's attempts
// are rows in the database (the truth); each has a durable dial job in the
// queue that fires at its due time. The job claims the attempt and creates
// its call in one transaction, so an attempt is dialed at most once; a
// periodic sweep enqueues attempts whose job was lost between commit and
// enqueue, so none is forgotten.
package scheduling

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/jobs"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// Enqueuer puts dial jobs in the durable queue.
type Enqueuer interface {
	Enqueue(ctx context.Context, js []jobs.Job) error
}

// Service creates, reads, cancels and dials schedules.
type Service struct {
	store store.Store
	calls *callctl.Service
	queue Enqueuer
	log   *slog.Logger
	now   func() time.Time
}

// New returns a Service; SetQueue must be called before Create.
func New(st store.Store, calls *callctl.Service, log *slog.Logger) *Service {
	return &Service{store: st, calls: calls, log: log, now: id.Now}
}

// SetQueue sets where dial jobs go (the queue needs the service to exist first).
func (s *Service) SetQueue(q Enqueuer) { s.queue = q }

// Request is a validated schedule-call request.
type Request struct {
	OrgID      string
	Name       string
	PurchaseID string
	Message    string
	Timezone   string
	Dates      []time.Time
	ContactIDs []string
}

// Create stores a schedule and its attempts and enqueues their dial jobs.
func (s *Service) Create(ctx context.Context, req Request) (schedule.Schedule, error) {
	p, err := s.store.GetPurchase(ctx, req.OrgID, req.PurchaseID)
	if err != nil {
		return schedule.Schedule{}, err
	}
	if err := callctl.CanPlace(p, ""); err != nil {
		var f apperr.Fields
		f.Add("phone_id", "number %s has no outbound assistant allocated; allocate one with POST /v1/phone/allocate-assistant", p.Number)
		return schedule.Schedule{}, f.Err()
	}
	missing, err := s.store.MissingContacts(ctx, req.OrgID, req.PurchaseID, req.ContactIDs)
	if err != nil {
		return schedule.Schedule{}, err
	}
	if len(missing) > 0 {
		var f apperr.Fields
		for i, cid := range req.ContactIDs {
			if slices.Contains(missing, cid) {
				f.Add(fmt.Sprintf("contacts_id[%d]", i), "contact %s not found on this number", cid)
			}
		}
		return schedule.Schedule{}, &apperr.Error{Kind: apperr.NotFound, Message: fmt.Sprintf("%d contact(s) not found on phone %s", len(missing), req.PurchaseID), Fields: f}
	}
	now := s.now().UTC()
	sc := schedule.Schedule{
		ID: id.New(id.Schedule), OrgID: req.OrgID, Name: req.Name, PurchaseID: req.PurchaseID, Message: req.Message,
		Timezone: req.Timezone, Dates: req.Dates, ContactIDs: req.ContactIDs, CreatedAt: now,
	}
	attempts := make([]schedule.Attempt, 0, len(req.Dates)*len(req.ContactIDs))
	for _, d := range req.Dates {
		for _, cid := range req.ContactIDs {
			attempts = append(attempts, schedule.Attempt{ID: id.New(id.Attempt), ContactID: cid, DueAt: d, State: schedule.Pending})
		}
	}
	if err := s.store.CreateSchedule(ctx, sc, attempts); err != nil {
		return schedule.Schedule{}, err
	}
	// Enqueue after commit; if this fails or the process dies here, the
	// housekeeping sweep enqueues the attempts later (they are pending and
	// not marked enqueued). The request still succeeds: the schedule is stored.
	if err := s.enqueue(context.WithoutCancel(ctx), attempts); err != nil {
		s.log.Warn("enqueue after schedule create failed; the sweep will retry", "schedule_id", sc.ID, "err", err)
	}
	return sc, nil
}

func (s *Service) enqueue(ctx context.Context, attempts []schedule.Attempt) error {
	js := make([]jobs.Job, len(attempts))
	ids := make([]string, len(attempts))
	for i, a := range attempts {
		js[i] = jobs.Job{AttemptID: a.ID, DueAt: a.DueAt}
		ids[i] = a.ID
	}
	if err := s.queue.Enqueue(ctx, js); err != nil {
		return err
	}
	return s.store.MarkEnqueued(ctx, ids)
}

// Sweep enqueues pending attempts whose job never made it to the queue.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	total := 0
	for {
		as, err := s.store.UnqueuedAttempts(ctx, s.now().Add(-30*time.Second), 1000)
		if err != nil || len(as) == 0 {
			return total, err
		}
		if err := s.enqueue(ctx, as); err != nil {
			return total, err
		}
		total += len(as)
	}
}

// DialAttempt places the call of one attempt, if it is still pending. It is
// the dial job's work: a returned error makes the queue retry it.
func (s *Service) DialAttempt(ctx context.Context, attemptID string) error {
	a, sc, err := s.store.GetAttempt(ctx, attemptID)
	if apperr.Is(err, apperr.NotFound) {
		return nil // schedule or attempt gone: nothing to dial
	}
	if err != nil {
		return err
	}
	if a.State != schedule.Pending {
		return nil
	}
	fail := func(reason string) error {
		err := s.store.FailAttempt(ctx, a.ID, reason, s.now())
		if apperr.Is(err, apperr.NotFound) {
			return nil // no longer pending: someone else decided
		}
		return err
	}
	contact, err := s.store.GetContact(ctx, sc.OrgID, a.ContactID)
	if apperr.Is(err, apperr.NotFound) {
		return fail("contact was deleted before the call was due")
	}
	if err != nil {
		return err
	}
	_, err = s.calls.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: sc.OrgID, PurchaseID: sc.PurchaseID, To: contact.PhoneNumber, AttemptID: a.ID})
	switch {
	case err == nil:
		return nil
	case apperr.Is(err, apperr.Conflict):
		return nil // the attempt was claimed or canceled meanwhile
	case apperr.Is(err, apperr.NotFound), apperr.Is(err, apperr.Invalid):
		return fail(err.Error())
	}
	return err
}

// Cancel cancels a schedule's pending attempts.
func (s *Service) Cancel(ctx context.Context, orgID, scheduleID string) (int, error) {
	return s.store.CancelSchedule(ctx, orgID, scheduleID, s.now())
}
