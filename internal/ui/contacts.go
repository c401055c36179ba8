package ui

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

const (
	contactsPageSize = 50
	// maxContactsUpload bounds a CSV upload's form: a file of
	// phone.MaxContactsPerUpload rows of a few columns.
	maxContactsUpload = 2 << 20
)

type contactsIndex struct {
	Purchases []phone.Purchase
}

// listContactNumbers is /ui/contacts: contacts belong to a purchased
// number, so it lists the numbers, each linking to its contacts.
func (s *Server) listContactNumbers(w http.ResponseWriter, r *request) error {
	ps, err := s.st.ListPurchases(r.Context(), r.op.OrgID)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, view{Name: "contacts_index", Nav: "contacts", Title: "Contacts", Data: contactsIndex{Purchases: ps}})
	return nil
}

// contactForm is the "add a contact" form as filled in.
type contactForm struct{ Name, PhoneNumber, Timezone string }

// importReport is what a CSV import did: how many rows were added, how
// many were already contacts, and each row refused with why.
type importReport struct {
	File       string
	Added      int
	Duplicates []importRow
	Failed     []importRow
	// FileErrors spoil the whole file: nothing was imported.
	FileErrors []apperr.FieldError
	// All: the import was asked for all rows or none (mode=all), so a
	// refused row imported nothing.
	All bool
}

type importRow struct {
	Row         int
	PhoneNumber string
	Errors      []string
}

type contactsPage struct {
	Purchase phone.Purchase
	Contacts []contactRow
	Total    int
	First    int
	Last     int
	// PrevURL and NextURL are the neighbouring pages ("" at either end).
	PrevURL, NextURL string
	Form             contactForm
	Errs             *formErrors
	Import           *importReport
	Added            string // the notice after a contact was added or a file imported
}

type contactRow struct {
	phone.Contact
	Meta   string
	Delete *confirmForm
}

// ownPurchase reads the path's purchased number of the operator's
// organization; another organization's is not found.
func (s *Server) ownPurchase(r *request) (phone.Purchase, error) {
	return own(r, id.Purchase, "number", s.st.GetPurchase)
}

// contactsOf renders a number's contacts page, with the form and report
// given; status is the response's.
func (s *Server) contactsOf(w http.ResponseWriter, r *request, status int, p contactsPage) error {
	n := pageParam(r)
	cs, total, err := s.st.ListContacts(r.Context(), r.op.OrgID, p.Purchase.ID, store.Page{Page: n, PageSize: contactsPageSize})
	if err != nil {
		return err
	}
	base := "/ui/contacts/" + p.Purchase.ID
	for _, c := range cs {
		row := contactRow{Contact: c, Delete: &confirmForm{Label: "Delete", Action: base + "/" + c.ID + "/delete",
			Question: "Delete " + c.PhoneNumber + " from this number's contacts?"}}
		if m := string(c.Metadata); m != "{}" && m != "null" {
			row.Meta = m
		}
		p.Contacts = append(p.Contacts, row)
	}
	p.Total = total
	if len(cs) > 0 {
		p.First, p.Last = (n-1)*contactsPageSize+1, (n-1)*contactsPageSize+len(cs)
	}
	p.PrevURL, p.NextURL = pager(base, n, contactsPageSize, len(cs), total)
	s.render(w, r, status, view{Name: "contacts", Nav: "contacts", Title: "Contacts of " + p.Purchase.Number, Data: p})
	return nil
}

func (s *Server) showContacts(w http.ResponseWriter, r *request) error {
	pu, err := s.ownPurchase(r)
	if err != nil {
		return err
	}
	p := contactsPage{Purchase: pu}
	if n := r.URL.Query().Get("added"); n != "" {
		p.Added = n + " contact(s) added."
	}
	return s.contactsOf(w, r, http.StatusOK, p)
}

// addContact adds one contact, checked as the REST API checks each.
func (s *Server) addContact(w http.ResponseWriter, r *request) error {
	pu, err := s.ownPurchase(r)
	if err != nil {
		return err
	}
	f := contactForm{Name: strings.TrimSpace(r.PostForm.Get("name")), PhoneNumber: strings.TrimSpace(r.PostForm.Get("phoneNumber")),
		Timezone: strings.TrimSpace(r.PostForm.Get("timezone"))}
	c := phone.Contact{Name: f.Name, PhoneNumber: f.PhoneNumber, Timezone: f.Timezone}
	var errs apperr.Fields
	phone.CheckContact(&c, "", &errs)
	err = errs.Err()
	if err == nil {
		c.ID, c.CreatedAt = id.New(id.Contact), s.cfg.Now().UTC()
		var dups []int
		if _, dups, err = s.st.AddContacts(r.Context(), r.op.OrgID, pu.ID, []phone.Contact{c}); err == nil {
			if len(dups) == 0 {
				return seeOther(w, r, "/ui/contacts/"+pu.ID+"?added=1")
			}
			err = apperr.Invalidf("phoneNumber", "%s is already a contact of this number", c.PhoneNumber)
		}
	}
	fe, ok := userError(err, nil)
	if !ok {
		return err
	}
	return s.contactsOf(w, r, errorStatus(err), contactsPage{Purchase: pu, Form: f, Errs: fe})
}

// importContacts imports a CSV file: the rows that pass the REST API's
// checks are added, and the page lists each refused row with why.
func (s *Server) importContacts(w http.ResponseWriter, r *request) error {
	pu, err := s.ownPurchase(r)
	if err != nil {
		return err
	}
	if r.MultipartForm == nil || len(r.MultipartForm.File["file"]) == 0 {
		fe, _ := userError(apperr.Invalidf("file", "choose a CSV file to import"), nil)
		return s.contactsOf(w, r, http.StatusBadRequest, contactsPage{Purchase: pu, Errs: fe})
	}
	fh := r.MultipartForm.File["file"][0]
	f, err := fh.Open()
	if err != nil {
		return fmt.Errorf("ui: open the uploaded file: %w", err)
	}
	body, err := io.ReadAll(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("ui: read the uploaded file: %w", err)
	}
	file := phone.ParseContactsCSV(body)
	// What is imported is the REST API's rule (phone.ContactsCSV.Import):
	// a spoilt file imports nothing; bad rows stop the good ones unless
	// the form asks for the good rows alone (the default, as ?partial=true).
	partial := r.FormValue("mode") != "all"
	rep := &importReport{File: fh.Filename, FileErrors: append(append(apperr.Fields{}, file.Header...), file.Tail...), All: !partial}
	rows, _ := file.Import(partial)
	for _, row := range file.Rows {
		if len(row.Errs) > 0 {
			ir := importRow{Row: row.Row, PhoneNumber: row.Contact.PhoneNumber}
			for _, e := range row.Errs {
				ir.Errors = append(ir.Errors, strings.TrimPrefix(e.Field, "rows["+strconv.Itoa(row.Row)+"].")+": "+e.Message)
			}
			rep.Failed = append(rep.Failed, ir)
		}
	}
	var good []phone.Contact
	var goodRows []int
	now := s.cfg.Now().UTC()
	for _, row := range rows {
		c := row.Contact
		c.ID, c.CreatedAt = id.New(id.Contact), now
		good = append(good, c)
		goodRows = append(goodRows, row.Row)
	}
	if len(good) > 0 {
		_, dups, err := s.st.AddContacts(r.Context(), r.op.OrgID, pu.ID, good)
		if err != nil {
			return err
		}
		rep.Added = len(good) - len(dups)
		for _, i := range dups {
			rep.Duplicates = append(rep.Duplicates, importRow{Row: goodRows[i], PhoneNumber: good[i].PhoneNumber,
				Errors: []string{"already a contact of this number: not added again"}})
		}
	}
	if len(rep.Failed) == 0 && len(rep.FileErrors) == 0 && len(rep.Duplicates) == 0 {
		return seeOther(w, r, "/ui/contacts/"+pu.ID+"?added="+strconv.Itoa(rep.Added))
	}
	status := http.StatusOK // some rows were imported: this page is their report
	if rep.Added == 0 {
		status = http.StatusBadRequest
	}
	return s.contactsOf(w, r, status, contactsPage{Purchase: pu, Import: rep})
}

func (s *Server) deleteContact(w http.ResponseWriter, r *request) error {
	pu, err := s.ownPurchase(r)
	if err != nil {
		return err
	}
	cid := r.PathValue("contact")
	if !id.Valid(id.Contact, cid) {
		return apperr.NotFoundf("no such contact")
	}
	if err := s.st.DeleteContact(r.Context(), r.op.OrgID, pu.ID, cid); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/contacts/"+pu.ID)
}
