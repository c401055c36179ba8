package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/numbers"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// listNumbers lists the numbers that can be bought (numbers.Service.Available;
// Twilio's are searched: listTwilioNumbers).
func (s *Server) listNumbers(ctx context.Context, r *request) (response, error) {
	if r.URL.Query().Get("provider") == phone.ProviderTwilio {
		return s.listTwilioNumbers(ctx, r)
	}
	q := newQuery(r.URL.Query(), "provider")
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	out, err := s.numbers.Available(ctx, r.orgID, q.v.Get("provider"))
	if err != nil {
		return response{}, err
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
	req := numbers.Purchase{Number: o.Str("number", true), Provider: o.Str("provider", false)}
	if req.Provider == phone.ProviderTwilio {
		req.ConnectionID = o.Str("connectionId", false)
		req.Import = o.Bool("import")
	}
	o.Done()
	if req.Provider == "" {
		req.Provider = "sandbox"
	}
	if req.Number != "" {
		n, err := phone.NormalizeE164(req.Number)
		if err != nil {
			o.Errs.Add("number", "%s", err.Error())
		}
		req.Number = n
	}
	if _, known := s.calls.Provider(req.Provider); !known && !phone.IsConnectionProvider(req.Provider) {
		s.numbers.UnknownProvider(o.Errs, "provider", req.Provider)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	p, err := s.numbers.Buy(ctx, r.orgID, req)
	if err != nil {
		return response{}, err
	}
	msg := "number purchased"
	if p.Imported {
		msg = "number imported"
	}
	return ok(http.StatusCreated, msg, viewPurchase(p)), nil
}

func (s *Server) releasePurchase(ctx context.Context, r *request) (response, error) {
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	p, msg, err := s.numbers.Release(ctx, r.orgID, pid)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, msg, viewPurchase(p)), nil
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
	// Refused are the bad rows of a CSV file imported with
	// ?partial=true (each error names rows[N].column); absent otherwise.
	Refused *[]apperr.FieldError `json:"refused,omitempty"`
}

func (s *Server) addContacts(ctx context.Context, r *request) (response, error) {
	pid, err := pathID(r, "id", id.Purchase, "phone purchase")
	if err != nil {
		return response{}, err
	}
	if _, err := s.store.GetPurchase(ctx, r.orgID, pid); err != nil {
		return response{}, err
	}
	q := newQuery(r.URL.Query(), "partial")
	partial := q.v.Get("partial") == "true"
	if p := q.v.Get("partial"); p != "" && p != "true" && p != "false" {
		q.errs.Add("partial", "must be true or false")
	}
	if partial && !r.csv {
		q.errs.Add("partial", "applies to CSV uploads only (Content-Type: text/csv)")
	}
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	var (
		cs      []phone.Contact
		fields  []string // the name of each contact in errors
		refused apperr.Fields
	)
	if r.csv {
		cs, fields, refused, err = contactsFromCSV(r.body, partial)
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
	if partial {
		list := append([]apperr.FieldError{}, refused...)
		out.Refused = &list
	}
	for _, c := range created {
		out.Created = append(out.Created, c.ID)
	}
	for _, i := range dups {
		out.Duplicates = append(out.Duplicates, duplicateView{Field: fields[i], PhoneNumber: cs[i].PhoneNumber, Message: "number is already a contact of this phone; not added again"})
	}
	msg := fmt.Sprintf("%d contact(s) added, %d duplicate(s) skipped", len(out.Created), len(out.Duplicates))
	if partial {
		msg += fmt.Sprintf(", %d error(s) in refused rows", len(refused))
	}
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

// contactsFromCSV reads a contacts file (phone.ParseContactsCSV) and
// keeps what phone.ContactsCSV.Import keeps: with partial, the good rows
// (the bad ones' errors in refused); else any error refuses the whole
// upload. A spoilt file refuses it either way.
func contactsFromCSV(body []byte, partial bool) ([]phone.Contact, []string, apperr.Fields, error) {
	f := phone.ParseContactsCSV(body)
	good, refused := f.Import(partial)
	if len(good) == 0 && len(refused) > 0 {
		return nil, nil, nil, refused.Err()
	}
	cs := make([]phone.Contact, 0, len(good))
	fields := make([]string, 0, len(good))
	for _, r := range good {
		cs = append(cs, r.Contact)
		fields = append(fields, fmt.Sprintf("rows[%d].phoneNumber", r.Row))
	}
	return cs, fields, refused, nil
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
	if len(msg) > phone.MaxPurchaseMessage {
		o.Errs.Add("message", "must be at most %d bytes", phone.MaxPurchaseMessage)
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
	p, err := s.store.AllocateAssistants(ctx, store.Allocation{OrgID: r.orgID, PurchaseID: pid, InboundID: in, OutboundID: out, Message: msg, At: s.now()})
	if err != nil {
		return response{}, onField(err, "id")
	}
	return ok(http.StatusOK, "assistants allocated", viewPurchase(p)), nil
}
