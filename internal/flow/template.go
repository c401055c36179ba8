package flow

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"switchboard/internal/vars"
)

// form is who a rendered value is for.
type form int

const (
	spoken  form = iota // node texts: dates and times in words, booleans as yes/no
	literal             // tool arguments: values as the variables hold them
)

// render fills the {{var}} references of s (the template language is
// package vars'): the runner's captured variables first, then the call's.
// Missing values render as the reference's fallback, or as nothing.
func render(s string, v vars.Values, kinds map[string]valueKind, f form) string {
	return vars.Render(s, v, func(path []string, x any) string {
		if len(path) == 1 && f == spoken {
			if s, ok := x.(string); ok {
				return speak(s, kinds[path[0]])
			}
		}
		return format(x, f)
	})
}

// format writes a variable's value as text: booleans said as yes/no in
// node texts, everything else as package vars writes it.
func format(v any, f form) string {
	if b, ok := v.(bool); ok && f == spoken {
		if b {
			return "yes"
		}
		return "no"
	}
	return vars.Format(v)
}

// speak writes a captured date, time or date-time the way it is said:
// "Tuesday, December 1, 2026", "3:30 PM", "3 PM",
// "Tuesday, December 1, 2026 at 3:30 PM".
func speak(s string, k valueKind) string {
	const (
		dateWords = "Monday, January 2, 2006"
		hourWords = "3 PM"
		timeWords = "3:04 PM"
	)
	clockWords := func(t time.Time) string {
		if t.Minute() == 0 {
			return t.Format(hourWords)
		}
		return t.Format(timeWords)
	}
	switch k {
	case dateValue:
		if t, err := time.Parse(time.DateOnly, s); err == nil {
			return t.Format(dateWords)
		}
	case timeValue:
		if t, err := time.Parse("15:04", s); err == nil {
			return clockWords(t)
		}
	case dateTimeValue:
		if t, err := time.Parse("2006-01-02T15:04", s); err == nil {
			return t.Format(dateWords) + " at " + clockWords(t)
		}
	}
	return s
}

// renderArgs fills the templates in every string of a tool's arguments (at
// any depth, keys excepted) and returns the JSON object.
func renderArgs(args any, values vars.Values, kinds map[string]valueKind) json.RawMessage {
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return render(v, values, kinds, literal)
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	if args == nil {
		return json.RawMessage("{}")
	}
	b, err := marshal(walk(args))
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// decodeJSON decodes JSON keeping numbers exact (json.Number).
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// marshal encodes JSON without HTML escaping (a tool receives "<" as "<").
func marshal(v any) ([]byte, error) { return vars.Marshal(v) }
