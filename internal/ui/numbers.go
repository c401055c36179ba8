package ui

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/id"
	"switchboard/internal/numbers"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// maxAllocatableAssistants bounds the assistants offered in a number's
// allocation form.
const maxAllocatableAssistants = 500

// maxShownInventory bounds the inventory numbers offered on the page (the
// sandbox has hundreds).
const maxShownInventory = 12

type numbersPage struct {
	Purchases  []purchaseRow
	Assistants []assistant.Assistant
	// Inventory and ConnNumbers are the numbers that can be bought
	// (sandbox and other inventories; the organization's SIP trunks).
	Inventory, ConnNumbers []numbers.Available
	// MoreInventory is how many inventory numbers are not shown.
	MoreInventory int
	Twilio        twilioSearch
	Connections   []connectionRow
	// CanBuy is false when the server gave the dashboard no numbers
	// service (numbers are shown, not bought).
	CanBuy bool
	Notice string
	Errs   *formErrors
	// ErrsAt names the form the errors are about: "buy", "allocate:ID",
	// "sip", "twilio", "release:ID", "connection:ID".
	ErrsAt string
	SIP    sipForm
	TwSID  string
	// Routing is the inbound routing endpoint (routing.go).
	Routing routingForm
}

type purchaseRow struct {
	phone.Purchase
	Inbound, Outbound string // the assistants' names
	Release           *confirmForm
}

type connectionRow struct {
	phone.Connection
	Delete *confirmForm
}

// twilioSearch is the Twilio number search, as asked and answered.
type twilioSearch struct {
	Asked                            bool
	AreaCode, Contains, ConnectionID string
	Results                          []numbers.Available
	Error                            string
}

// sipForm is the new SIP connection form as filled in (never the password).
type sipForm struct {
	Name, Address, Transport, Username, Numbers, Sources string
}

func (s *Server) listNumbers(w http.ResponseWriter, r *request) error {
	p := numbersPage{Notice: r.URL.Query().Get("done")}
	q := r.URL.Query()
	if q.Get("twilio") != "" {
		p.Twilio = twilioSearch{Asked: true, AreaCode: q.Get("areaCode"), Contains: q.Get("contains"), ConnectionID: q.Get("connectionId")}
	}
	return s.numbersPage(w, r, http.StatusOK, p)
}

// numbersPage fills in and renders the numbers page around p's forms.
func (s *Server) numbersPage(w http.ResponseWriter, r *request, status int, p numbersPage) error {
	ctx := r.Context()
	org := r.op.OrgID
	ps, err := s.st.ListPurchases(ctx, org)
	if err != nil {
		return err
	}
	as, _, err := s.st.ListAssistants(ctx, org, store.Page{Page: 1, PageSize: maxAllocatableAssistants})
	if err != nil {
		return err
	}
	p.Assistants = as
	names := map[string]string{}
	for _, a := range as {
		names[a.ID] = a.Name
	}
	for _, pu := range ps {
		p.Purchases = append(p.Purchases, purchaseRow{Purchase: pu, Inbound: names[pu.InboundAssistantID], Outbound: names[pu.OutboundAssistantID],
			Release: &confirmForm{Label: "Release", Action: "/ui/numbers/" + pu.ID + "/release",
				Question: "Release " + pu.Number + "? Its contacts are deleted with it."}})
	}
	for pg := (store.Page{Page: 1, PageSize: 100}); ; pg.Page++ {
		cs, total, err := s.st.ListConnections(ctx, org, pg)
		if err != nil {
			return err
		}
		for _, c := range cs {
			p.Connections = append(p.Connections, connectionRow{Connection: c, Delete: &confirmForm{Label: "Delete",
				Action: "/ui/connections/" + c.ID + "/delete", Question: "Delete the connection " + c.Name + "? Its numbers must be released first."}})
		}
		if pg.Page*pg.PageSize >= total || len(cs) == 0 {
			break
		}
	}
	if n := s.cfg.Numbers; n != nil {
		p.CanBuy = true
		if p.Inventory, err = n.Available(ctx, org, ""); err != nil && !apperr.Is(err, apperr.Unavailable) {
			return err
		}
		if len(p.Inventory) > maxShownInventory {
			p.MoreInventory = len(p.Inventory) - maxShownInventory
			p.Inventory = p.Inventory[:maxShownInventory]
		}
		if p.ConnNumbers, err = n.Available(ctx, org, phone.ProviderSIP); err != nil {
			return err
		}
		if t := &p.Twilio; t.Asked {
			var errs apperr.Fields
			search := phone.ParseNumberSearch("US", t.AreaCode, t.Contains, &errs)
			if err = errs.Err(); err == nil {
				t.Results, err = n.Search(ctx, org, t.ConnectionID, search)
			}
			if err != nil {
				fe, ok := userError(err, nil)
				if !ok && !apperr.Is(err, apperr.Unavailable) {
					return err
				}
				t.Error = safeText(err, fe)
			}
		}
	}
	if p.ErrsAt != "routing" {
		if p.Routing, err = s.routingFormOf(r); err != nil {
			return err
		}
		if secret, what := s.revealed(r); what == "routing" {
			p.Routing.Secret = secret
		}
	}
	s.render(w, r, status, view{Name: "numbers", Nav: "numbers", Title: "Numbers", Data: p})
	return nil
}

// safeText is what a refused request says to the operator: the fields'
// messages, or the error's own when it is classified.
func safeText(err error, fe *formErrors) string {
	if fe != nil {
		var parts []string
		for f, m := range fe.ByField {
			parts = append(parts, f+": "+strings.Join(m, "; "))
		}
		if len(parts) > 0 {
			return strings.Join(parts, " · ")
		}
		return fe.Message
	}
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "something went wrong"
}

// refused shows the numbers page again with err on the form named at,
// or returns err when it is not the operator's to fix.
func (s *Server) refused(w http.ResponseWriter, r *request, err error, at string, p numbersPage, control func(string) (string, string)) error {
	fe, ok := userError(err, control)
	if !ok {
		return err
	}
	p.Errs, p.ErrsAt = fe, at
	return s.numbersPage(w, r, errorStatus(err), p)
}

func (s *Server) numbersService() (*numbers.Service, error) {
	if s.cfg.Numbers == nil {
		return nil, apperr.New(apperr.Unavailable, "numbers cannot be bought or connected from this dashboard on this server")
	}
	return s.cfg.Numbers, nil
}

// buyNumber buys a number, as POST /v1/phone/purchases does.
func (s *Server) buyNumber(w http.ResponseWriter, r *request) error {
	n, err := s.numbersService()
	if err != nil {
		return err
	}
	f := r.PostForm
	req := numbers.Purchase{Provider: f.Get("provider"), ConnectionID: f.Get("connectionId"), Import: f.Get("import") != ""}
	if req.Number, err = phone.NormalizeE164(f.Get("number")); err != nil {
		err = apperr.Invalidf("number", "%s", err.Error())
	} else {
		var pu phone.Purchase
		if pu, err = n.Buy(r.Context(), r.op.OrgID, req); err == nil {
			return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape(pu.Number+" is yours: give it an assistant below."))
		}
	}
	return s.refused(w, r, err, "buy", numbersPage{}, nil)
}

// allocate gives a number its inbound and outbound assistants and its
// message, as POST /v1/phone/allocate-assistant does.
func (s *Server) allocate(w http.ResponseWriter, r *request) error {
	pid := r.PathValue("id")
	if !id.Valid(id.Purchase, pid) {
		return apperr.NotFoundf("no such number")
	}
	f := r.PostForm
	in, out, msg := f.Get("inboundAssistantId"), f.Get("outboundAssistantId"), f.Get("message")
	var errs apperr.Fields
	for field, v := range map[string]string{"inboundAssistantId": in, "outboundAssistantId": out} {
		if v != "" && !id.Valid(id.Assistant, v) {
			errs.Add(field, "is not an assistant id")
		}
	}
	if len(msg) > phone.MaxPurchaseMessage {
		errs.Add("message", "must be at most %d bytes", phone.MaxPurchaseMessage)
	}
	err := errs.Err()
	if err == nil {
		if _, err = s.st.AllocateAssistants(r.Context(), store.Allocation{OrgID: r.op.OrgID, PurchaseID: pid, InboundID: in, OutboundID: out, Message: msg, At: s.cfg.Now()}); err == nil {
			return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape("Assistants saved."))
		}
		if apperr.Is(err, apperr.NotFound) && len(fieldsOf(err)) == 0 {
			return apperr.NotFoundf("no such number")
		}
	}
	return s.refused(w, r, err, "allocate:"+pid, numbersPage{}, nil)
}

// fieldsOf is the fields an apperr error names.
func fieldsOf(err error) []apperr.FieldError {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}

// releaseNumber releases a number, as DELETE /v1/phone/purchases/{id} does.
func (s *Server) releaseNumber(w http.ResponseWriter, r *request) error {
	n, err := s.numbersService()
	if err != nil {
		return err
	}
	pid := r.PathValue("id")
	if !id.Valid(id.Purchase, pid) {
		return apperr.NotFoundf("no such number")
	}
	pu, msg, err := n.Release(r.Context(), r.op.OrgID, pid)
	if apperr.Is(err, apperr.NotFound) {
		return apperr.NotFoundf("no such number")
	}
	if err != nil {
		return s.refused(w, r, err, "release:"+pid, numbersPage{}, nil)
	}
	return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape(pu.Number+": "+msg+"."))
}

// connectionControl puts a connection's errors on its controls: a
// number or source is a line of its list.
func connectionControl(field string) (string, string) {
	for _, list := range []string{"sip.numbers", "sip.inboundSources"} {
		if strings.HasPrefix(field, list+"[") {
			return list, lineOf(field) + ": "
		}
	}
	return field, ""
}

// createConnection adds a SIP trunk or a Twilio account, as POST
// /v1/phone/connections does. The password or token is never shown back,
// not even on a refused form.
func (s *Server) createConnection(w http.ResponseWriter, r *request) error {
	n, err := s.numbersService()
	if err != nil {
		return err
	}
	f := r.PostForm
	c := phone.Connection{Provider: f.Get("provider"), Name: strings.TrimSpace(f.Get("name"))}
	var secretText string
	p := numbersPage{}
	switch c.Provider {
	case phone.ProviderSIP:
		p.SIP = sipForm{Name: c.Name, Address: f.Get("sip.address"), Transport: f.Get("sip.transport"), Username: f.Get("sip.username"),
			Numbers: f.Get("sip.numbers"), Sources: f.Get("sip.inboundSources")}
		c.SIP = phone.SIPConnection{Address: strings.TrimSpace(p.SIP.Address), Transport: p.SIP.Transport, Username: strings.TrimSpace(p.SIP.Username),
			Numbers: lines(p.SIP.Numbers), InboundSources: lines(p.SIP.Sources)}
		secretText = f.Get("sip.password")
	case phone.ProviderTwilio:
		p.TwSID = strings.TrimSpace(f.Get("twilio.accountSid"))
		c.Twilio.AccountSID = p.TwSID
		secretText = f.Get("twilio.authToken")
	}
	if _, err = n.CreateConnection(r.Context(), r.op.OrgID, c, secretText, nil); err == nil {
		return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape("Connection "+c.Name+" added."))
	}
	return s.refused(w, r, err, c.Provider, p, connectionControl)
}

func (s *Server) deleteConnection(w http.ResponseWriter, r *request) error {
	cid := r.PathValue("id")
	if !id.Valid(id.Connection, cid) {
		return apperr.NotFoundf("no such connection")
	}
	if err := s.st.DeleteConnection(r.Context(), r.op.OrgID, cid); err != nil {
		if apperr.Is(err, apperr.NotFound) {
			return apperr.NotFoundf("no such connection")
		}
		return s.refused(w, r, err, "connection:"+cid, numbersPage{}, nil)
	}
	return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape("Connection deleted."))
}
