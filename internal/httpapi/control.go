package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/telephony"
)

// LiveCalls is live control of calls whose conversation runs on this
// node or, through cluster.Node (Config.Live), on the node that holds
// their line; the call runtime implements it for one node. The handlers have
// checked the body, that the call is the organization's and that it is
// in progress. Errors are apperr kinds (a call not live here: NotFound or
// Unavailable); Transfer's error wraps telephony.ErrTransferRefused when
// the far side refused, and the call goes on.
type LiveCalls interface {
	// End ends a call whose conversation runs on this node (completed,
	// api-ended-call) and returns once the end is recorded; ended is
	// false, and nothing done, when the call does not run here. Of the
	// ends of one call only the one whose end was recorded reports ended;
	// every other is a Conflict naming the recorded outcome and reason.
	End(ctx context.Context, orgID, callID string) (ended bool, err error)
	// Say makes the assistant speak text now; with interrupt, what it is
	// saying is cut first, else text follows it.
	Say(ctx context.Context, orgID, callID, text string, interrupt bool) error
	// Transfer hands the call to destination (E.164 or a sip:/sips: URI,
	// normalized) without staying on it, and returns once the far side
	// accepted; the call then ends assistant-transferred-call.
	Transfer(ctx context.Context, orgID, callID, destination string) error
}

// MaxSayText bounds POST /v1/calls/{id}/say's text, in characters.
const MaxSayText = 2000

// endCall hangs a live call up (callrun's End where its conversation
// runs, else callctl.EndByAPI). Exactly one end of a call answers 200:
// both decide by the one transition to ended, and an end that did not
// make it is a Conflict (409 "already ended").
func (s *Server) endCall(ctx context.Context, r *request) (response, error) {
	cid, err := pathID(r, "id", id.Call, "call")
	if err != nil {
		return response{}, err
	}
	if s.cfg.Live != nil {
		// A conversation this node runs ends itself, so that what it
		// gathered (its result) is recorded with the end.
		ended, err := s.cfg.Live.End(ctx, r.orgID, cid)
		if err != nil {
			return response{}, err
		}
		if ended {
			c, err := s.store.GetCall(ctx, r.orgID, cid)
			if err != nil {
				return response{}, err
			}
			return ok(http.StatusOK, "call ended", s.viewCall(c)), nil
		}
	}
	c, err := s.calls.EndByAPI(ctx, r.orgID, cid)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "call ended", s.viewCall(c)), nil
}

// liveCall reads the path's call for live control: 404 unknown, 409 when
// it has ended or is not answered yet, 503 without a call runtime.
func (s *Server) liveCall(ctx context.Context, r *request) (call.Call, error) {
	c, err := s.ownCall(ctx, r)
	if err != nil {
		return c, err
	}
	switch c.Status {
	case call.Ended:
		return c, apperr.Conflictf("call %s has ended (%s, %s)", c.ID, c.Outcome, c.EndedReason)
	case call.Queued, call.Ringing:
		return c, apperr.Conflictf("call %s is %s: it is not answered yet", c.ID, c.Status.Text())
	}
	if s.cfg.Live == nil {
		return c, apperr.New(apperr.Unavailable, "the call runtime is unavailable on this server")
	}
	return c, nil
}

func (s *Server) sayOnCall(ctx context.Context, r *request) (response, error) {
	if _, err := pathID(r, "id", id.Call, "call"); err != nil {
		return response{}, err
	}
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	text := o.Str("text", true)
	interrupt := o.Bool("interrupt")
	o.Done()
	switch {
	case o.Errs.Has("text"):
	case strings.TrimSpace(text) == "":
		o.Errs.Add("text", "must not be blank")
	case utf8.RuneCountInString(text) > MaxSayText:
		o.Errs.Add("text", "must be at most %d characters", MaxSayText)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	c, err := s.liveCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	if err := s.cfg.Live.Say(ctx, r.orgID, c.ID, text, interrupt); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "the assistant is saying it", s.viewCall(c)), nil
}

func (s *Server) transferCall(ctx context.Context, r *request) (response, error) {
	if _, err := pathID(r, "id", id.Call, "call"); err != nil {
		return response{}, err
	}
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	dest := o.Str("destination", true)
	o.Done()
	if !o.Errs.Has("destination") {
		d, err := phone.NormalizeDestination(dest)
		if err != nil {
			o.Errs.Add("destination", "%s", err.Error())
		}
		dest = d
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	c, err := s.liveCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	if err := s.cfg.Live.Transfer(ctx, r.orgID, c.ID, dest); err != nil {
		if errors.Is(err, telephony.ErrTransferRefused) {
			return response{}, &apperr.Error{Kind: apperr.Conflict, Code: "transfer_refused", Err: err,
				Message: "the far side refused the transfer to " + dest + "; the call goes on"}
		}
		return response{}, err
	}
	return ok(http.StatusOK, "call transferred to "+dest, s.viewCall(c)), nil
}
