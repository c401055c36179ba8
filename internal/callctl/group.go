package callctl

import (
	"context"
	"errors"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/store"
)

// groupTimeout bounds the store calls of one group of early events.
const groupTimeout = 10 * time.Second

// The providers' early events (ringing, answered) are saved in groups
// (groupcommit): the changes that arrive while one group is being saved
// are read together (store.GetCallsAnyOrg) and saved in one transaction
// (store.UpdateCalls). A burst of dials causes a burst of ringing events,
// one per call; in groups they cost a few statements per group instead of
// a transaction per call.

// early is a provider's early event for the group.
type early struct {
	callID string
	ch     call.Change
}

// applied is an early event's outcome, as apply reports it.
type applied struct {
	c       call.Call
	applied bool
	err     error
}

// applyGrouped is apply, saved in a group with the changes that arrive
// meanwhile, for a change that does not end the call: an end goes through
// apply (the end of a scheduled call also decides its attempt's retry,
// store.EndAttemptCall, one call at a time).
func (s *Service) applyGrouped(callID string, ch call.Change) (call.Call, bool, error) {
	r := s.early.Do(early{callID: callID, ch: ch})
	return r.c, r.applied, r.err
}

// saveEarly applies one group's changes as apply would, the calls read
// and saved together; a change refused by a concurrent one (Conflict), or
// a call named twice, is applied again alone (apply reads it again).
func (s *Service) saveEarly(items []early) []applied {
	ctx, cancel := context.WithTimeout(context.Background(), groupTimeout)
	defer cancel()
	out := make([]applied, len(items))
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
				out[i] = applied{c: c}
			} else {
				out[i] = applied{c: c, err: err}
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
				out[i] = applied{c: u.Call, applied: true}
			case apperr.Is(errs[j], apperr.Conflict):
				alone = append(alone, i)
			default:
				out[i].err = errs[j]
			}
		}
	}
	for _, i := range alone {
		c, ok, err := s.apply(ctx, items[i].callID, items[i].ch)
		out[i] = applied{c: c, applied: ok, err: err}
	}
	return out
}
