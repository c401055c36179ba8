package callctl

import (
	"context"
	"errors"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/store"
)

// maxGroup is the most provider events one group applies.
const maxGroup = 200

// groupTimeout bounds the store calls of one group.
const groupTimeout = 10 * time.Second

// group applies providers' early events (ringing, answered) in groups, a
// group commit: the changes that arrive while one group is being saved
// wait, and the next group saves them together (one read, one transaction:
// store.GetCallsAnyOrg, store.UpdateCalls). A burst of dials causes a
// burst of ringing events, one per call; in groups they cost a few
// statements per group instead of a transaction per call. A lone event is
// saved at once, as a group of one.
//
// There is no goroutine of its own: the caller whose event finds no group
// under way leads, saves one group (its own event and those queued before
// it, at most maxGroup), then hands the lead to the first event still
// queued, whose caller saves the next. Every caller waits for its own
// event's result, so the queue holds at most one event per caller.
type group struct {
	mu      sync.Mutex
	queue   []*groupItem
	leading bool
}

type groupItem struct {
	callID string
	ch     call.Change
	// done receives the item's result, or the lead (lead set): its
	// caller saves the next group, its own item first. Buffered: a
	// group's leader never waits on another caller.
	done chan groupResult
}

type groupResult struct {
	c       call.Call
	applied bool
	err     error
	lead    bool
}

// applyGrouped is apply, saved in a group with the changes that arrive
// meanwhile, for a change that does not end the call: an end goes through
// apply (the end of a scheduled call also decides its attempt's retry,
// store.EndAttemptCall, one call at a time).
func (s *Service) applyGrouped(callID string, ch call.Change) (call.Call, bool, error) {
	it := &groupItem{callID: callID, ch: ch, done: make(chan groupResult, 1)}
	s.group.mu.Lock()
	s.group.queue = append(s.group.queue, it)
	lead := !s.group.leading
	s.group.leading = true
	s.group.mu.Unlock()
	for {
		if lead {
			s.saveGroup()
		}
		r := <-it.done
		if !r.lead {
			return r.c, r.applied, r.err
		}
		lead = true
	}
}

// saveGroup takes the queued changes (up to maxGroup), saves them, sends
// each its result and hands the lead on.
func (s *Service) saveGroup() {
	s.group.mu.Lock()
	n := min(len(s.group.queue), maxGroup)
	items := make([]*groupItem, n)
	copy(items, s.group.queue)
	s.group.queue = append(s.group.queue[:0], s.group.queue[n:]...)
	s.group.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	results := s.applyAll(ctx, items)
	cancel()
	for i, it := range items {
		it.done <- results[i]
	}

	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	if len(s.group.queue) == 0 {
		s.group.leading = false
		return
	}
	s.group.queue[0].done <- groupResult{lead: true}
}

// applyAll applies the items' changes as apply would, the calls read and
// saved together; a change refused by a concurrent one (Conflict), or a
// call named twice, is applied again alone (apply reads it again).
func (s *Service) applyAll(ctx context.Context, items []*groupItem) []groupResult {
	out := make([]groupResult, len(items))
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.callID
	}
	cs, err := s.store.GetCallsAnyOrg(ctx, ids)
	if err != nil {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	byID := make(map[string]call.Call, len(cs))
	for _, c := range cs {
		byID[c.ID] = c
	}
	var (
		us    []store.CallUpdate
		at    []int // us[j] is items[at[j]]'s
		alone []int
		seen  = make(map[string]bool, len(items))
	)
	for i, it := range items {
		c, ok := byID[it.callID]
		switch {
		case !ok:
			out[i].err = apperr.NotFoundf("call %s not found", it.callID)
			continue
		case seen[it.callID]:
			alone = append(alone, i)
			continue
		}
		seen[it.callID] = true
		prev := c.Status
		if err := c.Transition(it.ch); err != nil {
			var te *call.ErrTransition
			if errors.As(err, &te) {
				s.log.Debug("transition skipped", "call_id", it.callID, "from", te.From.Text(), "to", te.To.Text())
				out[i] = groupResult{c: c}
			} else {
				out[i] = groupResult{c: c, err: err}
			}
			continue
		}
		us = append(us, store.CallUpdate{Call: c, Prev: prev, Events: s.events(c)})
		at = append(at, i)
	}
	if len(us) > 0 {
		errs, err := s.store.UpdateCalls(ctx, us)
		for j, u := range us {
			i := at[j]
			switch {
			case err != nil:
				out[i].err = err
			case errs[j] == nil:
				s.after(u.Call)
				out[i] = groupResult{c: u.Call, applied: true}
			case apperr.Is(errs[j], apperr.Conflict):
				alone = append(alone, i)
			default:
				out[i].err = errs[j]
			}
		}
	}
	for _, i := range alone {
		c, applied, err := s.apply(ctx, items[i].callID, items[i].ch)
		out[i] = groupResult{c: c, applied: applied, err: err}
	}
	return out
}
