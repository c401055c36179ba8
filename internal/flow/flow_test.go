package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

// bookingJSON is the booking flow the package documentation starts from.
const bookingJSON = `{
  "start": "greet",
  "nodes": {
    "greet":   {"type": "say", "text": "Hi! I can book your appointment.", "next": "ask_date"},
    "ask_date":{"type": "ask", "text": "What day would suit you?",
                "branches": [{"match": {"kind": "date"}, "capture": "date", "next": "confirm"}],
                "noMatch": {"text": "Sorry, which day? For example, next Tuesday.", "maxRetries": 2, "next": "fail"}},
    "confirm": {"type": "ask", "text": "So {{date}}, is that right?",
                "branches": [{"match": {"kind": "yesno", "value": true}, "next": "book"},
                             {"match": {"kind": "yesno", "value": false}, "next": "ask_date"}]},
    "book":    {"type": "tool", "tool": "bookAppointment", "args": {"date": "{{date}}"}, "capture": "booking", "next": "bye", "onError": "fail"},
    "bye":     {"type": "end", "text": "You're booked for {{date}}. Goodbye!", "success": true},
    "fail":    {"type": "end", "text": "Sorry, I couldn't book that. Goodbye.", "success": false}
  }
}`

func mustParse(t testing.TB, raw string) *Flow {
	t.Helper()
	f, err := Parse(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("Parse(%s) = %v, want no error", raw, err)
	}
	return f
}

func TestParseBooking(t *testing.T) {
	f := mustParse(t, bookingJSON)
	if f.Start != "greet" || len(f.Nodes) != 6 {
		t.Fatalf("Parse(booking) = start %q, %d nodes; want greet, 6", f.Start, len(f.Nodes))
	}
	ask := f.Nodes["ask_date"]
	if ask.NoMatch == nil || ask.NoMatch.MaxRetries == nil || *ask.NoMatch.MaxRetries != 2 || ask.NoMatch.Next != "fail" {
		t.Errorf("Parse(booking).Nodes[ask_date].NoMatch = %+v; want maxRetries 2, next fail", ask.NoMatch)
	}
	if v := f.Nodes["confirm"].Branches[1].Match.Value; v == nil || *v {
		t.Errorf("Parse(booking).Nodes[confirm].Branches[1].Match.Value = %v; want false", v)
	}
	if got := string(f.Nodes["book"].Args); got != `{"date": "{{date}}"}` {
		t.Errorf("Parse(booking).Nodes[book].Args = %s; want the object as written", got)
	}

	// What Parse returns encodes back to a flow that parses to the same thing.
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatalf("json.Marshal(Parse(booking)) = %v", err)
	}
	again := mustParse(t, string(b))
	if !reflect.DeepEqual(compactArgs(again), compactArgs(f)) {
		t.Errorf("Parse(Marshal(Parse(booking))) = %+v; want %+v", again, f)
	}
}

// compactArgs strips insignificant space from every node's args, so flows
// that differ only there compare equal.
func compactArgs(f *Flow) *Flow {
	out := &Flow{Start: f.Start, Nodes: map[string]Node{}}
	for id, n := range f.Nodes {
		if len(n.Args) > 0 {
			var b strings.Builder
			var v any
			_ = json.Unmarshal(n.Args, &v)
			_ = json.NewEncoder(&b).Encode(v)
			n.Args = json.RawMessage(strings.TrimSpace(b.String()))
		}
		out.Nodes[id] = n
	}
	return out
}

// parseFields parses raw and returns the fields of its Invalid error.
func parseFields(t *testing.T, raw string) []apperr.FieldError {
	t.Helper()
	f, err := Parse(json.RawMessage(raw))
	if err == nil {
		t.Fatalf("Parse(%s) = %+v, nil; want an Invalid error", raw, f)
	}
	var e *apperr.Error
	if !errors.As(err, &e) || e.Kind != apperr.Invalid {
		t.Fatalf("Parse(%s) = %v; want an apperr Invalid error", raw, err)
	}
	if f != nil {
		t.Errorf("Parse(%s) returned a flow with its error", raw)
	}
	return e.Fields
}

func fieldNames(fs []apperr.FieldError) []string {
	var names []string
	for _, f := range fs {
		names = append(names, f.Field)
	}
	return names
}

// flowOf builds a flow document from node JSON, one "id": {...} per entry.
func flowOf(start string, nodes ...string) string {
	return fmt.Sprintf(`{"start": %q, "nodes": {%s}}`, start, strings.Join(nodes, ","))
}

const (
	endOK   = `"bye": {"type": "end", "text": "Bye.", "success": true}`
	askBye  = `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "any"}, "next": "bye"}]}`
	greetTo = `"greet": {"type": "say", "text": "Hi.", "next": "%s"}`
)

func TestParseRules(t *testing.T) {
	tests := []struct {
		rule string
		raw  string
		want []string // the exact fields reported
		msg  string   // a part of the first field's message
	}{
		{"not an object", `[1]`, []string{"flow"}, "JSON object"},
		{"null", `null`, []string{"flow"}, "JSON object"},
		{"not JSON", `{"start":`, []string{"flow"}, "JSON object"},
		{"unknown top-level field", `{"start": "bye", "nodes": {` + endOK + `}, "version": 2}`, []string{"flow.version"}, "start and nodes"},
		{"missing start", `{"nodes": {` + endOK + `}}`, []string{"flow.start"}, "required"},
		{"unknown start", flowOf("hello", endOK), []string{"flow.start"}, `unknown node "hello"`},
		{"missing nodes", `{"start": "bye"}`, []string{"flow.nodes"}, "required"},
		{"no nodes", `{"start": "bye", "nodes": {}}`, []string{"flow.nodes"}, "at least one"},
		{"unknown node type", flowOf("greet", fmt.Sprintf(greetTo, "x"), `"x": {"type": "jump", "next": "bye"}`, endOK),
			[]string{"flow.nodes.x.type"}, `not "jump"`},
		{"missing node type", flowOf("bye", `"bye": {"text": "Bye."}`), []string{"flow.nodes.bye.type"}, "required"},
		{"field of another node type", flowOf("bye", `"bye": {"type": "end", "text": "Bye.", "next": "bye"}`),
			[]string{"flow.nodes.bye.next"}, "not a field of an end node"},
		{"unknown node field", flowOf("bye", `"bye": {"type": "end", "txt": "Bye."}`), []string{"flow.nodes.bye.txt"}, "not a node field"},
		{"wrong JSON type", flowOf("greet", `"greet": {"type": "say", "text": 5, "next": "bye"}`, endOK),
			[]string{"flow.nodes.greet.text"}, "string"},
		{"null field", flowOf("greet", `"greet": {"type": "say", "text": "Hi.", "next": null}`, endOK),
			[]string{"flow.nodes.greet.next", "flow.nodes.bye"}, "string"},
		{"missing next", flowOf("greet", `"greet": {"type": "say", "text": "Hi."}`, endOK),
			[]string{"flow.nodes.greet.next", "flow.nodes.bye"}, "required"},
		{"unknown next", flowOf("greet", fmt.Sprintf(greetTo, "nowhere"), endOK),
			[]string{"flow.nodes.greet.next", "flow.nodes.bye"}, `unknown node "nowhere"`},
		{"unknown branch target", flowOf("confirm",
			`"confirm": {"type": "ask", "text": "Right?", "branches": [
				{"match": {"kind": "yesno", "value": true}, "next": "bye"},
				{"match": {"kind": "yesno", "value": false}, "next": "again"}]}`, endOK),
			[]string{"flow.nodes.confirm.branches[1].next"}, `unknown node "again"`},
		{"missing branch target", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "any"}}]}`),
			[]string{"flow.nodes.ask.branches[0].next"}, "required"},
		{"missing branch match", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match"}, "required"},
		{"unknown noMatch target", flowOf("ask", `"ask": {"type": "ask", "text": "Well?",
			"branches": [{"match": {"kind": "any"}, "next": "bye"}], "noMatch": {"next": "nope"}}`, endOK),
			[]string{"flow.nodes.ask.noMatch.next"}, `unknown node "nope"`},
		{"unknown onError target", flowOf("book", `"book": {"type": "tool", "tool": "book", "next": "bye", "onError": "oops"}`, endOK),
			[]string{"flow.nodes.book.onError"}, `unknown node "oops"`},
		{"unreachable node", flowOf("bye", endOK, `"orphan": {"type": "end", "text": "Lost."}`),
			[]string{"flow.nodes.orphan"}, `unreachable from the start node "bye"`},
		{"ask without branches", flowOf("ask", `"ask": {"type": "ask", "text": "Well?"}`),
			[]string{"flow.nodes.ask.branches"}, "at least one branch"},
		{"ask with empty branches", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": []}`),
			[]string{"flow.nodes.ask.branches"}, "at least one branch"},
		{"bad regex", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "regex", "pattern": "(a"}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.pattern"}, "RE2"},
		{"regex group not a variable", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "regex", "pattern": "(?P<1x>a)"}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.pattern"}, "group name"},
		{"regex without pattern", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "regex"}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.pattern"}, "required"},
		{"unknown match kind", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "vibes"}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.kind"}, "one of keywords"},
		{"field of another match kind", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "date", "min": 1}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.min"}, "not used by a date match"},
		{"min greater than max", flowOf("ask", `"ask": {"type": "ask", "text": "How many?", "branches": [{"match": {"kind": "number", "min": 10, "max": 2}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.min"}, "greater than max"},
		{"keywords without any", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "keywords", "any": []}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.any"}, "at least one"},
		{"keyword without a word", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "keywords", "any": ["stop", "?!"]}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].match.any[1]"}, "word"},
		{"empty say text", flowOf("greet", `"greet": {"type": "say", "text": "  ", "next": "bye"}`, endOK),
			[]string{"flow.nodes.greet.text"}, "blank"},
		{"missing ask text", flowOf("ask", `"ask": {"type": "ask", "branches": [{"match": {"kind": "any"}, "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.text"}, "required"},
		{"tool without name", flowOf("book", `"book": {"type": "tool", "next": "bye"}`, endOK),
			[]string{"flow.nodes.book.tool"}, "required"},
		{"bad tool name", flowOf("book", `"book": {"type": "tool", "tool": "book it", "next": "bye"}`, endOK),
			[]string{"flow.nodes.book.tool"}, "letters"},
		{"tool args not an object", flowOf("book", `"book": {"type": "tool", "tool": "book", "args": "x", "next": "bye"}`, endOK),
			[]string{"flow.nodes.book.args"}, "object"},
		{"bad capture", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "any"}, "capture": "my var", "next": "bye"}]}`, endOK),
			[]string{"flow.nodes.ask.branches[0].capture"}, "variable name"},
		{"bad maxRetries", flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "any"}, "next": "bye"}], "noMatch": {"maxRetries": -1}}`, endOK),
			[]string{"flow.nodes.ask.noMatch.maxRetries"}, "0 to 10"},
		{"say/tool loop", flowOf("greet", fmt.Sprintf(greetTo, "a"),
			`"a": {"type": "say", "text": "A.", "next": "b"}`,
			`"b": {"type": "tool", "tool": "t", "next": "c", "onError": "bye"}`,
			`"c": {"type": "say", "text": "C.", "next": "a"}`, endOK),
			[]string{"flow.nodes.a.next"}, "a → b → c → a"},
		{"tool loop through onError", flowOf("t", `"t": {"type": "tool", "tool": "retry", "next": "bye", "onError": "t"}`, endOK),
			[]string{"flow.nodes.t.onError"}, "t → t"},
		{"two loops", flowOf("greet", fmt.Sprintf(greetTo, "a"),
			`"a": {"type": "say", "text": "A.", "next": "a"}`,
			`"z": {"type": "say", "text": "Z.", "next": "y"}`,
			`"y": {"type": "say", "text": "Y.", "next": "z"}`),
			[]string{"flow.nodes.y", "flow.nodes.z", "flow.nodes.a.next", "flow.nodes.y.next"}, "unreachable"},
		{"bad node id", flowOf("greet", fmt.Sprintf(greetTo, "bad.id"), `"bad.id": {"type": "say", "text": "Hm.", "next": "bye"}`, endOK),
			[]string{"flow.nodes.bad.id"}, "node id"},
		{"node id starting with a digit", flowOf("1st", `"1st": {"type": "end"}`), []string{"flow.nodes.1st"}, "node id"},
		{"node id too long", flowOf("bye", `"bye": {"type": "end"}, "`+strings.Repeat("n", 65)+`": {"type": "end"}`),
			[]string{"flow.nodes." + strings.Repeat("n", 65), "flow.nodes." + strings.Repeat("n", 65)}, "node id"},
	}
	for _, tt := range tests {
		got := parseFields(t, tt.raw)
		names := fieldNames(got)
		if !slices.Equal(names, tt.want) {
			t.Errorf("%s: Parse fields = %q; want %q\n%+v", tt.rule, names, tt.want, got)
			continue
		}
		if !strings.Contains(got[0].Message, tt.msg) {
			t.Errorf("%s: Parse field %s message = %q; want it to contain %q", tt.rule, got[0].Field, got[0].Message, tt.msg)
		}
	}
}

func TestParseTooManyNodes(t *testing.T) {
	nodes := make([]string, MaxNodes+1)
	for i := range nodes {
		nodes[i] = fmt.Sprintf(`"n%d": {"type": "end"}`, i)
	}
	got := fieldNames(parseFields(t, flowOf("n0", nodes...)))
	if want := []string{"flow.nodes"}; !slices.Equal(got, want) {
		t.Errorf("Parse(%d nodes) fields = %q; want %q", MaxNodes+1, got, want)
	}

	// MaxNodes is allowed: an ask with a branch to each of the other nodes.
	nodes = nodes[:MaxNodes]
	var branches []string
	for i := 1; i < MaxNodes; i++ {
		branches = append(branches, fmt.Sprintf(`{"match": {"kind": "keywords", "any": ["w%d"]}, "next": "n%d"}`, i, i))
	}
	nodes[0] = `"n0": {"type": "ask", "text": "Which?", "branches": [` + strings.Join(branches, ",") + "]}"
	mustParse(t, flowOf("n0", nodes...))
}

// TestParseSayRun checks that a run of says longer than one step may visit
// is refused, so that a parsed flow never trips the runner's guard.
func TestParseSayRun(t *testing.T) {
	chain := func(says int) string {
		var nodes []string
		for i := range says {
			nodes = append(nodes, fmt.Sprintf(`"s%d": {"type": "say", "text": "%d.", "next": "s%d"}`, i, i, i+1))
		}
		nodes = append(nodes, fmt.Sprintf(`"s%d": {"type": "end", "success": true}`, says))
		return flowOf("s0", nodes...)
	}
	f := mustParse(t, chain(MaxStepVisits-1))
	if st := f.NewRunner(nil, nil).Start(); !st.End || !st.Success {
		t.Errorf("Start() on %d says = %+v; want a successful end", MaxStepVisits-1, st)
	}
	got := parseFields(t, chain(MaxStepVisits))
	if names := fieldNames(got); !slices.Equal(names, []string{"flow.nodes.s0"}) || !strings.Contains(got[0].Message, "100 say nodes") {
		t.Errorf("Parse(%d says) = %+v; want flow.nodes.s0 about 100 say nodes", MaxStepVisits, got)
	}
}

// TestParseAllProblems checks that one Parse reports every problem at once.
func TestParseAllProblems(t *testing.T) {
	raw := `{"start": "greet", "nodes": {
		"greet": {"type": "say", "text": "", "next": "nowhere"},
		"ask":   {"type": "ask", "text": "Well?", "branches": [{"match": {"kind": "number", "min": 5, "max": 1}, "next": "bye"}]},
		"book":  {"type": "tool", "next": "bye"},
		"bye":   {"type": "end", "text": "Bye.", "colour": "red"}
	}}`
	got := fieldNames(parseFields(t, raw))
	want := []string{
		"flow.nodes.ask.branches[0].match.min",
		"flow.nodes.book.tool",
		"flow.nodes.bye.colour",
		"flow.nodes.greet.text",
		"flow.nodes.greet.next",
		"flow.nodes.ask",
		"flow.nodes.book",
		"flow.nodes.bye",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Parse(many problems) fields = %q; want %q", got, want)
	}
}
