package httpapi

import (
	"errors"

	"switchboard/internal/apperr"
	"switchboard/internal/id"
)

// Ids are checked where they are decoded, before any query: a value that no
// id of its kind can be (see id.Valid) is answered like an unknown id, with
// no database round trip. PostgreSQL refuses NUL and invalid UTF-8 in a
// query, so without this such ids were 500s there and 404s on SQLite.

// pathID returns the path parameter name when it can be an id of the kind
// prefix, else the 404 the store gives an unknown one ("<what> not found").
func pathID(r *request, name, prefix, what string) (string, error) {
	v := r.PathValue(name)
	if !id.Valid(prefix, v) {
		return "", apperr.NotFoundf("%s not found", what)
	}
	return v, nil
}

// unknownIDs collects the ids of a body that cannot exist, each a 404 on
// its field, so a handler answers them like unknown ids before any query.
type unknownIDs struct {
	fields apperr.Fields
	what   string
}

// check records field unless v can be an id of the kind prefix.
func (u *unknownIDs) check(field, v, prefix, what string) {
	if v != "" && !id.Valid(prefix, v) {
		u.fields.Add(field, "%s not found", what)
		if u.what == "" {
			u.what = what
		}
	}
}

// err is the 404 naming every recorded field, or nil.
func (u *unknownIDs) err() error {
	if len(u.fields) == 0 {
		return nil
	}
	return &apperr.Error{Kind: apperr.NotFound, Message: u.what + " not found", Fields: u.fields}
}

// onField names field in a not-found error that names no field: the store
// says "phone purchase not found", the client needs to know which of its
// inputs named it.
func onField(err error, field string) error {
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.NotFound || len(e.Fields) > 0 {
		return err
	}
	out := *e
	out.Fields = []apperr.FieldError{{Field: field, Message: e.Message}}
	return &out
}
