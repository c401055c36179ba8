package analysis

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// bookingSchema is an assistant's structured data schema for table bookings.
const bookingSchema = `{
	"type": "object",
	"properties": {
		"date":      {"type": "string", "format": "date"},
		"guests":    {"type": "integer", "minimum": 1},
		"deposit":   {"type": "number"},
		"highChair": {"type": "boolean"},
		"phone":     {"type": "string"},
		"status":    {"enum": ["booked", "waitlist"]},
		"seating":   {"$ref": "#/$defs/seating"},
		"extras":    {"type": "array", "items": {"type": "integer"}},
		"note":      {"type": ["string", "null"]}
	},
	"required": ["date"],
	"$defs": {"seating": {"type": "string", "enum": ["indoor", "terrace"]}}
}`

func TestStructured(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]any
		want map[string]any
	}{
		{
			name: "values already typed",
			vars: map[string]any{"date": "2026-03-14", "guests": 4, "highChair": true},
			want: map[string]any{"date": "2026-03-14", "guests": 4.0, "highChair": true},
		},
		{
			name: "conversions the schema asks for",
			vars: map[string]any{"date": "2026-03-14", "guests": "3", "deposit": "1,250.50", "highChair": "yes", "phone": 5551234},
			want: map[string]any{"date": "2026-03-14", "guests": 3.0, "deposit": 1250.5, "highChair": true, "phone": "5551234"},
		},
		{
			name: "spoken booleans and numbers",
			vars: map[string]any{"date": "2026-03-14", "guests": " 2 ", "highChair": "Nope."},
			want: map[string]any{"date": "2026-03-14", "guests": 2.0, "highChair": false},
		},
		{
			name: "missing and blank variables are left out",
			vars: map[string]any{"date": "2026-03-14", "phone": "  ", "note": nil},
			want: map[string]any{"date": "2026-03-14"},
		},
		{
			name: "variables the schema does not name are ignored",
			vars: map[string]any{"date": "2026-03-14", "internalScore": 9},
			want: map[string]any{"date": "2026-03-14"},
		},
		{
			name: "names match ignoring case and separators",
			vars: map[string]any{"DATE": "2026-03-14", "high_chair": "true"},
			want: map[string]any{"date": "2026-03-14", "highChair": true},
		},
		{
			name: "exact name wins over a folded one",
			vars: map[string]any{"date": "2026-03-14", "Date": "2026-01-01"},
			want: map[string]any{"date": "2026-03-14"},
		},
		{
			name: "enum ignoring case, through a $ref",
			vars: map[string]any{"date": "2026-03-14", "status": "Booked", "seating": " TERRACE"},
			want: map[string]any{"date": "2026-03-14", "status": "booked", "seating": "terrace"},
		},
		{
			name: "array items converted",
			vars: map[string]any{"date": "2026-03-14", "extras": []string{"1", "2"}},
			want: map[string]any{"date": "2026-03-14", "extras": []any{1.0, 2.0}},
		},
		{
			name: "time.Time for a date",
			vars: map[string]any{"date": time.Date(2026, 3, 14, 19, 0, 0, 0, time.UTC)},
			want: map[string]any{"date": "2026-03-14"},
		},
		{
			name: "type union",
			vars: map[string]any{"date": "2026-03-14", "note": 7},
			want: map[string]any{"date": "2026-03-14", "note": "7"},
		},
	}
	for _, tt := range tests {
		got, err := Structured(json.RawMessage(bookingSchema), tt.vars)
		if err != nil {
			t.Errorf("%s: Structured(bookingSchema, %v) error = %v, want nil", tt.name, tt.vars, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Structured(bookingSchema, %v) = %#v, want %#v", tt.name, tt.vars, got, tt.want)
		}
	}
}

func TestStructuredInvalid(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]any
		wantMsg string // a part of the error message
	}{
		{"enum violated", map[string]any{"date": "2026-03-14", "status": "cancelled"}, "at '/status': value must be one of 'booked', 'waitlist'"},
		{"required missing", map[string]any{"guests": 2}, "missing property 'date'"},
		{"nothing captured", nil, "missing property 'date'"},
		{"no conversion fits", map[string]any{"date": "2026-03-14", "guests": "a few"}, "at '/guests': got string, want integer"},
		{"not an integer", map[string]any{"date": "2026-03-14", "guests": "2.5"}, "at '/guests': got string, want integer"},
		{"minimum", map[string]any{"date": "2026-03-14", "guests": "0"}, "at '/guests': minimum"},
		{"NaN is not a number", map[string]any{"date": "2026-03-14", "deposit": "NaN"}, "at '/deposit': got string, want number"},
		{"unrepresentable value", map[string]any{"date": "2026-03-14", "guests": make(chan int)}, "at '/guests': the flow variable cannot be represented as JSON"},
	}
	for _, tt := range tests {
		got, err := Structured(json.RawMessage(bookingSchema), tt.vars)
		var de *DataError
		if !errors.As(err, &de) {
			t.Errorf("%s: Structured(bookingSchema, %v) = %v, %v; want a *DataError", tt.name, tt.vars, got, err)
			continue
		}
		if got != nil {
			t.Errorf("%s: Structured(bookingSchema, %v) data = %v, want nil with the error", tt.name, tt.vars, got)
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("%s: Structured(bookingSchema, %v) error = %q, want it to contain %q", tt.name, tt.vars, err, tt.wantMsg)
		}
	}
}

func TestStructuredNoSchema(t *testing.T) {
	for _, schema := range []string{"", "null", "  "} {
		got, err := Structured(json.RawMessage(schema), map[string]any{"date": "x"})
		if got != nil || err != nil {
			t.Errorf("Structured(%q, vars) = %v, %v; want nil, nil", schema, got, err)
		}
	}
	got, err := Structured(json.RawMessage(`{"type": 5}`), map[string]any{"date": "x"})
	var se *SchemaError
	if got != nil || !errors.As(err, &se) {
		t.Errorf("Structured(%q, vars) = %v, %v; want nil, *SchemaError", `{"type": 5}`, got, err)
	}
}

func TestValidSchema(t *testing.T) {
	tests := []struct {
		schema  string
		wantMsg string // "" for valid; else a part of the message
	}{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"type": "object"}`, ""},
		{bookingSchema, ""},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "string"}}}`, ""},
		{`{"type": ["object", "null"]}`, ""},
		{`{"type": 5}`, "at '/type': got number, want array"},
		{`{"type": 5}`, "at '/type': value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'"},
		{`{"type": "objekt"}`, "at '/type': value must be one of"},
		{`{"type": "object", "properties": {"a": {"minimum": "one"}}}`, "at '/properties/a/minimum': got string, want number"},
		{`{"type": "object", "properties": {"a": {"pattern": "("}}}`, "is not valid regex"},
		{`{"type": "object"`, "not valid JSON"},
		{`[1, 2]`, "got array, want an object schema"},
		{`true`, "got boolean, want an object schema"},
		{`{"type": "string"}`, `at '/type': got "string", want "object"`},
		{`{"$ref": "file:///etc/passwd"}`, `reference "file:///etc/passwd": only references inside the schema`},
		{`{"$ref": "https://example.com/schema.json"}`, "only references inside the schema"},
		{`{"$ref": "#/$defs/missing"}`, "not found"},
	}
	for _, tt := range tests {
		err := ValidSchema(json.RawMessage(tt.schema))
		if tt.wantMsg == "" {
			if err != nil {
				t.Errorf("ValidSchema(%s) = %v, want nil", tt.schema, err)
			}
			continue
		}
		var se *SchemaError
		if !errors.As(err, &se) {
			t.Errorf("ValidSchema(%s) = %v, want a *SchemaError", tt.schema, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.wantMsg) {
			t.Errorf("ValidSchema(%s) = %q, want it to contain %q", tt.schema, err, tt.wantMsg)
		}
		if strings.Contains(err.Error(), schemaURL) || strings.Contains(err.Error(), "file:///work") {
			t.Errorf("ValidSchema(%s) = %q, want no internal names or server paths", tt.schema, err)
		}
	}
}

func TestParseNumberAndBool(t *testing.T) {
	numbers := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"3", 3, true}, {" -2.5 ", -2.5, true}, {"+4", 4, true}, {"1,200", 1200, true}, {"1e3", 1000, true},
		{"NaN", 0, false}, {"Inf", 0, false}, {"0x10", 0, false}, {"1_000", 0, false}, {"12,34", 0, false},
		{"three", 0, false}, {"", 0, false}, {"1e400", 0, false},
	}
	for _, tt := range numbers {
		if got, ok := parseNumber(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseNumber(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	bools := []struct {
		in       string
		want, ok bool
	}{
		{"yes", true, true}, {"Yeah!", true, true}, {"TRUE", true, true}, {"1", true, true},
		{"no", false, true}, {"Nope.", false, true}, {"false", false, true}, {"0", false, true},
		{"maybe", false, false}, {"", false, false},
	}
	for _, tt := range bools {
		if got, ok := parseBool(tt.in); got != tt.want || ok != tt.ok {
			t.Errorf("parseBool(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzValidSchema(f *testing.F) {
	f.Add(bookingSchema)
	f.Add(`{"type": 5}`)
	f.Add(`{"$ref": "#"}`)
	f.Add(`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}`)
	f.Fuzz(func(t *testing.T, schema string) {
		err := ValidSchema(json.RawMessage(schema))
		data, serr := Structured(json.RawMessage(schema), map[string]any{"x": "1", "date": "yes"})
		if err != nil && (data != nil || serr == nil) {
			t.Fatalf("ValidSchema(%q) = %v but Structured = %v, %v", schema, err, data, serr)
		}
	})
}
