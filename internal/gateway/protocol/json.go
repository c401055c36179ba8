package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"switchboard/internal/jsontext"
)

// parseFrame checks that frame is exactly one JSON object that follows the
// text rules every client document follows (package jsontext: no NUL, no
// invalid UTF-8, no lone surrogate escape in any string, no key repeated in
// an object) and nests no deeper than MaxDepth, and returns its members.
// encoding/json alone would accept all of these silently (replacing bad
// text with U+FFFD, keeping the last duplicate), so a value could mean one
// thing here and another to the next reader of it, and a NUL would reach
// the database, which PostgreSQL refuses.
//
// A string or key that breaks the rules is CodeInvalidField naming its
// member ("text", "metadata.a"); what concerns the frame as a whole
// (syntax, nesting, a bad key of the top-level object) is CodeInvalidJSON.
// Problems are reported in frame order, the first only.
func parseFrame(frame []byte) (map[string]json.RawMessage, *Error) {
	t := bytes.TrimSpace(frame)
	if len(t) == 0 {
		return nil, frameError(CodeInvalidJSON, "frame is empty: send one JSON object with a \"type\"")
	}
	if t[0] != '{' {
		if err := syntax(t); err != nil {
			return nil, err
		}
		return nil, frameError(CodeInvalidJSON, "frame must be a JSON object, got %s", kind(t))
	}
	if ps := jsontext.Check(t, jsontext.Limits{MaxDepth: MaxDepth}); len(ps) > 0 {
		p := ps[0]
		if p.Path == "" {
			return nil, frameError(CodeInvalidJSON, "frame %s", p.Message())
		}
		// The path as it is (a member's name may hold any valid text), so
		// the message names exactly the field.
		return nil, &Error{Code: CodeInvalidField, Field: p.Path, Message: `field "` + p.Path + `" ` + p.Message()}
	}
	if err := syntax(t); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(t, &members); err != nil {
		// syntax accepted it, so this is unreachable; stay safe anyway.
		return nil, frameError(CodeInvalidJSON, "frame is not valid JSON: %v", err)
	}
	return members, nil
}

// syntax reports what makes t (not empty) something other than one JSON
// value, or nil.
func syntax(t []byte) *Error {
	if json.Valid(t) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return frameError(CodeInvalidJSON, "frame is not valid JSON: %s", syntaxMessage(err))
	}
	return frameError(CodeInvalidJSON, "frame has data after the JSON object")
}

func syntaxMessage(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (at byte %d)", se.Error(), se.Offset)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unexpected end of frame"
	}
	return err.Error()
}

// kind names the JSON type of a raw value for messages.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// object reads the members of one parsed JSON object with type checks.
// The first problem is kept in err and later reads return zero values, so
// a decoder reads every field in order and checks err once. Members nobody
// reads are ignored: that is how v1 stays forward compatible.
type object struct {
	event   string // the event type, named in messages
	prefix  string // path of a nested object, e.g. "audio."
	members map[string]json.RawMessage
	err     *Error
}

func (o *object) fail(key, format string, args ...any) {
	if o.err == nil {
		o.err = fieldError(o.event, o.prefix+key, format, args...)
	}
}

// value returns key's raw value; null counts as absent.
func (o *object) value(key string, required bool) (json.RawMessage, bool) {
	if o.err != nil {
		return nil, false
	}
	v, ok := o.members[key]
	if !ok || kind(v) == "null" {
		if required {
			o.fail(key, "is required")
		}
		return nil, false
	}
	return v, true
}

func (o *object) string(key string, required bool) (string, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return "", false
	}
	var s string
	if kind(v) != "string" || json.Unmarshal(v, &s) != nil {
		o.fail(key, "must be a string, got %s", kind(v))
		return "", false
	}
	return s, true
}

// id reads an optional-or-required string of at most MaxIDBytes.
func (o *object) id(key string, required bool) string {
	s, ok := o.string(key, required)
	switch {
	case !ok:
	case required && s == "":
		o.fail(key, "must not be empty")
	case len(s) > MaxIDBytes:
		o.fail(key, "must be at most %d bytes, got %d", MaxIDBytes, len(s))
	}
	return s
}

func (o *object) bool(key string, required bool) (bool, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return false, false
	}
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	o.fail(key, "must be a boolean (true or false), got %s", kind(v))
	return false, false
}

// int reads an integer written without fraction or exponent.
func (o *object) int(key string, required bool) (int64, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return 0, false
	}
	if kind(v) != "number" {
		o.fail(key, "must be an integer, got %s", kind(v))
		return 0, false
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		o.fail(key, "must be an integer written without fraction or exponent, within 64 bits, got %s", v)
		return 0, false
	}
	return n, true
}

// object reads a nested object; it reports problems under key's path.
func (o *object) object(key string, required bool) (*object, bool) {
	v, ok := o.value(key, required)
	if !ok {
		return nil, false
	}
	var members map[string]json.RawMessage
	if kind(v) != "object" || json.Unmarshal(v, &members) != nil {
		o.fail(key, "must be a JSON object, got %s", kind(v))
		return nil, false
	}
	return &object{event: o.event, prefix: o.prefix + key + ".", members: members}, true
}

// rawObject reads a nested object as compact JSON text, for values the protocol
// carries without interpreting.
func (o *object) rawObject(key string) json.RawMessage {
	v, ok := o.value(key, false)
	if !ok {
		return nil
	}
	if kind(v) != "object" {
		o.fail(key, "must be a JSON object, got %s", kind(v))
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		o.fail(key, "must be a JSON object: %v", err)
		return nil
	}
	return json.RawMessage(b.Bytes())
}

// merge adopts a nested reader's first error.
func (o *object) merge(n *object) {
	if o.err == nil && n != nil {
		o.err = n.err
	}
}

// oneOf renders a list of allowed values for messages.
func oneOf[T any](vs []T) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ", ")
}
