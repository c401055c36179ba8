package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/telephony"
)

// numberView is a number as GET /v1/phone/numbers shows it; numbers of a
// connection name it.
type numberView struct {
	telephony.Number
	ConnectionID string `json:"connectionId,omitempty"`
}

// listNumbers lists the numbers that can be bought: without a provider,
// the inventories of the configured providers (sandbox); with a provider
// of connections (sip), the numbers of the organization's own connections
// of that provider.
func (s *Server) listNumbers(ctx context.Context, r *request) (response, error) {
	if r.URL.Query().Get("provider") == phone.ProviderTwilio {
		return s.listTwilioNumbers(ctx, r)
	}
	q := newQuery(r.URL.Query(), "provider")
	prov := q.v.Get("provider")
	var names []string
	for _, n := range s.calls.ProviderNames() {
		if !phone.IsConnectionProvider(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if prov != "" {
		if !slices.Contains(s.providerNames(), prov) {
			s.unknownProvider(&q.errs, "provider", prov)
		}
		names = []string{prov}
	}
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	if phone.IsConnectionProvider(prov) {
		return s.listConnectionNumbers(ctx, r.orgID, prov)
	}
	out := []numberView{}
	for _, n := range names {
		p, _ := s.calls.Provider(n)
		inv, err := p.Inventory(ctx)
		if err != nil {
			return response{}, apperr.Wrap(apperr.Unavailable, err, "provider %s did not list its numbers", n)
		}
		held, err := s.store.HeldNumbers(ctx, n)
		if err != nil {
			return response{}, err
		}
		for _, num := range inv {
			if !held[num.Number] {
				out = append(out, numberView{Number: num})
			}
		}
	}
	return ok(http.StatusOK, "available numbers", out), nil
}

// listConnectionNumbers lists the numbers of the organization's
// connections of a provider that are not purchased yet.
func (s *Server) listConnectionNumbers(ctx context.Context, orgID, prov string) (response, error) {
	ns, err := s.store.ConnectionNumbers(ctx, orgID, prov)
	if err != nil {
		return response{}, err
	}
	out := []numberView{}
	for _, n := range ns {
		if n.PurchaseID == "" {
			out = append(out, numberView{ConnectionID: n.ConnectionID, Number: telephony.Number{
				Number: n.Number, Provider: prov, Region: phone.Region(n.Number), Capabilities: []string{"voice"}}})
		}
	}
	return ok(http.StatusOK, "available numbers", out), nil
}

func (s *Server) listPurchases(ctx context.Context, r *request) (response, error) {
	if err := newQuery(r.URL.Query()).errs.Err(); err != nil {
		return response{}, err
	}
	ps, err := s.store.ListPurchases(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "purchased numbers", viewAll(ps, viewPurchase)), nil
}

func (s *Server) createPurchase(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	number := o.Str("number", true)
	provName := o.Str("provider", false)
	var connID string
	var imported bool
	if provName == phone.ProviderTwilio {
		connID = o.Str("connectionId", false)
		imported = o.Bool("import")
	}
	o.Done()
	if provName == "" {
		provName = "sandbox"
	}
	if number != "" {
		n, err := phone.NormalizeE164(number)
		if err != nil {
			o.Errs.Add("number", "%s", err.Error())
		}
		number = n
	}
	if phone.IsConnectionProvider(provName) {
		if err := o.Errs.Err(); err != nil {
			return response{}, err
		}
		if provName == phone.ProviderTwilio {
			return s.purchaseTwilio(ctx, r.orgID, number, connID, imported)
		}
		return s.purchaseOnConnection(ctx, r.orgID, provName, number)
	}
	prov, known := s.calls.Provider(provName)
	if !known {
		s.unknownProvider(o.Errs, "provider", provName)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	if err := prov.Purchase(ctx, number); err != nil {
		if errors.Is(err, telephony.ErrNumberUnavailable) {
			return response{}, apperr.Invalidf("number", "%s is not offered by provider %s; see GET /v1/phone/numbers", number, provName)
		}
		return response{}, apperr.Wrap(apperr.Unavailable, err, "provider %s could not sell the number", provName)
	}
	now := s.now().UTC()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: r.orgID, Number: number, Provider: provName, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreatePurchase(ctx, p); err != nil {
		return response{}, err
	}
	return ok(http.StatusCreated, "number purchased", viewPurchase(p)), nil
}

// purchaseOnConnection buys a number of one of the organization's
// connections of prov; the purchase remembers the connection. A number
// on none of them is a 400 on number, as a number no inventory offers.
func (s *Server) purchaseOnConnection(ctx context.Context, orgID, prov, number string) (response, error) {
	notOffered := apperr.Invalidf("number", "%s is not a number of this organization's %s connections; add it to one (POST /v1/phone/connections), see GET /v1/phone/numbers?provider=%s",
		number, prov, prov)
	ns, err := s.store.ConnectionNumbers(ctx, orgID, prov)
	if err != nil {
		return response{}, err
	}
	i := slices.IndexFunc(ns, func(n phone.ConnectionNumber) bool { return n.Number == number })
	if i < 0 {
		return response{}, notOffered
	}
	now := s.now().UTC()
	p := phone.Purchase{ID: id.New(id.Purchase), OrgID: orgID, Number: number, Provider: prov, ConnectionID: ns[i].ConnectionID, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreatePurchase(ctx, p); err != nil {
		if apperr.Is(err, apperr.NotFound) { // the connection was deleted meanwhile
			return response{}, notOffered
		}
		return response{}, err
	}
	return ok(http.StatusCreated, "number purchased", viewPurchase(p)), nil
}

func (s *Server) releasePurchase(ctx context.Context, r *request) (response, error) {
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	p, err := s.store.GetPurchase(ctx, r.orgID, pid)
	if err != nil {
		return response{}, err
	}
	if err := s.store.ReleasePurchase(ctx, r.orgID, pid, s.now()); err != nil {
		return response{}, err
	}
	if p.Provider == phone.ProviderTwilio {
		return ok(http.StatusOK, s.releaseTwilio(ctx, p), viewPurchase(p)), nil
	}
	if prov, ok := s.calls.Provider(p.Provider); ok {
		if err := prov.Release(ctx, p.Number); err != nil {
			s.log.Warn("provider release failed; the number is released here", "number", p.Number, "err", err)
		}
	}
	return ok(http.StatusOK, "number released", viewPurchase(p)), nil
}

func (s *Server) listContacts(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	cs, total, err := s.store.ListContacts(ctx, r.orgID, pid, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "contacts", viewAll(cs, viewContact))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

type duplicateView struct {
	Field       string `json:"field"`
	PhoneNumber string `json:"phoneNumber"`
	Message     string `json:"message"`
}

type contactsAdded struct {
	Created    []string        `json:"created"`
	Duplicates []duplicateView `json:"duplicates"`
}

func (s *Server) addContacts(ctx context.Context, r *request) (response, error) {
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	if _, err := s.store.GetPurchase(ctx, r.orgID, pid); err != nil {
		return response{}, err
	}
	var (
		cs     []phone.Contact
		fields []string // the name of each contact in errors
	)
	if r.csv {
		cs, fields, err = contactsFromCSV(r.body)
	} else {
		cs, fields, err = contactsFromJSON(r.body)
	}
	if err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	for i := range cs {
		cs[i].ID, cs[i].CreatedAt = id.New(id.Contact), now
	}
	created, dups, err := s.store.AddContacts(ctx, r.orgID, pid, cs)
	if err != nil {
		return response{}, err
	}
	out := contactsAdded{Created: []string{}, Duplicates: []duplicateView{}}
	for _, c := range created {
		out.Created = append(out.Created, c.ID)
	}
	for _, i := range dups {
		out.Duplicates = append(out.Duplicates, duplicateView{Field: fields[i], PhoneNumber: cs[i].PhoneNumber, Message: "number is already a contact of this phone; not added again"})
	}
	msg := fmt.Sprintf("%d contact(s) added, %d duplicate(s) skipped", len(out.Created), len(out.Duplicates))
	return ok(http.StatusCreated, msg, out), nil
}

func contactsFromJSON(body []byte) ([]phone.Contact, []string, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, nil, err
	}
	items := o.Objects("contacts", true)
	o.Done()
	if len(items) > phone.MaxContactsPerUpload {
		o.Errs.Add("contacts", "must hold at most %d contacts per request", phone.MaxContactsPerUpload)
		return nil, nil, o.Errs.Err()
	}
	cs := make([]phone.Contact, 0, len(items))
	fields := make([]string, 0, len(items))
	for i, it := range items {
		field := fmt.Sprintf("contacts[%d].", i)
		if it == nil {
			continue
		}
		c := phone.Contact{
			Name:        it.Str("name", false),
			PhoneNumber: it.Str("phoneNumber", true),
			Timezone:    it.Str("timezone", false),
			Metadata:    it.RawObject("metadata"),
		}
		it.Done()
		phone.CheckContact(&c, field, o.Errs)
		cs = append(cs, c)
		fields = append(fields, field+"phoneNumber")
	}
	if err := o.Errs.Err(); err != nil {
		return nil, nil, err
	}
	return cs, fields, nil
}

// contactsFromCSV reads a contacts file (phone.ParseContactsCSV); any
// error of the file or of a row refuses the whole upload.
func contactsFromCSV(body []byte) ([]phone.Contact, []string, error) {
	f := phone.ParseContactsCSV(body)
	if err := f.Fields().Err(); err != nil {
		return nil, nil, err
	}
	cs := make([]phone.Contact, 0, len(f.Rows))
	fields := make([]string, 0, len(f.Rows))
	for _, r := range f.Rows {
		cs = append(cs, r.Contact)
		fields = append(fields, fmt.Sprintf("rows[%d].phoneNumber", r.Row))
	}
	return cs, fields, nil
}

func (s *Server) deleteContact(ctx context.Context, r *request) (response, error) {
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	cid, err := pathID(r, "contactId", id.Contact, "contact")
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteContact(ctx, r.orgID, pid, cid); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "contact deleted", nil), nil
}

func (s *Server) allocateAssistant(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	pid := o.Str("id", true)
	in, inSet := o.Str("inboundAssistantId", false), o.Present("inboundAssistantId")
	out, outSet := o.Str("outboundAssistantId", false), o.Present("outboundAssistantId")
	msg, msgSet := o.Str("message", false), o.Present("message")
	o.Done()
	if !inSet && !outSet && !msgSet {
		o.Errs.Add("inboundAssistantId", "at least one of inboundAssistantId, outboundAssistantId or message is required")
	}
	if len(msg) > 2000 {
		o.Errs.Add("message", "must be at most 2000 bytes")
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	var unknown unknownIDs
	unknown.check("id", pid, id.Purchase, "phone purchase")
	unknown.check("inboundAssistantId", in, id.Assistant, "assistant")
	unknown.check("outboundAssistantId", out, id.Assistant, "assistant")
	if err := unknown.err(); err != nil {
		return response{}, err
	}
	cur, err := s.store.GetPurchase(ctx, r.orgID, pid)
	if err != nil {
		return response{}, onField(err, "id")
	}
	if !inSet {
		in = cur.InboundAssistantID
	}
	if !outSet {
		out = cur.OutboundAssistantID
	}
	if !msgSet {
		msg = cur.Message
	}
	p, err := s.store.AllocateAssistants(ctx, r.orgID, pid, in, out, msg, s.now())
	if err != nil {
		return response{}, onField(err, "id")
	}
	return ok(http.StatusOK, "assistants allocated", viewPurchase(p)), nil
}
