package phone

import (
	"strings"
	"testing"
)

// TestParseContactsCSV: each row carries its own errors, so the good rows
// can be told from the bad; what spoils the file is apart.
func TestParseContactsCSV(t *testing.T) {
	f := ParseContactsCSV([]byte("Name,Phone Number,plan\nAda,+1 415 555 0100,gold\nBob,not a number,\nCy,+14155550102,\n"))
	if len(f.Header) != 0 || len(f.Tail) != 0 || len(f.Rows) != 3 {
		t.Fatalf("ParseContactsCSV: header %v, tail %v, %d rows; want 3 rows and no file errors", f.Header, f.Tail, len(f.Rows))
	}
	if r := f.Rows[0]; len(r.Errs) != 0 || r.Contact.PhoneNumber != "+14155550100" || string(r.Contact.Metadata) != `{"plan":"gold"}` {
		t.Errorf("row 2 = %+v; want +14155550100 with plan gold and no error", r)
	}
	if r := f.Rows[1]; r.Row != 3 || len(r.Errs) != 1 || r.Errs[0].Field != "rows[3].phoneNumber" {
		t.Errorf("row 3 errors = %v; want one on rows[3].phoneNumber", r.Errs)
	}
	if got := f.Fields(); len(got) != 1 {
		t.Errorf("Fields() = %v; want the one row error", got)
	}

	for body, want := range map[string]string{
		"name\nAda\n":           "needs a phoneNumber column",
		"phone,number\n+1415\n": "appears twice",
		"phone\n":               "has no contact rows",
		"":                      "must be CSV with a header row",
	} {
		if got := ParseContactsCSV([]byte(body)).Fields(); len(got) == 0 || !strings.Contains(got[0].Message, want) {
			t.Errorf("ParseContactsCSV(%q) = %v; want %q", body, got, want)
		}
	}
}
