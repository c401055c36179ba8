package callctl

import (
	"context"
	"encoding/json"

	"switchboard/internal/call"
	"switchboard/internal/phone"
	"switchboard/internal/vars"
)

// variables makes a new call's variables (docs/ARCHITECTURE.md, "Per-call
// variables"): the call's own values, its contact's, the seed's message,
// the zone, and the request's variables.
func variables(c call.Call, ct *phone.Contact, message, scheduleZone string, req vars.Values) json.RawMessage {
	in := vars.Call{
		ID: c.ID, Type: string(c.Type), Direction: string(c.Direction), From: c.From, To: c.To,
		Message: message, ScheduleTimezone: scheduleZone, Request: req,
	}
	if ct != nil && ct.ID != "" {
		in.Contact = &vars.Contact{ID: ct.ID, Name: ct.Name, PhoneNumber: ct.PhoneNumber, Timezone: ct.Timezone, Metadata: ct.Metadata}
	}
	s := vars.ForCall(in).JSON()
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// contactByNumber is the purchase's contact with number, nil when it has
// none (or the lookup failed: a call is never refused for its variables).
func (s *Service) contactByNumber(ctx context.Context, orgID, purchaseID, number string) *phone.Contact {
	ct, err := s.store.ContactByNumber(ctx, orgID, purchaseID, number)
	if err != nil {
		return nil
	}
	return &ct
}
