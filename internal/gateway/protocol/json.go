package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parseFrame checks that frame is exactly one JSON object in valid UTF-8,
// with no repeated key and no nesting deeper than MaxDepth at any level, and
// returns its members. encoding/json alone would accept the first two
// silently (replacing bad bytes, keeping the last duplicate), so a value
// could mean one thing here and another to the next reader of it.
func parseFrame(frame []byte) (map[string]json.RawMessage, *Error) {
	if len(bytes.TrimSpace(frame)) == 0 {
		return nil, frameError(CodeInvalidJSON, "frame is empty: send one JSON object with a \"type\"")
	}
	if !utf8.Valid(frame) {
		return nil, frameError(CodeInvalidJSON, "frame is not valid UTF-8")
	}
	if err := scan(frame); err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(frame, &members); err != nil {
		// scan accepted it, so this is unreachable; stay safe anyway.
		return nil, frameError(CodeInvalidJSON, "frame is not valid JSON: %v", err)
	}
	return members, nil
}

// scan walks frame token by token: syntax, top-level object, trailing data,
// duplicate keys and depth.
func scan(frame []byte) *Error {
	type level struct {
		object    bool
		expectKey bool
		keys      map[string]struct{}
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber() // numbers stay text: 1e999 is valid JSON, if useless
	var stack []level
	// valueDone marks the end of one value inside the current container.
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	first := true
	for {
		tok, err := dec.Token()
		if err != nil {
			return frameError(CodeInvalidJSON, "frame is not valid JSON: %s", syntaxMessage(err))
		}
		if first {
			if d, ok := tok.(json.Delim); !ok || d != '{' {
				return frameError(CodeInvalidJSON, "frame must be a JSON object, got %s", tokenKind(tok))
			}
			first = false
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) == MaxDepth {
					return frameError(CodeInvalidJSON, "frame nests objects and arrays deeper than %d levels", MaxDepth)
				}
				stack = append(stack, level{object: t == '{', expectKey: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				valueDone()
			}
		case string:
			if top := &stack[len(stack)-1]; top.object && top.expectKey {
				if _, dup := top.keys[t]; dup {
					return frameError(CodeInvalidJSON, "frame repeats the key %q in one object", t)
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[t] = struct{}{}
				top.expectKey = false
				continue
			}
			valueDone()
		default:
			valueDone()
		}
		if len(stack) == 0 {
			break
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return frameError(CodeInvalidJSON, "frame has data after the JSON object")
	}
	return nil
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

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "something else"
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
