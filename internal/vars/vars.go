// Package vars owns a call's variables: the {{path}} template language the
// assistant's texts are written in (Check, Render), the values a call runs
// with (ForCall, from the call, its contact, the seed's message and the
// request's own variables; Clock adds the time of day in the call's zone)
// and the limits on a request's variables (Request). It is a leaf: the
// standard library only (docs/ARCHITECTURE.md, "Per-call variables").
package vars

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Values are a call's variables: a JSON object decoded with numbers kept
// exact (json.Number).
type Values map[string]any

// Reserved are the names the server sets; a request may not.
var Reserved = []string{"call", "contact", "message", "timezone", "now", "today", "date", "time"}

// Limits on a request's variables.
const (
	MaxNames   = 64
	MaxBytes   = 8 << 10
	MaxNameLen = 64
)

// ref is one parsed {{…}} reference.
type ref struct {
	path     []string
	fallback string
	hasFB    bool
}

// scan finds the next reference of s at or after i: the offsets of its
// "{{" and of the byte after its "}}", and the reference; ok false when
// s has no "{{" from i on. A "{{" that opens no well-formed reference is
// returned with err set and end just past it.
func scan(s string, i int) (start, end int, r ref, err error, ok bool) {
	j := strings.Index(s[i:], "{{")
	if j < 0 {
		return 0, 0, ref{}, nil, false
	}
	start = i + j
	body := s[start+2:]
	k := strings.Index(body, "}}")
	if k < 0 {
		return start, start + 2, ref{}, fmt.Errorf("byte %d: {{ is not closed by }}", start), true
	}
	end = start + 2 + k + 2
	inner := body[:k]
	expr, fb, hasFB := strings.Cut(inner, "|")
	expr = strings.TrimSpace(expr)
	if strings.Contains(fb, "{{") {
		return start, start + 2, ref{}, fmt.Errorf("byte %d: a fallback may not hold {{", start), true
	}
	path, perr := parsePath(expr)
	if perr != "" {
		return start, start + 2, ref{}, fmt.Errorf("byte %d: {{%s}}: %s", start, inner, perr), true
	}
	return start, end, ref{path: path, fallback: strings.TrimSpace(fb), hasFB: hasFB}, nil, true
}

// parsePath reads name(.segment)*: a name, then names or array indexes.
func parsePath(expr string) ([]string, string) {
	if expr == "" {
		return nil, "names no variable"
	}
	path := strings.Split(expr, ".")
	for i, p := range path {
		switch {
		case p == "":
			return nil, "has an empty path segment"
		case i == 0 && !isName(p):
			return nil, fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", p)
		case i > 0 && !isName(p) && !isIndex(p):
			return nil, fmt.Sprintf("%q is neither a field name nor an array index", p)
		}
	}
	return path, ""
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

func isIndex(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// Check reports the first "{{" of s that opens no well-formed reference.
func Check(s string) error {
	for i := 0; ; {
		_, end, _, err, ok := scan(s, i)
		if !ok {
			return nil
		}
		if err != nil {
			return err
		}
		i = end
	}
}

// Strip returns s without its well-formed references, and how many it had
// (a sendDTMF node's digits are keys and references).
func Strip(s string) (string, int) {
	var b strings.Builder
	n := 0
	i := 0
	for {
		start, end, _, err, ok := scan(s, i)
		if !ok {
			b.WriteString(s[i:])
			return b.String(), n
		}
		b.WriteString(s[i:start])
		if err != nil {
			b.WriteString(s[start:end])
		} else {
			n++
		}
		i = end
	}
}

// Names lists the top-level variable names s refers to, in order, once each.
func Names(s string) []string {
	var out []string
	seen := map[string]bool{}
	for i := 0; ; {
		_, end, r, err, ok := scan(s, i)
		if !ok {
			return out
		}
		i = end
		if err == nil && !seen[r.path[0]] {
			seen[r.path[0]] = true
			out = append(out, r.path[0])
		}
	}
}

// Formatter writes the value a reference found as text; path is the
// reference's. Format is the default.
type Formatter func(path []string, v any) string

// Render fills the references of s from v. A value that is missing, null
// or an empty string renders as the reference's fallback (nothing without
// one); a malformed span is written as it stands. f nil is Format.
func Render(s string, v Values, f Formatter) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	if f == nil {
		f = func(_ []string, v any) string { return Format(v) }
	}
	var b strings.Builder
	i := 0
	for {
		start, end, r, err, ok := scan(s, i)
		if !ok {
			b.WriteString(s[i:])
			return b.String()
		}
		b.WriteString(s[i:start])
		if err != nil {
			b.WriteString(s[start:end])
			i = end
			continue
		}
		text := ""
		if val, found := Lookup(v, r.path); found && val != nil {
			text = f(r.path, val)
		}
		if text == "" {
			text = r.fallback
		}
		b.WriteString(text)
		i = end
	}
}

// Lookup follows path into v.
func Lookup(v Values, path []string) (any, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := v[path[0]]
	if !ok {
		return nil, false
	}
	for _, p := range path[1:] {
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[p]; !ok {
				return nil, false
			}
		case Values:
			if cur, ok = c[p]; !ok {
				return nil, false
			}
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(c) {
				return nil, false
			}
			cur = c[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// Format writes a value as text: strings as written, numbers and booleans
// in their JSON form, objects and arrays as JSON.
func Format(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	}
	b, err := Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// Marshal encodes JSON without HTML escaping (a tool receives "<" as "<").
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Decode reads a JSON object of variables, numbers kept exact. Empty input
// is no variables.
func Decode(raw []byte) (Values, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v Values
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Problem is one thing wrong with a request's variables: Field is its
// path under the request's field ("variables.call").
type Problem struct {
	Field, Message string
}

// Request checks a request's variables (field is the request's field,
// "variables"; raw is the object as sent, already through jsontext's text
// rules) and returns them decoded.
func Request(field string, raw json.RawMessage) (Values, []Problem) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '{' {
		return nil, []Problem{{field, "must be a JSON object of names to values"}}
	}
	if len(raw) > MaxBytes {
		return nil, []Problem{{field, fmt.Sprintf("is %d bytes; at most %d bytes of JSON are kept with a call", len(raw), MaxBytes)}}
	}
	v, err := Decode(raw)
	if err != nil {
		return nil, []Problem{{field, "must be a JSON object: " + err.Error()}}
	}
	var ps []Problem
	if len(v) > MaxNames {
		ps = append(ps, Problem{field, fmt.Sprintf("has %d names; at most %d", len(v), MaxNames)})
	}
	for _, name := range slices.Sorted(maps.Keys(v)) {
		f := field + "." + name
		switch {
		case !isName(name):
			ps = append(ps, Problem{f, "is not a variable name: letters, digits and _, not starting with a digit (templates name it {{" + name + "}})"})
		case len(name) > MaxNameLen:
			ps = append(ps, Problem{f, fmt.Sprintf("name is %d bytes; at most %d", len(name), MaxNameLen)})
		case isReserved(name):
			ps = append(ps, Problem{f, fmt.Sprintf("%q is set by the server (reserved: %s); choose another name", name, strings.Join(Reserved, ", "))})
		}
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return v, nil
}

func isReserved(name string) bool { return slices.Contains(Reserved, name) }

// Contact is what a call knows of its contact.
type Contact struct {
	ID, Name, PhoneNumber, Timezone string
	Metadata                        json.RawMessage
}

// Call is what a call's variables are made from when it is created.
type Call struct {
	ID, Type, Direction, From, To string
	Contact                       *Contact
	// Message is the schedule's message, else the number's allocation message.
	Message string
	// ScheduleTimezone is the schedule's zone, for a scheduled call.
	ScheduleTimezone string
	// Request are the request's own variables (Request checked them).
	Request Values
}

// ForCall makes a new call's stored variables.
func ForCall(c Call) Values {
	v := make(Values, len(c.Request)+4)
	for k, x := range c.Request {
		v[k] = x
	}
	callv := map[string]any{"id": c.ID, "type": c.Type}
	if c.Direction != "" {
		callv["direction"] = c.Direction
	}
	if c.From != "" {
		callv["from"] = c.From
	}
	if c.To != "" {
		callv["to"] = c.To
	}
	v["call"] = callv
	zone := c.ScheduleTimezone
	if ct := c.Contact; ct != nil {
		meta := any(map[string]any{})
		if m, err := Decode(ct.Metadata); err == nil && m != nil {
			meta = map[string]any(m)
		}
		v["contact"] = map[string]any{
			"id": ct.ID, "name": ct.Name, "firstName": FirstName(ct.Name),
			"phoneNumber": ct.PhoneNumber, "timezone": ct.Timezone, "metadata": meta,
		}
		if ct.Timezone != "" {
			zone = ct.Timezone
		}
	}
	if c.Message != "" {
		v["message"] = c.Message
	}
	if zone == "" {
		zone = "UTC"
	}
	v["timezone"] = zone
	return v
}

// FirstName is the first word of a name ("Ada" of "Ada Lovelace").
func FirstName(name string) string {
	f := strings.Fields(name)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// Zone is the call's zone (its timezone variable; UTC when it has none or
// the name is unknown to this machine).
func (v Values) Zone() *time.Location {
	name, _ := v["timezone"].(string)
	if name == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// Clock returns v with the time of day at t added in v's zone: today and
// now as they are said, date and time as written.
func (v Values) Clock(t time.Time) Values {
	out := make(Values, len(v)+4)
	for k, x := range v {
		out[k] = x
	}
	lt := t.In(v.Zone())
	out["today"] = lt.Format("Monday, January 2, 2006")
	if lt.Minute() == 0 {
		out["now"] = lt.Format("3 PM")
	} else {
		out["now"] = lt.Format("3:04 PM")
	}
	out["date"] = lt.Format(time.DateOnly)
	out["time"] = lt.Format("15:04")
	return out
}

// Running is what a call's templates render from once its conversation
// starts: its stored variables (raw, as the call record holds them) with
// the clock at now. Unreadable variables are none.
func Running(raw json.RawMessage, now time.Time) Values {
	v, err := Decode(raw)
	if err != nil || v == nil {
		v = Values{}
	}
	return v.Clock(now)
}

// JSON is v as stored ("" for none).
func (v Values) JSON() string {
	if len(v) == 0 {
		return ""
	}
	b, err := Marshal(map[string]any(v))
	if err != nil || !utf8.Valid(b) {
		return ""
	}
	return string(b)
}
