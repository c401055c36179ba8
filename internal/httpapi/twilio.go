package httpapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
)

// TwilioAccounts is what the API does in an organization's own Twilio
// account (internal/twilio implements it). Errors are apperr errors that
// name the request field to blame (twilio.authToken, number) or the
// cause (Unavailable when Twilio failed or could not be reached).
type TwilioAccounts interface {
	// Check asks Twilio whether sid and token are an account's credentials.
	Check(ctx context.Context, sid, token string) error
	// Search lists local voice numbers for sale.
	Search(ctx context.Context, conn phone.Connection, q phone.NumberSearch) ([]telephony.Number, error)
	// Buy buys number into the account with its voice URL and status
	// callback pointing at this server (for conn).
	Buy(ctx context.Context, conn phone.Connection, number string) error
	// Import points a number the account already has at this server.
	Import(ctx context.Context, conn phone.Connection, number string) error
	// Release releases a bought number at Twilio; an imported one stays
	// in the account with its voice URL cleared.
	Release(ctx context.Context, conn phone.Connection, number string, imported bool) error
}

// twilioView is a Twilio connection as shown: the Account SID, never the
// auth token, only whether there is one.
type twilioView struct {
	AccountSID   string `json:"accountSid"`
	HasAuthToken bool   `json:"hasAuthToken"`
}

// twilioConnection checks a Twilio connection's fields and then its
// credentials with Twilio (a wrong token is a 400 on twilio.authToken),
// and seals the token for the new connection's id.
func (s *Server) twilioConnection(ctx context.Context, c *phone.Connection, token string, errs *apperr.Fields) error {
	c.CheckTwilio(token, errs)
	if err := firstPerField(*errs).Err(); err != nil {
		return err
	}
	if s.cfg.Twilio == nil {
		return apperr.New(apperr.Unavailable, "Twilio is not configured on this server")
	}
	if s.cfg.Secrets == nil {
		return apperr.New(apperr.Unavailable, "this server has no secret key to keep the auth token with; see --secret-key-file")
	}
	if err := s.cfg.Twilio.Check(ctx, c.Twilio.AccountSID, token); err != nil {
		return err
	}
	c.ID = id.New(id.Connection)
	c.Twilio.SealedAuthToken = s.cfg.Secrets.Seal([]byte(token), []byte(c.ID))
	return nil
}

// twilioConnectionOf picks the organization's Twilio connection a numbers
// request means: connectionId when given, else its only one.
func (s *Server) twilioConnectionOf(ctx context.Context, orgID, connID, field string) (phone.Connection, error) {
	if connID != "" {
		if !id.Valid(id.Connection, connID) {
			return phone.Connection{}, apperr.Invalidf(field, "%q is not a connection id (conn_…)", connID)
		}
		c, err := s.store.GetConnection(ctx, orgID, connID)
		if apperr.Is(err, apperr.NotFound) {
			return c, apperr.Invalidf(field, "connection %s not found", connID)
		}
		if err == nil && c.Provider != phone.ProviderTwilio {
			return c, apperr.Invalidf(field, "connection %s is a %s connection, not twilio", connID, c.Provider)
		}
		return c, err
	}
	var found []phone.Connection
	for pg := (store.Page{Page: 1, PageSize: 100}); ; pg.Page++ {
		list, total, err := s.store.ListConnections(ctx, orgID, pg)
		if err != nil {
			return phone.Connection{}, err
		}
		for _, c := range list {
			if c.Provider == phone.ProviderTwilio {
				found = append(found, c)
			}
		}
		if pg.Page*pg.PageSize >= total || len(list) == 0 {
			break
		}
	}
	switch len(found) {
	case 0:
		return phone.Connection{}, apperr.Invalidf("provider", "this organization has no Twilio connection; create one with POST /v1/phone/connections {\"provider\": \"twilio\", …}")
	case 1:
		return found[0], nil
	}
	return phone.Connection{}, apperr.Invalidf(field, "this organization has %d Twilio connections: name one with connectionId", len(found))
}

var twilioContains = regexp.MustCompile(`^[0-9A-Za-z*]{1,16}$`)

// listTwilioNumbers lists the local numbers for sale in the
// organization's Twilio account.
func (s *Server) listTwilioNumbers(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "provider", "country", "areaCode", "contains", "connectionId")
	search := phone.NumberSearch{Country: strings.ToUpper(q.v.Get("country")), Contains: q.v.Get("contains")}
	if search.Country == "" {
		search.Country = "US"
	} else if len(search.Country) != 2 || strings.Trim(search.Country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		q.errs.Add("country", "must be an ISO 3166-1 alpha-2 country code, e.g. US")
	}
	if a := q.v.Get("areaCode"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 200 || n > 999 {
			q.errs.Add("areaCode", "must be a 3-digit area code, e.g. 415")
		}
		search.AreaCode = n
	}
	if search.Contains != "" && !twilioContains.MatchString(search.Contains) {
		q.errs.Add("contains", "must be 1 to 16 digits, letters or * (any one digit), e.g. 555 or 415***1234")
	}
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	conn, err := s.twilioConnectionOf(ctx, r.orgID, q.v.Get("connectionId"), "connectionId")
	if err != nil {
		return response{}, err
	}
	nums, err := s.cfg.Twilio.Search(ctx, conn, search)
	if err != nil {
		return response{}, err
	}
	out := make([]numberView, 0, len(nums))
	for _, n := range nums {
		n.Provider = phone.ProviderTwilio
		out = append(out, numberView{Number: n, ConnectionID: conn.ID})
	}
	return ok(http.StatusOK, "available numbers", out), nil
}

// purchaseTwilio buys number into the organization's Twilio account (or,
// with import, takes one it already has) and points it at this server; the
// purchase remembers the connection. A bought number whose purchase cannot
// be stored is released at Twilio again.
func (s *Server) purchaseTwilio(ctx context.Context, orgID, number, connID string, imported bool) (response, error) {
	if s.cfg.Twilio == nil {
		return response{}, apperr.New(apperr.Unavailable, "Twilio is not configured on this server")
	}
	conn, err := s.twilioConnectionOf(ctx, orgID, connID, "connectionId")
	if err != nil {
		return response{}, err
	}
	if imported {
		err = s.cfg.Twilio.Import(ctx, conn, number)
	} else {
		err = s.cfg.Twilio.Buy(ctx, conn, number)
	}
	if err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: number, Provider: phone.ProviderTwilio, ConnectionID: conn.ID,
		Imported: imported, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreatePurchase(ctx, p); err != nil {
		if rerr := s.cfg.Twilio.Release(context.WithoutCancel(ctx), conn, number, imported); rerr != nil {
			s.log.Error("a Twilio number whose purchase could not be stored was not released at Twilio", "number", number,
				"connection_id", conn.ID, "err", rerr)
		}
		if apperr.Is(err, apperr.NotFound) { // the connection was deleted meanwhile
			return response{}, apperr.Invalidf("connectionId", "connection %s was deleted", conn.ID)
		}
		return response{}, err
	}
	msg := "number purchased"
	if imported {
		msg = "number imported"
	}
	return ok(http.StatusCreated, msg, viewPurchase(p)), nil
}

// releaseTwilio releases a purchase's number at Twilio once it is released
// here. It reports what to tell the caller when Twilio could not: the
// number is released here either way.
func (s *Server) releaseTwilio(ctx context.Context, p phone.Purchase) string {
	if s.cfg.Twilio == nil {
		return "number released here; Twilio is not configured on this server, so release it in your Twilio account"
	}
	conn, err := s.store.GetConnection(ctx, p.OrgID, p.ConnectionID)
	if err == nil {
		err = s.cfg.Twilio.Release(ctx, conn, p.Number, p.Imported)
	}
	if err != nil {
		s.log.Warn("releasing a number at Twilio failed; it is released here", "number", p.Number, "connection_id", p.ConnectionID, "err", err)
		return "number released here, but Twilio could not release it (" + safeMessage(err) + "); release it in your Twilio account"
	}
	if p.Imported {
		return "number released; it stays in your Twilio account, no longer pointed at this server"
	}
	return "number released; Twilio released it from your account"
}

// safeMessage is what err may say to a client: an apperr's message (and
// its fields), never a cause it wraps.
func safeMessage(err error) string {
	var e *apperr.Error
	if !errors.As(err, &e) {
		return "an internal error"
	}
	msg := e.Message
	for _, f := range e.Fields {
		msg += "; " + f.Field + ": " + f.Message
	}
	return msg
}
