package phone

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/jsontext"
)

// MaxContactsPerUpload bounds one contacts upload (a JSON list or a CSV
// file), whoever sends it: the REST API or the dashboard.
const MaxContactsPerUpload = 10000

// CheckContact validates and normalizes one contact (its number to E.164,
// empty metadata to {}); field prefixes the names of its errors
// ("contacts[2]." or "rows[3].").
func CheckContact(c *Contact, field string, errs *apperr.Fields) {
	if len(c.Name) > 200 {
		errs.Add(field+"name", "must be at most 200 bytes")
	}
	if c.PhoneNumber == "" {
		if !errs.Has(field + "phoneNumber") {
			errs.Add(field+"phoneNumber", "is required")
		}
	} else if n, err := NormalizeE164(c.PhoneNumber); err != nil {
		errs.Add(field+"phoneNumber", "%s", err.Error())
	} else {
		c.PhoneNumber = n
	}
	if c.Timezone != "" {
		if err := CheckTimezone(c.Timezone); err != nil {
			errs.Add(field+"timezone", "%s", err.Error())
		}
	}
	if len(c.Metadata) > 16<<10 {
		errs.Add(field+"metadata", "must be at most 16 KiB")
	}
	if len(c.Metadata) == 0 {
		c.Metadata = json.RawMessage("{}")
	}
}

// CSVRow is one data row of a contacts CSV file: its contact, checked, and
// what is wrong with it (fields "rows[N].column"; none when it is good).
type CSVRow struct {
	// Row is the row's number in the file, the header being row 1.
	Row     int
	Contact Contact
	Errs    apperr.Fields
}

// ContactsCSV is a contacts CSV file read row by row, so that a caller may
// refuse the whole file on any error (the REST API) or import the good
// rows and show the bad ones (the dashboard).
type ContactsCSV struct {
	// Header holds what spoils the whole file before its rows: no header,
	// no phoneNumber column, a repeated or unreadable column name.
	Header apperr.Fields
	Rows   []CSVRow
	// Tail holds what ended the reading early: a row that is not CSV (the
	// rows before it are kept), too many rows, or no rows at all.
	Tail apperr.Fields
}

// Fields lists every error of the file in order: the header's, each
// row's, then what ended the reading.
func (f ContactsCSV) Fields() apperr.Fields {
	out := append(apperr.Fields(nil), f.Header...)
	for _, r := range f.Rows {
		out = append(out, r.Errs...)
	}
	return append(out, f.Tail...)
}

// ParseContactsCSV reads a contacts file: a header row naming the columns
// (name, phoneNumber, timezone, matched without case, spaces, _ or -;
// phone and number also mean phoneNumber; any other column goes into the
// contact's metadata as a string), then one contact a row. Cells follow
// the service's text rules (no NUL, valid UTF-8). It reads at most
// MaxContactsPerUpload rows.
func ParseContactsCSV(body []byte) ContactsCSV {
	var out ContactsCSV
	rd := csv.NewReader(bytes.NewReader(body))
	rd.FieldsPerRecord = 0
	header, err := rd.Read()
	if err != nil {
		out.Header.Add("body", "must be CSV with a header row naming the columns (name, phoneNumber, timezone, …): %v", err)
		return out
	}
	col := map[string]int{}
	names := make([]string, len(header)) // each column's name in errors
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if p := jsontext.TextProblem(h); p != "" {
			out.Header.Add("header", "column %d %s", i+1, p)
			h = strings.ToValidUTF8(strings.ReplaceAll(h, "\x00", "\uFFFD"), "\uFFFD")
		}
		key := strings.ToLower(strings.NewReplacer("_", "", " ", "", "-", "").Replace(h))
		switch key {
		case "phonenumber", "phone", "number":
			key = "phoneNumber"
		case "name", "timezone":
		default:
			key = "meta:" + h
		}
		if _, dup := col[key]; dup {
			out.Header.Add("header", "column %q appears twice", h)
		}
		col[key] = i
		names[i] = strings.TrimPrefix(key, "meta:")
	}
	if _, ok := col["phoneNumber"]; !ok {
		out.Header.Add("header", "needs a phoneNumber column")
		return out
	}
	for row := 2; ; row++ {
		rec, err := rd.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Tail.Add(fmt.Sprintf("rows[%d]", row), "is not valid CSV: %v", err)
			break
		}
		if len(out.Rows) >= MaxContactsPerUpload {
			out.Tail.Add("body", "must hold at most %d contacts per request", MaxContactsPerUpload)
			break
		}
		r := CSVRow{Row: row}
		field := fmt.Sprintf("rows[%d].", row)
		for i, v := range rec {
			if p := jsontext.TextProblem(v); p != "" { // rows have the header's width (FieldsPerRecord)
				r.Errs.Add(field+names[i], "%s", p)
				rec[i] = "" // reported: no second error on the same cell
			}
		}
		get := func(k string) string {
			if i, ok := col[k]; ok && i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		meta := map[string]string{}
		for k, i := range col {
			if name, ok := strings.CutPrefix(k, "meta:"); ok && i < len(rec) {
				meta[name] = rec[i]
			}
		}
		mb, _ := json.Marshal(meta)
		r.Contact = Contact{Name: get("name"), PhoneNumber: get("phoneNumber"), Timezone: get("timezone"), Metadata: mb}
		CheckContact(&r.Contact, field, &r.Errs)
		out.Rows = append(out.Rows, r)
	}
	if len(out.Rows) == 0 && len(out.Header) == 0 && len(out.Tail) == 0 {
		out.Tail.Add("body", "has no contact rows after the header")
	}
	return out
}

// Import decides what of the file is imported, the one rule of the REST
// API and the dashboard: nothing when the file itself is spoilt (Header,
// Tail); else, when partial, the good rows, with the bad rows' errors in
// refused; else (all or nothing) every row, or none when any row is bad,
// with every error in refused.
func (f ContactsCSV) Import(partial bool) (good []CSVRow, refused apperr.Fields) {
	if len(f.Header) > 0 || len(f.Tail) > 0 {
		return nil, f.Fields()
	}
	for _, r := range f.Rows {
		if len(r.Errs) > 0 {
			refused = append(refused, r.Errs...)
			continue
		}
		good = append(good, r)
	}
	if len(refused) > 0 && !partial {
		return nil, refused
	}
	return good, refused
}
