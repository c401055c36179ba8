package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"switchboard/internal/apperr"
)

// object reads one JSON object field by field, so that every bad field is
// reported at once: wrong types, missing required fields, unknown fields.
// Getters record errors in errs and return zero values; call done() last.
type object struct {
	prefix string
	raw    map[string]json.RawMessage
	used   map[string]bool
	errs   *apperr.Fields
}

// parseObject parses body as a JSON object. A body that is not a JSON
// object is one error on the field "body"; text the service does not keep
// (NUL, invalid UTF-8, lone surrogates) and repeated keys are an error on
// each field that has them (text.go), before anything is decoded.
func parseObject(body []byte) (*object, error) {
	var errs apperr.Fields
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' {
		checkJSONText(t, &errs)
		if len(errs) > 0 {
			return nil, errs.Err()
		}
	}
	o := newObject("", body, "body", &errs)
	if o == nil {
		return nil, errs.Err()
	}
	return o, nil
}

func newObject(prefix string, data []byte, field string, errs *apperr.Fields) *object {
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
	return &object{prefix: prefix, raw: raw, used: map[string]bool{}, errs: errs}
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	return err.Error()
}

func (o *object) name(key string) string { return o.prefix + key }

// get returns the raw value of key, marking it known; null counts as absent.
func (o *object) get(key string, required bool) (json.RawMessage, bool) {
	o.used[key] = true
	v, ok := o.raw[key]
	if !ok || string(v) == "null" {
		if required {
			o.errs.Add(o.name(key), "is required")
		}
		return nil, false
	}
	return v, true
}

// present reports whether key was sent at all (null included).
func (o *object) present(key string) bool {
	_, ok := o.raw[key]
	return ok
}

func (o *object) str(key string, required bool) string {
	v, ok := o.get(key, required)
	if !ok {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.errs.Add(o.name(key), "must be a string")
		return ""
	}
	if required && s == "" {
		o.errs.Add(o.name(key), "must not be empty")
	}
	return s
}

func (o *object) integer(key string, required bool, def int) int {
	v, ok := o.get(key, required)
	if !ok {
		return def
	}
	var n json.Number
	if v[0] == '"' || json.Unmarshal(v, &n) != nil {
		o.errs.Add(o.name(key), "must be an integer")
		return def
	}
	i, err := strconv.ParseInt(n.String(), 10, 32)
	if err != nil {
		o.errs.Add(o.name(key), "must be an integer")
		return def
	}
	return int(i)
}

func (o *object) boolean(key string) bool {
	v, ok := o.get(key, false)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		o.errs.Add(o.name(key), "must be true or false")
		return false
	}
	return b
}

func (o *object) number(key string) *float64 {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		o.errs.Add(o.name(key), "must be a number")
		return nil
	}
	return &f
}

func (o *object) strings(key string, required bool) []string {
	v, ok := o.get(key, required)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		o.errs.Add(o.name(key), "must be an array of strings")
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		var s string
		if err := json.Unmarshal(it, &s); err != nil {
			o.errs.Add(fmt.Sprintf("%s[%d]", o.name(key), i), "must be a string")
			continue
		}
		out = append(out, s)
	}
	if required && len(items) == 0 {
		o.errs.Add(o.name(key), "must not be empty")
	}
	return out
}

// objects returns the elements of an array of objects.
func (o *object) objects(key string, required bool) []*object {
	v, ok := o.get(key, required)
	if !ok {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		o.errs.Add(o.name(key), "must be an array of objects")
		return nil
	}
	if required && len(items) == 0 {
		o.errs.Add(o.name(key), "must not be empty")
	}
	out := make([]*object, len(items))
	for i, it := range items {
		field := fmt.Sprintf("%s[%d]", o.name(key), i)
		out[i] = newObject(field+".", it, field, o.errs)
	}
	return out
}

// child returns a nested object, or nil when absent or not an object.
func (o *object) child(key string) *object {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	return newObject(o.name(key)+".", v, o.name(key), o.errs)
}

// rawObject returns a nested value that must be a JSON object, kept as raw JSON.
func (o *object) rawObject(key string) json.RawMessage {
	v, ok := o.get(key, false)
	if !ok {
		return nil
	}
	if bytes.TrimSpace(v)[0] != '{' {
		o.errs.Add(o.name(key), "must be an object")
		return nil
	}
	return v
}

// done reports the fields that no getter asked for.
func (o *object) done() {
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
		o.errs.Add(o.name(k), "is not a known field")
	}
}
