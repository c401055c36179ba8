package protocol

import (
	"errors"
	"fmt"
)

// Error codes sent in the `error` event. The first four come from Decode;
// the others from the gateway. Clients should treat an unknown code like
// internal: read `fatal` to know whether the call goes on.
const (
	// CodeInvalidJSON: the frame is not one JSON object (or nests deeper
	// than MaxDepth, or has a key of its own that is not valid text).
	CodeInvalidJSON = "invalid_json"
	// CodeUnknownType: `type` names no client event of this version.
	CodeUnknownType = "unknown_type"
	// CodeInvalidField: a field of a known event is missing, of the wrong
	// JSON type or out of range, or any member holds text the rules refuse
	// (NUL, invalid UTF-8, a lone surrogate escape: package jsontext) or is
	// given twice; Field names it.
	CodeInvalidField = "invalid_field"
	// CodeFrameTooLarge: a text or binary frame over MaxFrame. Fatal.
	CodeFrameTooLarge = "frame_too_large"
	// CodeUnexpectedBinary: a binary frame in a text-only session. Fatal.
	CodeUnexpectedBinary = "unexpected_binary"
	// CodeTooManyErrors: the bad-frame limit was passed. Fatal.
	CodeTooManyErrors = "too_many_errors"
	// CodeUnsupported: a valid request this server or session cannot honour
	// (textOnly false on a server without speech engines, a new audio format
	// after audio has flowed, textOnly true once audio is on). The session
	// goes on as it was. See AudioUnavailable, AudioStaysOn, AudioLocked.
	CodeUnsupported = "unsupported"
	// CodeInternal: the server failed the call. Fatal; call.ended follows.
	CodeInternal = "internal"
)

// Error is a problem with one frame, safe to show to the client. Decode
// returns it for every frame it rejects; the gateway sends it as an `error`
// event (ErrorEventFor) and, unless Fatal, reads on.
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Message says what was wrong and what was expected, naming the event
	// and the field.
	Message string
	// Field is the offending field's path ("text", "audio.sampleRate"),
	// empty for problems with the frame as a whole.
	Field string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Fatal reports whether the gateway must close the socket
// (CloseProtocolAbuse) after reporting e, rather than read on.
func (e *Error) Fatal() bool {
	switch e.Code {
	case CodeFrameTooLarge, CodeUnexpectedBinary, CodeTooManyErrors, CodeInternal:
		return true
	}
	return false
}

// ErrorEventFor turns an error into the `error` event that reports it. An
// *Error keeps its code, message and field; anything else is an internal
// failure whose details stay in the server's logs.
func ErrorEventFor(err error) ErrorEvent {
	var pe *Error
	if errors.As(err, &pe) {
		return ErrorEvent{Code: pe.Code, Message: pe.Message, Field: pe.Field, Fatal: pe.Fatal()}
	}
	return ErrorEvent{Code: CodeInternal, Message: "internal server error", Fatal: true}
}

func frameError(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// fieldError names the event and the field in the message, e.g.
// `user.text: field "text" must be a string, got number`.
func fieldError(event, field, format string, args ...any) *Error {
	return &Error{
		Code:    CodeInvalidField,
		Message: fmt.Sprintf("%s: field %q ", event, field) + fmt.Sprintf(format, args...),
		Field:   field,
	}
}
