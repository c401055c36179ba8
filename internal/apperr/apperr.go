// Package apperr holds the few kinds of failure the service distinguishes.
// Domain and storage code return these; the HTTP layer maps each kind to one
// status in one table (internal/httpapi), so no handler picks a status itself.
package apperr

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Kind classifies an error by what the client should do about it.
type Kind int

const (
	// Internal is a server fault; the client may retry later.
	Internal Kind = iota
	// NotFound means the resource does not exist for the caller's organization.
	NotFound
	// Invalid means the request is malformed or fails validation; Fields say where.
	Invalid
	// Conflict means the request clashes with the current state (taken number,
	// idempotency key reused with another body, resource in use).
	Conflict
	// Unauthenticated means the API key is missing, unknown or revoked.
	Unauthenticated
	// PermissionDenied means the key lacks the scope the operation needs.
	PermissionDenied
	// RateLimited means the key spent its request budget; RetryAfter says when to come back.
	RateLimited
	// TooLarge means the request body exceeds the size limit.
	TooLarge
	// UnsupportedMediaType means the request body is not in an accepted format.
	UnsupportedMediaType
	// MethodNotAllowed means the path exists but not with this method.
	MethodNotAllowed
	// Unavailable means a dependency (database, provider) is down; retry later.
	Unavailable
)

var kindCodes = map[Kind]string{
	Internal:             "internal_error",
	NotFound:             "not_found",
	Invalid:              "invalid_request",
	Conflict:             "conflict",
	Unauthenticated:      "unauthenticated",
	PermissionDenied:     "permission_denied",
	RateLimited:          "rate_limited",
	TooLarge:             "payload_too_large",
	UnsupportedMediaType: "unsupported_media_type",
	MethodNotAllowed:     "method_not_allowed",
	Unavailable:          "unavailable",
}

// Code is the stable machine-readable name of the kind, as sent in error.code.
func (k Kind) Code() string { return kindCodes[k] }

// httpStatus is the one table from error kind to HTTP status, for the REST
// API and the dashboard alike.
var httpStatus = map[Kind]int{
	Internal:             http.StatusInternalServerError,
	NotFound:             http.StatusNotFound,
	Invalid:              http.StatusBadRequest,
	Conflict:             http.StatusConflict,
	Unauthenticated:      http.StatusUnauthorized,
	PermissionDenied:     http.StatusForbidden,
	RateLimited:          http.StatusTooManyRequests,
	TooLarge:             http.StatusRequestEntityTooLarge,
	UnsupportedMediaType: http.StatusUnsupportedMediaType,
	MethodNotAllowed:     http.StatusMethodNotAllowed,
	Unavailable:          http.StatusServiceUnavailable,
}

// HTTPStatus is the kind's HTTP status (500 for a kind it does not know).
func (k Kind) HTTPStatus() int {
	if st, ok := httpStatus[k]; ok {
		return st
	}
	return http.StatusInternalServerError
}

// HTTPStatus is err's HTTP status: its kind's, 500 when it is not an *Error.
func HTTPStatus(err error) int { return KindOf(err).HTTPStatus() }

// FieldError names one bad input field and what was expected of it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a classified error with a message safe to show to the client.
type Error struct {
	Kind    Kind
	Message string
	// Code overrides Kind.Code() when a more specific code helps clients
	// (for example "idempotency_key_reused").
	Code       string
	Fields     []FieldError
	RetryAfter time.Duration
	// Err is the underlying cause; it is logged, never sent to the client.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Message)
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "; %s: %s", f.Field, f.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrorCode is the code sent to the client.
func (e *Error) ErrorCode() string {
	if e.Code != "" {
		return e.Code
	}
	return e.Kind.Code()
}

// New returns an error of the given kind with a client-facing message.
func New(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Wrap classifies cause as kind with a client-facing message; cause is kept for logs.
func Wrap(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), Err: cause}
}

// NotFoundf is the error for a missing resource; it never says whether the
// resource exists in another organization.
func NotFoundf(format string, args ...any) *Error { return New(NotFound, format, args...) }

// Conflictf is the error for a request that clashes with current state.
func Conflictf(format string, args ...any) *Error { return New(Conflict, format, args...) }

// Fields is an accumulator of field errors; its Err is nil while it is empty.
type Fields []FieldError

// Add records that field is bad and what was expected.
func (f *Fields) Add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Has reports whether field already has an error.
func (f Fields) Has(field string) bool {
	for _, e := range f {
		if e.Field == field {
			return true
		}
	}
	return false
}

// Err returns an Invalid error listing every field, or nil when there are none.
func (f Fields) Err() error {
	if len(f) == 0 {
		return nil
	}
	msg := "invalid request: " + f[0].Field + ": " + f[0].Message
	if len(f) > 1 {
		msg = fmt.Sprintf("invalid request: %d fields are invalid", len(f))
	}
	return &Error{Kind: Invalid, Message: msg, Fields: append([]FieldError(nil), f...)}
}

// Invalidf is an Invalid error about one field.
func Invalidf(field, format string, args ...any) error {
	var f Fields
	f.Add(field, format, args...)
	return f.Err()
}

// KindOf returns the kind of err, Internal when it is not classified.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err is classified as kind.
func Is(err error, kind Kind) bool { return err != nil && KindOf(err) == kind }
