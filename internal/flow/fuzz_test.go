package flow

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apperr"
)

// FuzzParse checks that Parse never panics, that it fails only with an
// Invalid error, and that a flow it accepts encodes to a flow that parses to
// the same thing and runs without tripping the runner's guards.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		bookingJSON,
		`{}`, `null`, `[]`, `"flow"`, `{"start": 1}`, `{"start": "a", "nodes": null}`,
		flowOf("bye", endOK),
		flowOf("greet", `"greet": {"type": "say", "text": "Hi.", "next": "greet"}`),
		flowOf("t", `"t": {"type": "tool", "tool": "x", "args": {"a": ["{{b}}", 1, null]}, "next": "t", "onError": "t"}`),
		flowOf("ask", askBye, endOK),
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "regex", "pattern": "(?P<x>a+)"}, "next": "ask"}],
			"noMatch": {"maxRetries": 0}}`),
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "number", "min": 3, "max": 1e308}, "next": "ask"}]}`),
		`{"start": "a", "nodes": {"a": {"type": "end", "success": "yes"}}}`,
		menuJSON,
		flowOf("x", `"x": {"type": "transfer", "destination": "sip:a@b", "onError": "k"}`, `"k": {"type": "sendDTMF", "digits": "{{v}}1", "next": "x"}`),
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "dtmf", "value": "1", "maxDigits": 3}, "next": "ask"}]}`),
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fl, err := Parse(raw)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || e.Kind != apperr.Invalid || len(e.Fields) == 0 {
				t.Fatalf("Parse(%q) = %v; want an Invalid error with fields", raw, err)
			}
			return
		}
		b, err := json.Marshal(fl)
		if err != nil {
			t.Fatalf("json.Marshal(Parse(%q)) = %v", raw, err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v; the encoding %s should parse", raw, err, b)
		}
		if !reflect.DeepEqual(compactArgs(again), compactArgs(fl)) {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %+v; want %+v", raw, again, fl)
		}
		r := fl.NewRunner(clockAt(tuesday), newYork)
		step := r.Start()
		for i := 0; i < 20 && !step.End; i++ {
			if (step.Say == failText || strings.HasSuffix(step.Say, " "+failText)) && fl.Nodes[step.Node].Type != typeSendDTMF { // digits that render to no keys fail by design
				t.Fatalf("a parsed flow %q tripped a runner guard: %+v", raw, step)
			}
			switch {
			case step.Tool != nil:
				step = r.ToolResult(json.RawMessage(`{"ok": true}`), nil)
			case step.SendDTMF != "":
				step = r.SentDTMF(nil)
			case step.Transfer != "":
				step = r.TransferResult(errors.New("refused"))
			case i%2 == 1:
				step = r.Digits([]string{"1", "0042#", "*"}[i%3])
			default:
				step = r.Input([]string{"yes", "no", "tomorrow at 3", "42", "cancel"}[i%5])
			}
		}
	})
}

// FuzzRunnerInput checks that no answer makes the booking flow panic or
// leave its graph, and that a date it captures is a real ISO date.
func FuzzRunnerInput(f *testing.F) {
	for _, seed := range []string{
		"", " ", "yes", "no", "next Tuesday", "December 1st", "12/01/2026", "2026-02-30",
		"in 99999999999999999999 days", "the 31st", "minus", "a hundred and", "twenty twenty twenty",
		"half past", "quarter to midnight", "3:99", "\xff\xfe", strings.Repeat("nine ", 1000),
		"tomorrow at half past three", "{{date}}", "Ｔｕｅｓｄａｙ", "in -3 days", "the 0th",
	} {
		f.Add(seed, "yes")
	}
	fl := mustParse(f, bookingJSON)
	f.Fuzz(func(t *testing.T, first, second string) {
		r := fl.NewRunner(clockAt(tuesday), newYork)
		r.Start()
		for _, in := range []string{first, second, first} {
			st := r.Input(in)
			if _, ok := fl.Nodes[st.Node]; !ok {
				t.Fatalf("Input(%q) = %+v; node not in the flow", in, st)
			}
			if st.Tool != nil {
				if !json.Valid(st.Tool.Args) {
					t.Fatalf("Input(%q) = tool args %q; not JSON", in, st.Tool.Args)
				}
				st = r.ToolResult(json.RawMessage(in), nil)
			}
			if d, ok := r.Vars()["date"]; ok {
				if _, err := time.Parse(time.DateOnly, d.(string)); err != nil {
					t.Fatalf("Input(%q): Vars()[date] = %q; not an ISO date", in, d)
				}
			}
			if st.End {
				return
			}
		}
	})
}

// FuzzParsers checks that the exported parsers never panic and return
// values in range.
func FuzzParsers(f *testing.F) {
	for _, seed := range []string{"3pm", "twenty three", "next Tuesday", "no, not that", "12/31/99", "1e400", "-", "0:00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ParseNumber(s)
		ParseYesNo(s)
		if d, ok := ParseDate(s, tuesday, newYork); ok && (d.Hour() != 0 || d.Location() != newYork) {
			t.Fatalf("ParseDate(%q) = %s; want a midnight in New York", s, d)
		}
		if h, m, ok := ParseTime(s); ok && (h < 0 || h > 23 || m < 0 || m > 59) {
			t.Fatalf("ParseTime(%q) = %d:%d; out of range", s, h, m)
		}
	})
}
