package callctl

import (
	"context"
	"fmt"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/phone"
	"switchboard/internal/telephony"
)

// Live call control asked through the API (POST /v1/calls/{id}/end), and
// the trunk of a SIP connection as a provider needs it.

// EndByAPI ends a live call of the organization because the API asked: a
// call not answered yet (queued, ringing) ends canceled, an answered one
// completed, both with endedReason api-ended-call; a phone call is then
// hung up at its provider (a SIP CANCEL before the answer, BYE after), and
// the listener stops its conversation. The outcome is decided by the status the
// call has when the end is recorded: a call answered meanwhile ends
// completed. Another organization's call is NotFound; a call that has
// ended already, by the time the end would be recorded, is a Conflict.
//
// As with End, when the end cannot be recorded (the database failed) a
// phone call is hung up all the same and its provider's Ended event
// records api-ended-call; the error is returned.
func (s *Service) EndByAPI(ctx context.Context, orgID, callID string) (call.Call, error) {
	for range 5 {
		c, err := s.store.GetCall(ctx, orgID, callID)
		if err != nil {
			return c, err
		}
		if c.Status == call.Ended {
			return c, apperr.Conflictf("call %s has already ended (%s, %s)", c.ID, c.Outcome, c.EndedReason)
		}
		prev := c.Status
		outcome := call.Canceled
		if prev == call.InProgress {
			outcome = call.Completed
		}
		if err := c.Transition(call.Change{To: call.Ended, At: s.now(), Outcome: outcome, Reason: call.ReasonAPIEnded}); err != nil {
			return c, err
		}
		err = s.save(ctx, c, prev)
		if apperr.Is(err, apperr.Conflict) {
			continue // it changed since it was read: decide again
		}
		if err == nil {
			s.after(c)
		}
		s.hangUpProvider(ctx, c, hangup{outcome: outcome, reason: call.ReasonAPIEnded, result: c.Result, asked: s.now()})
		return c, err
	}
	return call.Call{}, apperr.Conflictf("call %s keeps changing; try again", callID)
}

// hangUpProvider hangs a phone call up at its provider, even when ctx is
// done (within hangupTimeout), after recording h for the provider's Ended
// event (see hangup). Web calls have no provider.
func (s *Service) hangUpProvider(ctx context.Context, c call.Call, h hangup) {
	if c.Type != call.Phone {
		return
	}
	prov, ok := s.providers[c.Provider]
	if !ok {
		return
	}
	s.askHangup(c.ID, h)
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hangupTimeout)
	defer cancel()
	if err := prov.Hangup(hctx, c.ID); err != nil {
		s.takeHangup(c.ID) // no Ended event is promised
		s.log.Warn("provider hang-up failed", "call_id", c.ID, "err", err)
	}
}

// Opener opens a value sealed for a context (internal/secret's Sealer).
type Opener interface {
	Open(sealed, aad []byte) ([]byte, error)
}

// TrunkOf is the trunk of a SIP connection as a provider dials through it,
// with its password unsealed (the connection's id is the sealing context).
// The result holds the plain password: give it to the provider, never to
// a log (Trunk.String leaves it out).
func TrunkOf(c phone.Connection, secrets Opener) (telephony.Trunk, error) {
	if c.Provider == phone.ProviderTwilio {
		// The Twilio provider opens the account itself, by the id.
		return telephony.Trunk{ConnectionID: c.ID}, nil
	}
	t := telephony.Trunk{ConnectionID: c.ID, Address: c.SIP.Address, Transport: c.SIP.Transport, Username: c.SIP.Username}
	if !c.SIP.HasPassword() {
		return t, nil
	}
	if secrets == nil {
		return telephony.Trunk{}, apperr.New(apperr.Unavailable, "the server has no secret key to open connection %s's password", c.ID)
	}
	plain, err := secrets.Open(c.SIP.SealedPassword, []byte(c.ID))
	if err != nil {
		return telephony.Trunk{}, apperr.Wrap(apperr.Unavailable, fmt.Errorf("connection %s: %w", c.ID, err),
			"the password of connection %s does not open with this server's secret key (was the key changed?)", c.ID)
	}
	t.Password = string(plain)
	return t, nil
}
