// Package campaign runs campaigns: schedules of outbound calls to a
// number's contacts. Its Service creates a schedule and its attempts (each
// due at the first opening of the calling hours in its contact's zone),
// hands out the attempts that have come due under the caps (Promote: the
// promoter, on the leader node), dials the attempts a Dialer claimed
// (DialAttempts), gives up on those no node could dial, completes a
// schedule whose attempts are all final (Complete, in the leader's sweep),
// pauses, resumes and cancels schedules, and reads and sets an
// organization's caps. Dialer is every node's share of the dialing. The
// domain values it works with (calling hours, retry policy, states, caps)
// are package schedule's.
//
// A schedule's attempts are rows in the database (the truth). The promoter
// hands out an attempt with a lease on it (store.LeaseAttempts); a Dialer
// claims handed-out attempts with a hold of its own (store.ClaimDials) and
// dials each: the dial claims its attempt and creates the call in one
// transaction, so an attempt is dialed at most once. An attempt is never
// forgotten: a dialer that dies holding it leaves it to the others once its
// hold ends, and one not dialed by the time its hand-out ends is handed
// out again.
package campaign

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/callctl"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// Defaults of Config.
const (
	// DefaultDialLease is how long an attempt stays handed out (its lease)
	// before the promoter may hand it out again: far longer than the
	// dialers take to dial what is handed out (MaxLeased bounds it), and
	// longer than a dialer's hold (DefaultDialHold), so that a dialer that
	// died is replaced by another before the hand-out ends.
	DefaultDialLease = 30 * time.Second
	// DefaultMaxLeased bounds the attempts handed out and not yet dialed:
	// each promotion hands out only what keeps the count under it, so the
	// dialers hold what they drain in seconds and a hand-out ends undialed
	// only when no dialer could take it.
	DefaultMaxLeased = 4000
	// DefaultMaxLeases is how many times an attempt's try is handed out
	// before it is failed instead: a dial that fails every time is not
	// retried forever, and such attempts cannot hold the leased budget.
	// (Dialers so far behind that an attempt waits through 10 hand-outs,
	// 5 minutes, fail it too: that cluster needs more nodes.)
	DefaultMaxLeases = 10
)

// Config tunes dialing; zero fields take the defaults.
type Config struct {
	DialLease time.Duration
	MaxLeased int
	MaxLeases int
	// Caps are the server's caps on live phone calls per organization and
	// per number (--max-calls-per-org, --max-calls-per-number); 0 is none.
	// An organization's own setting can only lower them.
	Caps schedule.Caps
	// Now is the scheduler's clock (tests move it to reach calling hours);
	// nil is the real one.
	Now func() time.Time
}

// Store is what the scheduler reads and writes: the aggregates of the
// store it uses.
type Store interface {
	store.Schedules
	store.Attempts
	store.Contacts
	store.Purchases
	store.Orgs
}

// Service creates, reads, cancels and dials schedules.
type Service struct {
	store Store
	calls *callctl.Service
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
}

// DialHold is how long a dialer holds an attempt it claimed: a third of
// the hand-out (DialLease), so that the attempts of a dialer that died are
// dialed by the others within it.
func (s *Service) DialHold() time.Duration { return s.cfg.DialLease / 3 }

// New returns a Service.
func New(st Store, calls *callctl.Service, cfg Config, log *slog.Logger) *Service {
	cfg.DialLease = cmp.Or(cfg.DialLease, DefaultDialLease)
	cfg.MaxLeased = cmp.Or(cfg.MaxLeased, DefaultMaxLeased)
	cfg.MaxLeases = cmp.Or(cfg.MaxLeases, DefaultMaxLeases)
	now := cfg.Now
	if now == nil {
		now = id.Now
	}
	return &Service{store: st, calls: calls, cfg: cfg, log: log, now: now}
}

// Request is a validated schedule-call request.
type Request struct {
	OrgID      string
	Name       string
	PurchaseID string
	Message    string
	Timezone   string
	Dates      []time.Time
	ContactIDs []string
	// Campaign settings: nil Hours and Retry take the defaults
	// (schedule.DefaultHours, schedule.DefaultRetry); MaxConcurrentCalls 0
	// is no cap of the schedule's own.
	Hours              *schedule.CallingHours
	Retry              *schedule.RetryPolicy
	MaxConcurrentCalls int
}

// Create stores a schedule and its attempts (the promoter hands them out as they come due).
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
	zones, err := s.store.ContactZones(ctx, req.OrgID, req.PurchaseID, req.ContactIDs)
	if err != nil {
		return schedule.Schedule{}, err
	}
	if len(zones) < len(req.ContactIDs) {
		var f apperr.Fields
		missing := 0
		for i, cid := range req.ContactIDs {
			if _, ok := zones[cid]; !ok {
				f.Add(fmt.Sprintf("contacts_id[%d]", i), "contact %s not found on this number", cid)
				missing++
			}
		}
		return schedule.Schedule{}, &apperr.Error{Kind: apperr.NotFound, Message: fmt.Sprintf("%d contact(s) not found on phone %s", missing, req.PurchaseID), Fields: f}
	}
	now := s.now().UTC()
	sc := schedule.Schedule{
		ID: id.New(id.Schedule), OrgID: req.OrgID, Name: req.Name, PurchaseID: req.PurchaseID, Message: req.Message,
		Timezone: req.Timezone, Dates: req.Dates, ContactIDs: req.ContactIDs, CreatedAt: now,
		Hours: schedule.DefaultHours(), Retry: schedule.DefaultRetry(), MaxConcurrentCalls: req.MaxConcurrentCalls,
	}
	if req.Hours != nil {
		sc.Hours = *req.Hours
	}
	if req.Retry != nil {
		sc.Retry = *req.Retry
	}
	// Each attempt is due at the first opening of the calling hours at or
	// after its date, in its contact's zone (else the schedule's).
	locs := map[string]*time.Location{}
	attempts := make([]schedule.Attempt, 0, len(req.Dates)*len(req.ContactIDs))
	for _, d := range req.Dates {
		for _, cid := range req.ContactIDs {
			loc, ok := locs[zones[cid]]
			if !ok {
				loc = schedule.Zone(zones[cid], req.Timezone)
				locs[zones[cid]] = loc
			}
			due := schedule.NextOpening(d, loc, sc.Hours)
			attempts = append(attempts, schedule.Attempt{ID: id.New(id.Attempt), ContactID: cid, RequestedAt: d, DueAt: due, State: schedule.Pending})
		}
	}
	if err := s.store.CreateSchedule(ctx, sc, attempts); err != nil {
		return schedule.Schedule{}, err
	}
	return sc, nil
}

// Promote hands out the attempts that have come due (and those whose
// hand-out ended undialed), under every cap, keeping at most MaxLeased
// handed out and undialed; it returns how many it handed out. It runs on
// the leader every fraction of a second; the dialers of every node take
// what it hands out (ClaimDials).
func (s *Service) Promote(ctx context.Context) (int, error) {
	as, err := s.promote(ctx)
	return len(as), err
}

// promote is Promote, returning the attempts handed out.
func (s *Service) promote(ctx context.Context) ([]schedule.Attempt, error) {
	now := s.now()
	leased, err := s.store.LeasedAttempts(ctx, now)
	if err != nil {
		return nil, err
	}
	room := s.cfg.MaxLeased - leased
	if room <= 0 {
		return nil, nil
	}
	as, err := s.store.LeaseAttempts(ctx, now, s.cfg.DialLease, room, s.cfg.Caps)
	if err != nil || len(as) == 0 {
		return nil, err
	}
	out := as[:0]
	for _, a := range as {
		if a.Leases-a.LeaseBase > s.cfg.MaxLeases {
			s.giveUp(ctx, a)
			continue
		}
		if a.Leases-a.LeaseBase > 1 {
			s.log.Warn("handing an attempt out again: its hand-out ended with no call placed (no dialer could take it?)",
				"attempt_id", a.ID, "org_id", a.OrgID, "lease", a.Leases)
		}
		out = append(out, a)
	}
	return out, nil
}

// giveUp fails an attempt that was handed out MaxLeases times and never dialed.
func (s *Service) giveUp(ctx context.Context, a schedule.Attempt) {
	reason := fmt.Sprintf("not dialed after %d tries: no node could place the call", a.Leases-a.LeaseBase-1)
	err := s.store.FailAttempt(ctx, a.ID, reason, s.now())
	switch {
	case apperr.Is(err, apperr.NotFound):
		// Dialed or canceled meanwhile: nothing to give up.
	case err != nil:
		s.log.Error("failing an attempt that could not be dialed", "attempt_id", a.ID, "org_id", a.OrgID, "err", err)
	default:
		s.log.Error("gave up on a scheduled attempt", "attempt_id", a.ID, "org_id", a.OrgID, "reason", reason)
	}
}

// DialAttempts places the calls of attempts a Dialer claimed, as one
// batch (callctl.PlacePhoneCalls: one transaction stores them all). The
// claim in that transaction decides each: whichever dialer gets there
// first dials an attempt, and any other (a dialer thought dead that was
// only slow, one that took over from it) finds it dialed. An attempt
// whose contact was deleted, or whose number can no longer place calls,
// is failed; one the returned error covers stays pending: another dial
// tries it once the dialer's hold ends (while the hand-out lasts, else
// after the next).
func (s *Service) DialAttempts(ctx context.Context, ds []store.Dial) error {
	fail := func(a store.Dial, reason string) error {
		err := s.store.FailAttempt(ctx, a.ID, reason, s.now())
		if apperr.Is(err, apperr.NotFound) {
			return nil // no longer pending: someone else decided
		}
		return err
	}
	var errs []error
	var reqs []callctl.PhoneCall
	var dialing []store.Dial
	for _, d := range ds {
		if d.To == "" {
			errs = append(errs, fail(d, "contact was deleted before the call was due"))
			continue
		}
		var ct *phone.Contact
		if d.Contact.ID != "" {
			ct = &d.Contact
		}
		reqs = append(reqs, callctl.PhoneCall{OrgID: d.OrgID, PurchaseID: d.PurchaseID, To: d.To, AttemptID: d.ID,
			Contact: ct, Message: d.Message, Timezone: d.Timezone})
		dialing = append(dialing, d)
	}
	for i, r := range s.calls.PlacePhoneCalls(ctx, reqs) {
		d := dialing[i]
		switch err := r.Err; {
		case err == nil:
		case phone.IsSuppressed(err):
			// On the do-not-call list: the claim ended the attempt
			// suppressed; final, neither retried nor failed.
			s.log.Info("scheduled call suppressed: the number is on the do-not-call list", "attempt_id", d.ID, "org_id", d.OrgID)
		case apperr.Is(err, apperr.Conflict):
			// The attempt was claimed or canceled meanwhile.
		case apperr.Is(err, apperr.NotFound), apperr.Is(err, apperr.Invalid):
			errs = append(errs, fail(d, err.Error()))
		default:
			errs = append(errs, fmt.Errorf("attempt %s: %w", d.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Complete marks the schedules whose attempts have all become final (none
// pending, none with a live call: ended, failed, canceled or suppressed)
// completed, and queues schedule.completed for each, once, with its
// progress; it returns how many it marked. It runs in the leader's sweep:
// one place decides completion, so the end of a scheduled call never waits
// for the ends of its schedule's other calls to decide it.
func (s *Service) Complete(ctx context.Context) (int, error) {
	done, err := s.store.DoneSchedules(ctx, 100)
	if err != nil {
		return 0, err
	}
	marked := 0
	for _, sc := range done {
		// Final attempts stay final (no call of them is live to retry
		// one), so the progress read with them is the one marked.
		now := s.now().UTC()
		ok, err := s.store.CompleteSchedule(ctx, sc.OrgID, sc.ID, now, event.NewScheduleCompleted(sc.ID, now, sc.Progress))
		if err != nil {
			return marked, err
		}
		if ok {
			marked++
		}
	}
	return marked, nil
}

// Cancel cancels a schedule's pending attempts and marks it canceled;
// a schedule that is over (finished, or canceled already) is left as it
// is (store.CancelSchedule).
func (s *Service) Cancel(ctx context.Context, orgID, scheduleID string) (store.ScheduleChange, error) {
	return s.store.CancelSchedule(ctx, orgID, scheduleID, s.now())
}

// Pause stops handing out a schedule's attempts (an attempt already
// handed out is given back by its dial's claim); Resume hands them out
// again, each at once if due (inside its calling hours). Each reports
// whether it changed the schedule (not when it was so already, nor when
// the schedule is over: canceled or finished) and its state after, and
// queues schedule.paused or schedule.resumed in the same transaction
// when it did.
func (s *Service) Pause(ctx context.Context, orgID, scheduleID string) (store.ScheduleChange, error) {
	return s.setPaused(ctx, orgID, scheduleID, true)
}

// Resume undoes Pause.
func (s *Service) Resume(ctx context.Context, orgID, scheduleID string) (store.ScheduleChange, error) {
	return s.setPaused(ctx, orgID, scheduleID, false)
}

func (s *Service) setPaused(ctx context.Context, orgID, scheduleID string, paused bool) (store.ScheduleChange, error) {
	now := s.now().UTC()
	ev := event.NewScheduleResumed(scheduleID, now)
	if paused {
		ev = event.NewSchedulePaused(scheduleID, now)
	}
	return s.store.SetSchedulePaused(ctx, orgID, scheduleID, paused, now, ev)
}

// Caps are the caps on an organization's live calls: the server's,
// lowered by the organization's own (own).
func (s *Service) Caps(ctx context.Context, orgID string) (server, own, effective schedule.Caps, err error) {
	own, err = s.store.GetOrgCaps(ctx, orgID)
	return s.cfg.Caps, own, s.cfg.Caps.Lower(own), err
}

// SetCaps stores an organization's own caps.
func (s *Service) SetCaps(ctx context.Context, orgID string, own schedule.Caps) error {
	return s.store.SetOrgCaps(ctx, orgID, own)
}
