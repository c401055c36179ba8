package analysis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names the schema inside the compiler. It is a URN so that
// nothing resolves it against the working directory or the network.
const schemaURL = "urn:switchboard:structured-data-schema"

// maxProblems bounds how many problems an error lists; a schema or a value
// can fail in many places at once and a note should stay readable.
const maxProblems = 8

// maxRefHops bounds how many "$ref"s Structured follows to find the type of
// a property (a cycle of references must not hang it).
const maxRefHops = 8

// SchemaError says why a structured data schema cannot be used.
type SchemaError struct {
	// Problems each say where in the schema ("at '/type'") and what is wrong.
	Problems []string
	err      error
}

func (e *SchemaError) Error() string {
	return "structured data schema is not valid JSON Schema (draft 2020-12): " + strings.Join(e.Problems, "; ")
}

func (e *SchemaError) Unwrap() error { return e.err }

// DataError says why the captured values do not satisfy the schema.
type DataError struct {
	// Problems each say where in the data ("at '/guests'") and what is wrong.
	Problems []string
	err      error
}

func (e *DataError) Error() string {
	return "structured data does not match the schema: " + strings.Join(e.Problems, "; ")
}

func (e *DataError) Unwrap() error { return e.err }

// ValidSchema reports whether schema can be used as an assistant's structured
// data schema: JSON, a JSON Schema that compiles under draft 2020-12 (unless
// it names another draft in "$schema"), references only inside itself, and an
// object at the root, since structured data is an object of named values. An
// empty or null schema means "none" and is valid. The error is a
// *SchemaError naming each problem.
func ValidSchema(schema json.RawMessage) error {
	if !hasSchema(schema) {
		return nil
	}
	_, _, err := compile(schema)
	return err
}

// Structured fills the schema's top-level properties from the flow's
// variables and validates the result against the schema.
//
// A property takes the variable of the same name, or failing that the one
// whose name matches ignoring case, "_", "-" and spaces (guest_count for
// guestCount). Values are converted where the property's "type" asks and the
// conversion is unambiguous: a number or integer from "3" or "1,200", a
// boolean from "yes"/"no"/"true"/"false"/1/0, a string from a number or a
// boolean, a time.Time to RFC 3339 (a "date" format gets the day only), a
// string to the one "enum" value it equals ignoring case. Nested objects and
// arrays are converted the same way. Numbers come out as float64, as
// encoding/json decodes them. Properties without a variable, or whose
// variable is nil or blank, are left out; variables the schema does not name
// are ignored.
//
// An empty or null schema gives nil data and no error. A schema that does not
// compile gives a *SchemaError; data that does not validate gives a
// *DataError and no data.
func Structured(schema json.RawMessage, vars map[string]any) (map[string]any, error) {
	if !hasSchema(schema) {
		return nil, nil
	}
	sch, root, err := compile(schema)
	if err != nil {
		return nil, err
	}
	data := map[string]any{}
	props, _ := resolve(root, root)["properties"].(map[string]any)
	byFold := foldIndex(vars)
	for _, name := range sortedKeys(props) {
		v, ok := vars[name]
		if k, folded := byFold[fold(name)]; !ok && folded {
			v, ok = vars[k], true
		}
		if !ok || noValue(v) {
			continue
		}
		node, _ := props[name].(map[string]any)
		if t, isTime := v.(time.Time); isTime {
			v = timeString(t, resolve(root, node))
		}
		jv, err := toJSON(v)
		if err != nil {
			return nil, &DataError{Problems: []string{fmt.Sprintf("at '/%s': the flow variable cannot be represented as JSON: %v", name, err)}, err: err}
		}
		data[name] = coerce(jv, node, root, 0)
	}
	if err := sch.Validate(data); err != nil {
		return nil, &DataError{Problems: problems(err), err: err}
	}
	return data, nil
}

// hasSchema reports whether a plan carries a schema at all.
func hasSchema(schema json.RawMessage) bool {
	s := bytes.TrimSpace(schema)
	return len(s) > 0 && string(s) != "null"
}

// compile parses and compiles schema, returning the compiled schema and its
// document (numbers as json.Number).
func compile(schema json.RawMessage) (*jsonschema.Schema, map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, nil, &SchemaError{Problems: []string{"not valid JSON: " + err.Error()}, err: err}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, &SchemaError{Problems: []string{fmt.Sprintf("at '': got %s, want an object schema", jsonKind(doc))}}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, nil, &SchemaError{Problems: []string{clean(err.Error())}, err: err}
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, nil, &SchemaError{Problems: problems(err), err: err}
	}
	if types := typesOf(root); len(types) > 0 && !slices.Contains(types, "object") {
		return nil, nil, &SchemaError{Problems: []string{fmt.Sprintf(`at '/type': got %q, want "object": structured data is an object of named values`, strings.Join(types, ", "))}}
	}
	return sch, root, nil
}

// refusingLoader keeps "$ref" inside the schema: an assistant's schema comes
// from an API client, and following its references would let it read this
// server's files or make it fetch URLs. The JSON Schema meta-schemas are
// built into the library and still load.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, errors.New(`only references inside the schema (such as "#/$defs/name") are allowed`)
}

// problems flattens a compile or validation error into one line per failed
// keyword, sorted (so by location) because the library reports the
// properties of an object in map order and a note must be deterministic.
func problems(err error) []string {
	var out []string
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	var le *jsonschema.LoadURLError
	switch {
	case errors.As(err, &sve) && errors.As(sve.Err, &ve), errors.As(err, &ve):
		out = leaves(ve, nil)
	case errors.As(err, &le):
		out = []string{fmt.Sprintf("reference %q: %v", clean(le.URL), le.Err)}
	default:
		out = []string{clean(err.Error())}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxProblems {
		out = append(out[:maxProblems], fmt.Sprintf("and %d more", len(out)-maxProblems))
	}
	return out
}

// leaves collects the messages of the innermost errors: the parents only say
// "allOf failed".
func leaves(e *jsonschema.ValidationError, out []string) []string {
	if len(e.Causes) == 0 {
		return append(out, clean(e.Error()))
	}
	for _, c := range e.Causes {
		out = leaves(c, out)
	}
	return out
}

// clean drops the internal schema name from a library message.
func clean(s string) string {
	s = strings.ReplaceAll(s, schemaURL+"#", "#")
	return strings.ReplaceAll(s, schemaURL, "the schema")
}

// resolve follows local "$ref"s ("#/$defs/x") from node, so a property
// declared by reference still has a type to convert to.
func resolve(root, node map[string]any) map[string]any {
	for range maxRefHops {
		ref, _ := node["$ref"].(string)
		ptr, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return node
		}
		next, ok := pointer(root, ptr).(map[string]any)
		if !ok {
			return node
		}
		node = next
	}
	return node
}

// pointer evaluates a JSON pointer (RFC 6901) in doc; nil when it does not
// resolve.
func pointer(doc any, ptr string) any {
	if ptr == "" {
		return doc
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch d := doc.(type) {
		case map[string]any:
			doc = d[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(d) {
				return nil
			}
			doc = d[i]
		default:
			return nil
		}
	}
	return doc
}

// typesOf is a schema's "type" as a list.
func typesOf(node map[string]any) []string {
	switch t := node["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// coerce converts v (a value as encoding/json decodes it) towards what node
// asks for; what it cannot convert it returns unchanged for validation to
// report.
func coerce(v any, node, root map[string]any, depth int) any {
	if node == nil || depth > 32 {
		return v
	}
	node = resolve(root, node)
	if types := typesOf(node); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return isType(v, t) }) {
		for _, t := range types {
			if c, ok := convert(v, t); ok {
				v = c
				break
			}
		}
	}
	v = matchEnum(v, node)
	switch x := v.(type) {
	case map[string]any:
		props, _ := node["properties"].(map[string]any)
		for k, item := range x {
			if sub, ok := props[k].(map[string]any); ok {
				x[k] = coerce(item, sub, root, depth+1)
			}
		}
	case []any:
		if items, ok := node["items"].(map[string]any); ok {
			for i, item := range x {
				x[i] = coerce(item, items, root, depth+1)
			}
		}
	}
	return v
}

// isType reports whether a decoded JSON value is of JSON Schema type t.
func isType(v any, t string) bool {
	switch x := v.(type) {
	case nil:
		return t == "null"
	case bool:
		return t == "boolean"
	case string:
		return t == "string"
	case float64:
		return t == "number" || (t == "integer" && x == math.Trunc(x))
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	}
	return false
}

// convert turns v into type t when that is unambiguous.
func convert(v any, t string) (any, bool) {
	switch x := v.(type) {
	case string:
		switch t {
		case "number":
			return parseNumber(x)
		case "integer":
			if f, ok := parseNumber(x); ok && f == math.Trunc(f) {
				return f, true
			}
		case "boolean":
			return parseBool(x)
		}
	case float64:
		switch t {
		case "string":
			return strconv.FormatFloat(x, 'f', -1, 64), true
		case "boolean":
			if x == 0 || x == 1 {
				return x == 1, true
			}
		}
	case bool:
		if t == "string" {
			return strconv.FormatBool(x), true
		}
	}
	return nil, false
}

// matchEnum replaces a string that equals exactly one of node's "enum"
// strings ignoring case and surrounding space with that value.
func matchEnum(v any, node map[string]any) any {
	s, ok := v.(string)
	enum, _ := node["enum"].([]any)
	if !ok || len(enum) == 0 || slices.Contains(enum, v) {
		return v
	}
	var found any
	for _, e := range enum {
		if es, ok := e.(string); ok && strings.EqualFold(es, strings.TrimSpace(s)) {
			if found != nil {
				return v
			}
			found = es
		}
	}
	if found == nil {
		return v
	}
	return found
}

var (
	thousands  = regexp.MustCompile(`^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$`)
	plainFloat = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)
)

// parseNumber reads a decimal number as a person or a flow writes it ("3",
// "-2.5", "1,200", "+4"); not hex, not "NaN", not "Inf".
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if thousands.MatchString(s) {
		s = strings.ReplaceAll(s, ",", "")
	}
	if !plainFloat.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

var (
	yesWords = set("yes", "y", "yeah", "yep", "yup", "true", "t", "1", "sure", "correct", "affirmative", "ok", "okay", "of course", "certainly", "definitely", "absolutely")
	noWords  = set("no", "n", "nope", "nah", "false", "f", "0", "negative", "not really", "never")
)

// parseBool reads a yes or a no as a caller says it.
func parseBool(s string) (bool, bool) {
	w := strings.ToLower(strings.Trim(strings.TrimSpace(s), ".!?,"))
	switch {
	case yesWords[w]:
		return true, true
	case noWords[w]:
		return false, true
	}
	return false, false
}

// timeString formats t for a string property: the day for format "date",
// the time of day for "time", RFC 3339 otherwise.
func timeString(t time.Time, node map[string]any) string {
	switch node["format"] {
	case "date":
		return t.Format(time.DateOnly)
	case "time":
		return t.Format("15:04:05Z07:00")
	}
	return t.Format(time.RFC3339Nano)
}

// toJSON turns a Go value into what encoding/json decodes from it, so that
// validation and storage see the same value.
func toJSON(v any) (any, error) {
	switch x := v.(type) {
	case string, bool, float64:
		return x, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// noValue reports whether a variable holds nothing worth recording.
func noValue(v any) bool {
	if v == nil {
		return true
	}
	s, ok := v.(string)
	return ok && strings.TrimSpace(s) == ""
}

// fold is a variable name without case and separators.
func fold(name string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', ' ', '.':
			return -1
		}
		return r
	}, strings.ToLower(name))
}

// foldIndex maps each folded variable name to the first variable name (in
// sorted order) that folds to it, so a look-up is deterministic.
func foldIndex(vars map[string]any) map[string]string {
	out := map[string]string{}
	for _, k := range sortedKeys(vars) {
		if _, ok := out[fold(k)]; !ok {
			out[fold(k)] = k
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}
