package httpapi

import (
	"context"
	"net/http"

	"switchboard/internal/id"
	"switchboard/internal/numbers"
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
	if c.Provider == phone.ProviderTwilio && !o.Present("twilio") { // "twilio is required" says it all
		return response{}, numbers.FirstPerField(*o.Errs).Err()
	}
	secret := password
	if c.Provider == phone.ProviderTwilio {
		secret = token
	}
	c, err = s.numbers.CreateConnection(ctx, r.orgID, c, secret, *o.Errs)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusCreated, "connection created", viewConnection(c)), nil
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
