// Package jsonobj reads a JSON object field by field, so that every bad
// field of a request is reported at once, named by its path ("model.provider",
// "tools[2].url"): wrong types, missing required fields, unknown fields. It
// is how the REST API reads its bodies, and how the dashboard reads the
// same documents (an assistant's JSON), so both say the same thing about
// the same input.
//
// Before anything is decoded, a body follows the text rules of package
// jsontext (shared with the gateway): a string (value or key) holding NUL,
// bytes that are not UTF-8 or a lone surrogate escape, and an object naming
// the same key twice are refused, naming the field.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"switchboard/internal/apperr"
	"switchboard/internal/jsontext"
)

// Object is one JSON object being read. Getters record errors in Errs
// and return zero values; call Done last, to report unknown fields.
type Object struct {
	prefix string
	raw    map[string]json.RawMessage
	used   map[string]bool
	// Errs collects the errors of the object and of the objects nested in
	// it; callers add their own checks to it.
	Errs *apperr.Fields
}

// Parse parses body as a JSON object. A body that is not a JSON
// object is one error on the field "body"; text the service does not keep
// (NUL, invalid UTF-8, lone surrogates) and repeated keys are an error on
// each field that has them (jsontext), before anything is decoded.
func Parse(body []byte) (*Object, error) {
	var errs apperr.Fields
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
		checkJSONText(t, &errs)
		if len(errs) > 0 {
			return nil, errs.Err()
		}
	}
	o := New("", body, "body", &errs)
	if o == nil {
		return nil, errs.Err()
	}
	return o, nil
}

// New reads data, the JSON object named field, whose fields' names are
// prefix+key ("model." for the object model); its errors go to errs. It
// returns nil (and records why) when data is not one JSON object.
func New(prefix string, data []byte, field string, errs *apperr.Fields) *Object {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		errs.Add(field, "is required: send a JSON object")
		return nil
	}
	if data[0] != '{' {
		errs.Add(field, "must be a JSON object")
		return nil
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		errs.Add(field, "is not valid JSON: %s", jsonErr(err))
		return nil
	}
	if dec.More() {
		errs.Add(field, "has data after the JSON object")
		return nil
	}
	return &Object{prefix: prefix, raw: raw, used: map[string]bool{}, Errs: errs}
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

func (o *Object) name(key string) string { return o.prefix + key }

// get returns the raw value of key, marking it known; null counts as absent.
func (o *Object) get(key string, required bool) (json.RawMessage, bool) {
	o.used[key] = true
	v, ok := o.raw[key]
	if !ok || string(v) == "null" {
		if required {
			o.Errs.Add(o.name(key), "is required")
		}
		return nil, false
	}
	return v, true
}

// Present reports whether key was sent at all (null included).
func (o *Object) Present(key string) bool {
	_, ok := o.raw[key]
	return ok
}

// Str reads a string; required refuses an absent, null or empty one.
func (o *Object) Str(key string, required bool) string {
	v, ok := o.get(key, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.Errs.Add(o.name(key), "must be a string")
		return ""
	}
	if required && s == "" {
		o.Errs.Add(o.name(key), "must not be empty")
	}
	return s
}

// Int reads a 32-bit integer, def when absent.
func (o *Object) Int(key string, required bool, def int) int {
	v, ok := o.get(key, required)
	if !ok {
		return def
	}
	var n json.Number
	if v[0] == '"' || json.Unmarshal(v, &n) != nil {
		o.Errs.Add(o.name(key), "must be an integer")
		return def
	}
	i, err := strconv.ParseInt(n.String(), 10, 32)
	if err != nil {
		o.Errs.Add(o.name(key), "must be an integer")
		return def
	}
	return int(i)
}

// Bool reads true or false, false when absent.
func (o *Object) Bool(key string) bool {
	v, ok := o.get(key, false)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		o.Errs.Add(o.name(key), "must be true or false")
		return false
	}
	return b
}

// Number reads a number, nil when absent.
func (o *Object) Number(key string) *float64 {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		o.Errs.Add(o.name(key), "must be a number")
		return nil
	}
	return &f
}

// Strings reads an array of strings, naming each bad element.
func (o *Object) Strings(key string, required bool) []string {
	v, ok := o.get(key, required)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		o.Errs.Add(o.name(key), "must be an array of strings")
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			o.Errs.Add(fmt.Sprintf("%s[%d]", o.name(key), i), "must be a string")
			continue
		}
		out = append(out, s)
	}
	if required && len(items) == 0 {
		o.Errs.Add(o.name(key), "must not be empty")
	}
	return out
}

// Objects reads an array of objects, each read with its index in its
// fields' names; a bad element is nil.
func (o *Object) Objects(key string, required bool) []*Object {
	v, ok := o.get(key, required)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		o.Errs.Add(o.name(key), "must be an array of objects")
		return nil
	}
	if required && len(items) == 0 {
		o.Errs.Add(o.name(key), "must not be empty")
	}
	out := make([]*Object, len(items))
	for i, it := range items {
		field := fmt.Sprintf("%s[%d]", o.name(key), i)
		out[i] = New(field+".", it, field, o.Errs)
	}
	return out
}

// Child reads a nested object, nil when absent or not an object.
func (o *Object) Child(key string) *Object {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	return New(o.name(key)+".", v, o.name(key), o.Errs)
}

// RawObject reads a nested value that must be a JSON object, kept raw.
func (o *Object) RawObject(key string) json.RawMessage {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	if bytes.TrimSpace(v)[0] != '{' {
		o.Errs.Add(o.name(key), "must be an object")
		return nil
	}
	return v
}

// Done reports the fields no getter asked for; nil does nothing.
func (o *Object) Done() {
	if o == nil {
		return
	}
	var unknown []string
	for k := range o.raw {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		o.Errs.Add(o.name(k), "is not a known field")
	}
}

// Skip marks key as known without reading it (a field that belongs to
// another variant of the object), so Done does not report it.
func (o *Object) Skip(key string) { o.used[key] = true }

// MaxTextErrors bounds how many text errors one body reports; the walk
// stops at the bound, so a body full of bad strings costs no more.
const MaxTextErrors = 100

// checkJSONText walks data (one JSON value) and adds an error for every
// string and object that breaks the text rules (the document itself, as
// for a key of the root object or nesting past encoding/json's limit, is
// the field "body"). It says nothing where data is not JSON: syntax errors
// are encoding/json's to report.
func checkJSONText(data []byte, errs *apperr.Fields) {
	for _, p := range jsontext.Check(data, jsontext.Limits{MaxProblems: MaxTextErrors}) {
		field := p.Path
		if field == "" {
			field = "body"
		}
		errs.Add(field, "%s", p.Message())
	}
}
