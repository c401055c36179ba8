package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/phone"
)

// sipView is a SIP connection's settings as shown: never the password,
// only whether there is one.
type sipView struct {
	Address        string   `json:"address"`
	Transport      string   `json:"transport"`
	Username       string   `json:"username"`
	HasPassword    bool     `json:"hasPassword"`
	Numbers        []string `json:"numbers"`
	InboundSources []string `json:"inboundSources"`
}

type connectionView struct {
	ID        string      `json:"id"`
	Provider  string      `json:"provider"`
	Name      string      `json:"name"`
	SIP       *sipView    `json:"sip,omitempty"`
	Twilio    *twilioView `json:"twilio,omitempty"`
	CreatedAt ts          `json:"createdAt"`
	UpdatedAt ts          `json:"updatedAt"`
}

func viewConnection(c phone.Connection) connectionView {
	nonNil := func(xs []string) []string {
		if xs == nil {
			return []string{}
		}
		return xs
	}
	v := connectionView{ID: c.ID, Provider: c.Provider, Name: c.Name, CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt)}
	if c.Provider == phone.ProviderTwilio {
		v.Twilio = &twilioView{AccountSID: c.Twilio.AccountSID, HasAuthToken: c.Twilio.HasAuthToken()}
		return v
	}
	v.SIP = &sipView{Address: c.SIP.Address, Transport: c.SIP.Transport, Username: c.SIP.Username, HasPassword: c.SIP.HasPassword(),
		Numbers: nonNil(c.SIP.Numbers), InboundSources: nonNil(c.SIP.InboundSources)}
	return v
}

// createConnection stores an organization's SIP trunk or Twilio account.
// The password or auth token is sealed with the server's key (for the new
// connection's id) before anything else sees it, and is never returned or
// logged; a Twilio account's credentials are checked with Twilio first.
func (s *Server) createConnection(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	c := phone.Connection{Provider: o.Str("provider", true), Name: o.Str("name", false)}
	var password, token string
	switch c.Provider {
	case "":
	case phone.ProviderSIP:
		if !o.Present("sip") {
			o.Errs.Add("sip", "is required: the trunk's address, transport, credentials, numbers and inbound sources")
		}
		if so := o.Child("sip"); so != nil {
			c.SIP = phone.SIPConnection{
				Address:        so.Str("address", false),
				Transport:      so.Str("transport", false),
				Username:       so.Str("username", false),
				Numbers:        so.Strings("numbers", false),
				InboundSources: so.Strings("inboundSources", false),
			}
			password = so.Str("password", false)
			so.Done()
		}
	case phone.ProviderTwilio:
		if !o.Present("twilio") {
			o.Errs.Add("twilio", "is required: the account's accountSid and authToken")
		}
		if to := o.Child("twilio"); to != nil {
			c.Twilio.AccountSID = to.Str("accountSid", false)
			token = to.Str("authToken", false)
			to.Done()
		}
	default:
		o.Errs.Add("provider", "unknown provider %q; connections are sip or twilio", c.Provider)
	}
	// A provider's settings are not read under another: no second error.
	if c.Provider != phone.ProviderSIP {
		o.Skip("sip")
	}
	if c.Provider != phone.ProviderTwilio {
		o.Skip("twilio")
	}
	o.Done()
	switch c.Provider {
	case phone.ProviderSIP:
		c.Check(o.Errs)
		phone.CheckSIPCredentials(c.SIP.Username, password, o.Errs)
	case phone.ProviderTwilio:
		if o.Present("twilio") { // else "twilio is required" says it all
			if err := s.twilioConnection(ctx, &c, token, o.Errs); err != nil {
				return response{}, err
			}
		}
	}
	if err := firstPerField(*o.Errs).Err(); err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	if c.ID == "" {
		c.ID = id.New(id.Connection)
	}
	c.OrgID, c.CreatedAt, c.UpdatedAt = r.orgID, now, now
	if password != "" {
		if s.cfg.Secrets == nil {
			return response{}, apperr.New(apperr.Unavailable, "this server has no secret key to keep the password with; see --secret-key-file")
		}
		c.SIP.SealedPassword = s.cfg.Secrets.Seal([]byte(password), []byte(c.ID))
	}
	if err := s.store.CreateConnection(ctx, c); err != nil {
		return response{}, err
	}
	return ok(http.StatusCreated, "connection created", viewConnection(c)), nil
}

// firstPerField keeps the first error of each field: a field the decoder
// already refused (a number where a list belongs) is not also reported
// by the checks that saw its zero value.
func firstPerField(errs apperr.Fields) apperr.Fields {
	var out apperr.Fields
	for _, e := range errs {
		if !out.Has(e.Field) {
			out = append(out, e)
		}
	}
	return out
}

func (s *Server) listConnections(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	list, total, err := s.store.ListConnections(ctx, r.orgID, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "connections", viewAll(list, viewConnection))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) getConnection(ctx context.Context, r *request) (response, error) {
	cid, err := pathID(r, "id", id.Connection, "connection")
	if err != nil {
		return response{}, err
	}
	c, err := s.store.GetConnection(ctx, r.orgID, cid)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "connection", viewConnection(c)), nil
}

// deleteConnection deletes a connection whose numbers are not purchased
// (409 naming the purchases otherwise); data is the connection as it was.
func (s *Server) deleteConnection(ctx context.Context, r *request) (response, error) {
	cid, err := pathID(r, "id", id.Connection, "connection")
	if err != nil {
		return response{}, err
	}
	c, err := s.store.GetConnection(ctx, r.orgID, cid)
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteConnection(ctx, r.orgID, cid); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "connection deleted", viewConnection(c)), nil
}

// providerNames lists the providers numbers may be listed and bought
// from: the configured ones and those of connections, sorted.
func (s *Server) providerNames() []string {
	names := s.calls.ProviderNames()
	for _, p := range phone.ConnectionProviders {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	return names
}

// unknownProvider records that field names a provider this server does not have.
func (s *Server) unknownProvider(errs *apperr.Fields, field, name string) {
	errs.Add(field, "unknown provider %q; this server has: %s", name, strings.Join(s.providerNames(), ", "))
}
