// Package numbers is what an organization does with phone numbers and the
// connections they come from: list the numbers it may buy, buy one (from a
// provider's inventory such as the sandbox, from its own SIP trunk, or in
// its own Twilio account), release one, and add or delete a connection.
// The REST API (internal/httpapi) and the dashboard (internal/ui) both go
// through it, so a number is bought, refused and released the same way
// whichever asks; each reads its own request and says the result its way.
package numbers

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/catalog"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/telephony"
)

// Providers are the telephony providers this server runs (callctl.Service).
type Providers interface {
	Provider(name string) (telephony.Network, bool)
	ProviderNames() []string
}

// TwilioAccounts is what is done in an organization's own Twilio account
// (internal/twilio implements it). Errors are apperr errors that name the
// request field to blame (twilio.authToken, number) or the cause
// (Unavailable when Twilio failed or could not be reached).
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

// Store is what the number work reads and writes: the aggregates of the
// store it uses.
type Store interface {
	store.Purchases
	store.Connections
}

// Service does it. Its fields are set once, before use.
type Service struct {
	Store     Store
	Providers Providers
	// Twilio acts in organizations' Twilio accounts; nil refuses Twilio
	// connections and numbers (Unavailable).
	Twilio TwilioAccounts
	// Secrets seals connections' passwords and auth tokens; nil refuses
	// connections that have one (Unavailable).
	Secrets *secret.Sealer
	Log     *slog.Logger
	Now     func() time.Time
}

// Available is a number that can be bought; a number of a connection
// names it.
type Available struct {
	telephony.Number
	ConnectionID string `json:"connectionId,omitempty"`
}

// ProviderNames lists the providers numbers may be listed and bought
// from: the configured ones and those of connections, sorted.
func (s *Service) ProviderNames() []string {
	names := s.Providers.ProviderNames()
	for _, p := range phone.ConnectionProviders {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	return names
}

// UnknownProvider records that field names a provider numbers cannot be
// listed or bought from here: a name no build knows (the known ones
// listed), or one this server does not run (saying what enables it).
func (s *Service) UnknownProvider(errs *apperr.Fields, field, name string) {
	errs.Add(field, "%s", catalog.Check(catalog.Telephony, name, s.ProviderNames()))
}

// Available lists the numbers that can be bought: without a provider, the
// inventories of the configured providers that are not connections
// (sandbox); with a connection provider (sip), the numbers of the
// organization's connections of it not bought yet. An unknown provider is
// Invalid on the field "provider". Twilio's numbers are searched (Search).
func (s *Service) Available(ctx context.Context, orgID, prov string) ([]Available, error) {
	var names []string
	for _, n := range s.Providers.ProviderNames() {
		if !phone.IsConnectionProvider(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if prov != "" {
		if !slices.Contains(s.ProviderNames(), prov) {
			var errs apperr.Fields
			s.UnknownProvider(&errs, "provider", prov)
			return nil, errs.Err()
		}
		names = []string{prov}
	}
	out := []Available{}
	if phone.IsConnectionProvider(prov) {
		ns, err := s.Store.ConnectionNumbers(ctx, orgID, prov)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if n.PurchaseID == "" {
				out = append(out, Available{ConnectionID: n.ConnectionID, Number: telephony.Number{
					Number: n.Number, Provider: prov, Region: phone.Region(n.Number), Capabilities: []string{"voice"}}})
			}
		}
		return out, nil
	}
	for _, n := range names {
		p, _ := s.Providers.Provider(n)
		inv, err := p.Inventory(ctx)
		if err != nil {
			return nil, apperr.Wrap(apperr.Unavailable, err, "provider %s did not list its numbers", n)
		}
		held, err := s.Store.HeldNumbers(ctx, n)
		if err != nil {
			return nil, err
		}
		for _, num := range inv {
			if !held[num.Number] {
				out = append(out, Available{Number: num})
			}
		}
	}
	return out, nil
}

// Search lists the local numbers for sale in the organization's Twilio
// account (connID, or its only Twilio connection).
func (s *Service) Search(ctx context.Context, orgID, connID string, q phone.NumberSearch) ([]Available, error) {
	conn, err := s.twilioConnectionOf(ctx, orgID, connID, "connectionId")
	if err != nil {
		return nil, err
	}
	if s.Twilio == nil {
		return nil, apperr.New(apperr.Unavailable, "Twilio is not configured on this server")
	}
	nums, err := s.Twilio.Search(ctx, conn, q)
	if err != nil {
		return nil, err
	}
	out := make([]Available, 0, len(nums))
	for _, n := range nums {
		n.Provider = phone.ProviderTwilio
		out = append(out, Available{Number: n, ConnectionID: conn.ID})
	}
	return out, nil
}

// Purchase is a request to buy a number.
type Purchase struct {
	// Number is in E.164 form (phone.NormalizeE164).
	Number string
	// Provider defaults to sandbox.
	Provider string
	// ConnectionID and Import are Twilio's: which account (default its
	// only one), and whether the number is already the account's.
	ConnectionID string
	Import       bool
}

// Buy buys a number for the organization. A number no inventory or
// connection offers is Invalid on "number"; an unknown provider on
// "provider".
func (s *Service) Buy(ctx context.Context, orgID string, b Purchase) (phone.Purchase, error) {
	prov := b.Provider
	if prov == "" {
		prov = "sandbox"
	}
	if prov == phone.ProviderTwilio {
		return s.buyTwilio(ctx, orgID, b.Number, b.ConnectionID, b.Import)
	}
	if phone.IsConnectionProvider(prov) {
		return s.buyOnConnection(ctx, orgID, prov, b.Number)
	}
	p, known := s.Providers.Provider(prov)
	if !known {
		var errs apperr.Fields
		s.UnknownProvider(&errs, "provider", prov)
		return phone.Purchase{}, errs.Err()
	}
	if err := p.Purchase(ctx, b.Number); err != nil {
		if errors.Is(err, telephony.ErrNumberUnavailable) {
			return phone.Purchase{}, apperr.Invalidf("number", "%s is not offered by provider %s; see GET /v1/phone/numbers", b.Number, prov)
		}
		return phone.Purchase{}, apperr.Wrap(apperr.Unavailable, err, "provider %s could not sell the number", prov)
	}
	now := s.Now().UTC()
	pu := phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: b.Number, Provider: prov, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreatePurchase(ctx, pu); err != nil {
		return phone.Purchase{}, err
	}
	return pu, nil
}

// buyOnConnection buys a number of one of the organization's connections
// of prov; the purchase remembers the connection. A number on none of
// them is Invalid on number, as a number no inventory offers.
func (s *Service) buyOnConnection(ctx context.Context, orgID, prov, number string) (phone.Purchase, error) {
	notOffered := apperr.Invalidf("number", "%s is not a number of this organization's %s connections; add it to one (POST /v1/phone/connections), see GET /v1/phone/numbers?provider=%s",
		number, prov, prov)
	ns, err := s.Store.ConnectionNumbers(ctx, orgID, prov)
	if err != nil {
		return phone.Purchase{}, err
	}
	i := slices.IndexFunc(ns, func(n phone.ConnectionNumber) bool { return n.Number == number })
	if i < 0 {
		return phone.Purchase{}, notOffered
	}
	now := s.Now().UTC()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: number, Provider: prov, ConnectionID: ns[i].ConnectionID, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreatePurchase(ctx, p); err != nil {
		if apperr.Is(err, apperr.NotFound) { // the connection was deleted meanwhile
			return phone.Purchase{}, notOffered
		}
		return phone.Purchase{}, err
	}
	return p, nil
}

// buyTwilio buys number into the organization's Twilio account (or, with
// import, takes one it already has) and points it at this server; the
// purchase remembers the connection. A bought number whose purchase cannot
// be stored is released at Twilio again.
func (s *Service) buyTwilio(ctx context.Context, orgID, number, connID string, imported bool) (phone.Purchase, error) {
	if s.Twilio == nil {
		return phone.Purchase{}, apperr.New(apperr.Unavailable, "Twilio is not configured on this server")
	}
	conn, err := s.twilioConnectionOf(ctx, orgID, connID, "connectionId")
	if err != nil {
		return phone.Purchase{}, err
	}
	if imported {
		err = s.Twilio.Import(ctx, conn, number)
	} else {
		err = s.Twilio.Buy(ctx, conn, number)
	}
	if err != nil {
		return phone.Purchase{}, err
	}
	now := s.Now().UTC()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: number, Provider: phone.ProviderTwilio, ConnectionID: conn.ID,
		Imported: imported, CreatedAt: now, UpdatedAt: now}
	if err := s.Store.CreatePurchase(ctx, p); err != nil {
		if rerr := s.Twilio.Release(context.WithoutCancel(ctx), conn, number, imported); rerr != nil {
			s.Log.Error("a Twilio number whose purchase could not be stored was not released at Twilio", "number", number,
				"connection_id", conn.ID, "err", rerr)
		}
		if apperr.Is(err, apperr.NotFound) { // the connection was deleted meanwhile
			return phone.Purchase{}, apperr.Invalidf("connectionId", "connection %s was deleted", conn.ID)
		}
		return phone.Purchase{}, err
	}
	return p, nil
}

// Release gives a purchased number up here (its contacts go with it; a
// Conflict while a schedule of it has calls to make), then at its
// provider. It returns what to tell the user: the number is released
// here even when the provider could not release it.
func (s *Service) Release(ctx context.Context, orgID, purchaseID string) (phone.Purchase, string, error) {
	p, err := s.Store.GetPurchase(ctx, orgID, purchaseID)
	if err != nil {
		return p, "", err
	}
	if err := s.Store.ReleasePurchase(ctx, orgID, purchaseID, s.Now()); err != nil {
		return p, "", err
	}
	if p.Provider == phone.ProviderTwilio {
		return p, s.releaseTwilio(ctx, p), nil
	}
	if prov, ok := s.Providers.Provider(p.Provider); ok {
		if err := prov.Release(ctx, p.Number); err != nil {
			s.Log.Warn("provider release failed; the number is released here", "number", p.Number, "err", err)
		}
	}
	return p, "number released", nil
}

// releaseTwilio releases a purchase's number at Twilio once it is released
// here, and says how that went.
func (s *Service) releaseTwilio(ctx context.Context, p phone.Purchase) string {
	if s.Twilio == nil {
		return "number released here; Twilio is not configured on this server, so release it in your Twilio account"
	}
	conn, err := s.Store.GetConnection(ctx, p.OrgID, p.ConnectionID)
	if err == nil {
		err = s.Twilio.Release(ctx, conn, p.Number, p.Imported)
	}
	if err != nil {
		s.Log.Warn("releasing a number at Twilio failed; it is released here", "number", p.Number, "connection_id", p.ConnectionID, "err", err)
		return "number released here, but Twilio could not release it (" + safeMessage(err) + "); release it in your Twilio account"
	}
	if p.Imported {
		return "number released; it stays in your Twilio account, no longer pointed at this server"
	}
	return "number released; Twilio released it from your account"
}

// safeMessage is what err may say to a user: an apperr's message (and
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

// CreateConnection checks and stores an organization's SIP trunk or
// Twilio account: c holds what was read (provider, name, settings),
// secret the SIP password or Twilio auth token, and errs what reading
// them found already (each field is reported once: the first error). A
// Twilio account's credentials are checked with Twilio. The secret is
// sealed with the server's key for the new connection's id and is never
// returned or logged.
func (s *Service) CreateConnection(ctx context.Context, orgID string, c phone.Connection, secretText string, errs apperr.Fields) (phone.Connection, error) {
	switch c.Provider {
	case phone.ProviderSIP:
		c.Check(&errs)
		phone.CheckSIPCredentials(c.SIP.Username, secretText, &errs)
	case phone.ProviderTwilio:
		if err := s.twilioConnection(ctx, &c, secretText, &errs); err != nil {
			return c, err
		}
	case "":
		if !errs.Has("provider") {
			errs.Add("provider", "is required: sip or twilio")
		}
	default:
		if !errs.Has("provider") {
			errs.Add("provider", "unknown provider %q; connections are sip or twilio", c.Provider)
		}
	}
	if err := FirstPerField(errs).Err(); err != nil {
		return c, err
	}
	now := s.Now().UTC()
	if c.ID == "" {
		c.ID = id.New(id.Connection)
	}
	c.OrgID, c.CreatedAt, c.UpdatedAt = orgID, now, now
	if c.Provider == phone.ProviderSIP && secretText != "" {
		if s.Secrets == nil {
			return c, apperr.New(apperr.Unavailable, "this server has no secret key to keep the password with; see --secret-key-file")
		}
		c.SIP.SealedPassword = s.Secrets.Seal([]byte(secretText), []byte(c.ID))
	}
	if err := s.Store.CreateConnection(ctx, c); err != nil {
		return c, err
	}
	return c, nil
}

// FirstPerField keeps the first error of each field: a field the decoder
// already refused (a number where a list belongs) is not also reported
// by the checks that saw its zero value.
func FirstPerField(errs apperr.Fields) apperr.Fields {
	var out apperr.Fields
	for _, e := range errs {
		if !out.Has(e.Field) {
			out = append(out, e)
		}
	}
	return out
}

// twilioConnection checks a Twilio connection's fields and then its
// credentials with Twilio (a wrong token is Invalid on twilio.authToken),
// and seals the token for the new connection's id.
func (s *Service) twilioConnection(ctx context.Context, c *phone.Connection, token string, errs *apperr.Fields) error {
	c.CheckTwilio(token, errs)
	if err := FirstPerField(*errs).Err(); err != nil {
		return err
	}
	if s.Twilio == nil {
		return apperr.New(apperr.Unavailable, "Twilio is not configured on this server")
	}
	if s.Secrets == nil {
		return apperr.New(apperr.Unavailable, "this server has no secret key to keep the auth token with; see --secret-key-file")
	}
	if err := s.Twilio.Check(ctx, c.Twilio.AccountSID, token); err != nil {
		return err
	}
	c.ID = id.New(id.Connection)
	c.Twilio.SealedAuthToken = s.Secrets.Seal([]byte(token), []byte(c.ID))
	return nil
}

// twilioConnectionOf picks the organization's Twilio connection a numbers
// request means: connID when given, else its only one.
func (s *Service) twilioConnectionOf(ctx context.Context, orgID, connID, field string) (phone.Connection, error) {
	if connID != "" {
		if !id.Valid(id.Connection, connID) {
			return phone.Connection{}, apperr.Invalidf(field, "%q is not a connection id (conn_…)", connID)
		}
		c, err := s.Store.GetConnection(ctx, orgID, connID)
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
		list, total, err := s.Store.ListConnections(ctx, orgID, pg)
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
