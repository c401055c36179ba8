// Package scheduling runs scheduled outbound calls. A schedule's attempts
// are rows in the database (the truth). A promoter on every node hands the
// attempts that have come due to the durable job queue (River) as dial
// jobs, unique per attempt; a dial job claims its attempt and creates the
// call in one transaction, so an attempt is dialed at most once, and an
// attempt is never forgotten: until its job is recorded as enqueued, the
// next promotion enqueues it again (a duplicate is refused by uniqueness).
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
	return sc, nil
}

// Promote enqueues a dial job for every attempt that has come due, in
// batches; it returns how many it enqueued. Promotion runs every fraction
// of a second (not River's scheduled jobs, whose scheduler wakes every 5 s),
// so an attempt is dialed well within a second of its due time.
func (s *Service) Promote(ctx context.Context) (int, error) {
	total := 0
	for {
		as, err := s.store.DueAttempts(ctx, s.now(), 1000)
		if err != nil || len(as) == 0 {
			return total, err
		}
		js := make([]jobs.Job, len(as))
		ids := make([]string, len(as))
		for i, a := range as {
			js[i] = jobs.Job{AttemptID: a.ID}
			ids[i] = a.ID
		}
		if err := s.queue.Enqueue(ctx, js); err != nil {
			return total, err
		}
		if err := s.store.MarkEnqueued(ctx, ids); err != nil {
			return total, err
		}
		total += len(as)
		if len(as) < 1000 {
			return total, nil
		}
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
