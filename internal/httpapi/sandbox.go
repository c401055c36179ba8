package httpapi

import (
	"context"
	"errors"
	"net/http"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
	"switchboard/internal/telephony"
)

// sandboxCallInView is a simulated inbound call that was not answered:
// what the caller heard.
type sandboxCallInView struct {
	Answered    bool   `json:"answered"`
	Heard       string `json:"heard"` // "busy" or "forwarded"
	ForwardedTo string `json:"forwardedTo,omitempty"`
}

// sandboxCallIn has a sandbox persona call one of the organization's
// sandbox numbers (docs/api.md, "Calling in"): decided as any inbound call
// is (the number's inbound assistant, the organization's routing). An
// answered call is 201 with the call; a call the routing refused is 200
// with what the caller heard.
func (s *Server) sandboxCallIn(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	from, to := o.Str("from", true), o.Str("to", true)
	o.Done()
	for field, v := range map[string]*string{"from": &from, "to": &to} {
		if *v == "" {
			continue
		}
		n, err := phone.NormalizeE164(*v)
		if err != nil {
			o.Errs.Add(field, "%s", err.Error())
		}
		*v = n
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	if s.cfg.Sandbox == nil {
		return response{}, apperr.New(apperr.Unavailable, "this server's sandbox network takes no inbound calls (it runs no conversations)")
	}
	callID, err := s.cfg.Sandbox.CallIn(ctx, r.orgID, from, to)
	var fwd *telephony.Forward
	switch {
	case err == nil:
		c, err := s.store.GetCall(ctx, r.orgID, callID)
		if err != nil {
			return response{}, err
		}
		resp := ok(http.StatusCreated, "the sandbox caller is calling in", s.viewCall(c))
		resp.body.CallID = c.ID
		return resp, nil
	case errors.Is(err, telephony.ErrBusy):
		return ok(http.StatusOK, "not answered: your routing endpoint said busy", sandboxCallInView{Heard: "busy"}), nil
	case errors.As(err, &fwd):
		return ok(http.StatusOK, "not answered: your routing endpoint forwarded the call", sandboxCallInView{Heard: "forwarded", ForwardedTo: fwd.To}), nil
	case errors.Is(err, telephony.ErrUnknownNumber):
		return response{}, apperr.Invalidf("to", "%s is not one of your sandbox numbers (POST /v1/phone/purchases with provider sandbox)", to)
	case errors.Is(err, telephony.ErrNoInboundAgent):
		return response{}, apperr.Invalidf("to", "%s has no inbound assistant: allocate one (POST /v1/phone/allocate-assistant inboundAssistantId)", to)
	case errors.Is(err, telephony.ErrUnavailable):
		return response{}, apperr.Wrap(apperr.Unavailable, err, "the sandbox network takes no calls now")
	}
	return response{}, err
}
