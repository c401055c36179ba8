package httpapi

import (
	"context"
	"net/http"

	"switchboard/internal/numbers"
	"switchboard/internal/phone"
)

// TwilioAccounts is what is done in an organization's own Twilio account
// (numbers.TwilioAccounts; internal/twilio implements it).
type TwilioAccounts = numbers.TwilioAccounts

// twilioView is a Twilio connection as shown: the Account SID, never the
// auth token, only whether there is one.
type twilioView struct {
	AccountSID   string `json:"accountSid"`
	HasAuthToken bool   `json:"hasAuthToken"`
}

// listTwilioNumbers lists the local numbers for sale in the
// organization's Twilio account.
func (s *Server) listTwilioNumbers(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "provider", "country", "areaCode", "contains", "connectionId")
	search := phone.ParseNumberSearch(q.v.Get("country"), q.v.Get("areaCode"), q.v.Get("contains"), &q.errs)
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	out, err := s.numbers.Search(ctx, r.orgID, q.v.Get("connectionId"), search)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "available numbers", out), nil
}
