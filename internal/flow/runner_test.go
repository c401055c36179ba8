package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// clockAt is a fixed clock for runners.
func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

// bookingRunner starts a runner on the booking flow, on Tuesday, November 24, 2026.
func bookingRunner(t testing.TB) *Runner {
	t.Helper()
	return mustParse(t, bookingJSON).NewRunner(clockAt(tuesday), newYork)
}

// expect checks one step; what names the call that produced it.
func expect(t *testing.T, what string, got, want Step) {
	t.Helper()
	if got.Say != want.Say || got.End != want.End || got.Success != want.Success || got.Node != want.Node ||
		(got.Tool == nil) != (want.Tool == nil) {
		t.Fatalf("%s = %s\nwant %s", what, showStep(got), showStep(want))
	}
	if want.Tool != nil && (got.Tool.Name != want.Tool.Name || string(got.Tool.Args) != string(want.Tool.Args)) {
		t.Fatalf("%s = %s\nwant %s", what, showStep(got), showStep(want))
	}
}

func showStep(s Step) string {
	tool := "nil"
	if s.Tool != nil {
		tool = fmt.Sprintf("%s(%s)", s.Tool.Name, s.Tool.Args)
	}
	return fmt.Sprintf("{Say: %q, Tool: %s, End: %v, Success: %v, Node: %q}", s.Say, tool, s.End, s.Success, s.Node)
}

func TestRunnerBooking(t *testing.T) {
	r := bookingRunner(t)
	expect(t, "Start()", r.Start(), Step{
		Say:  "Hi! I can book your appointment. What day would suit you?",
		Node: "ask_date",
	})
	expect(t, `Input("December first, please")`, r.Input("December first, please"), Step{
		Say:  "So Tuesday, December 1, 2026, is that right?",
		Node: "confirm",
	})
	expect(t, `Input("yeah that's right")`, r.Input("yeah that's right"), Step{
		Tool: &ToolCall{Name: "bookAppointment", Args: json.RawMessage(`{"date":"2026-12-01"}`)},
		Node: "book",
	})
	expect(t, "ToolResult", r.ToolResult(json.RawMessage(`{"id": "bk_1", "slot": 12345678901234567890}`), nil), Step{
		Say:     "You're booked for Tuesday, December 1, 2026. Goodbye!",
		End:     true,
		Success: true,
		Node:    "bye",
	})
	want := map[string]any{
		"date":    "2026-12-01",
		"booking": map[string]any{"id": "bk_1", "slot": json.Number("12345678901234567890")},
	}
	if got := r.Vars(); !reflect.DeepEqual(got, want) {
		t.Errorf("Vars() = %#v; want %#v", got, want)
	}
	// The conversation is over: nothing moves it any more.
	expect(t, "Input after the end", r.Input("hello?"), Step{End: true, Success: true, Node: "bye"})
	expect(t, "ToolResult after the end", r.ToolResult(nil, nil), Step{End: true, Success: true, Node: "bye"})
	expect(t, "Start after the end", r.Start(), Step{End: true, Success: true, Node: "bye"})
}

func TestRunnerNoMatchRetries(t *testing.T) {
	r := bookingRunner(t)
	r.Start()
	retry := Step{Say: "Sorry, which day? For example, next Tuesday.", Node: "ask_date"}
	expect(t, `Input("banana") #1`, r.Input("banana"), retry)
	expect(t, `Input("") #2`, r.Input(""), retry)
	expect(t, `Input("banana") #3`, r.Input("banana"), Step{
		Say: "Sorry, I couldn't book that. Goodbye.", End: true, Node: "fail",
	})
}

func TestRunnerDefaultRetries(t *testing.T) {
	r := bookingRunner(t)
	r.Start()
	r.Input("tomorrow")
	again := Step{Say: "Sorry, I didn't catch that. So Wednesday, November 25, 2026, is that right?", Node: "confirm"}
	expect(t, `Input("purple") #1`, r.Input("purple"), again)
	expect(t, `Input("maybe") #2`, r.Input("maybe"), again)
	expect(t, `Input("hmm") #3`, r.Input("hmm"), Step{Say: giveUpText, End: true, Node: "confirm"})
}

func TestRunnerNoLoopsBack(t *testing.T) {
	r := bookingRunner(t)
	r.Start()
	r.Input("bananas")                                  // a retry at ask_date …
	expect(t, `Input("tomorrow")`, r.Input("tomorrow"), // … forgotten once it moves on
		Step{Say: "So Wednesday, November 25, 2026, is that right?", Node: "confirm"})
	expect(t, `Input("no, not that")`, r.Input("no, not that"), Step{Say: "What day would suit you?", Node: "ask_date"})
	// Back at ask_date the retries start again: two more misses are re-asked.
	retry := Step{Say: "Sorry, which day? For example, next Tuesday.", Node: "ask_date"}
	expect(t, "miss #1 after coming back", r.Input("x"), retry)
	expect(t, "miss #2 after coming back", r.Input("x"), retry)
	expect(t, `Input("in 3 days")`, r.Input("in 3 days"), Step{Say: "So Friday, November 27, 2026, is that right?", Node: "confirm"})
	if got := r.Vars()["date"]; got != "2026-11-27" {
		t.Errorf(`Vars()["date"] = %v; want the new answer 2026-11-27`, got)
	}
}

func TestRunnerToolError(t *testing.T) {
	tests := []struct {
		name   string
		result json.RawMessage
		err    error
	}{
		{"error", nil, errors.New("calendar unavailable")},
		{"result not JSON", json.RawMessage(`{"id": `), nil},
	}
	for _, tt := range tests {
		r := bookingRunner(t)
		r.Start()
		r.Input("12/01")
		r.Input("yes")
		expect(t, "ToolResult("+tt.name+")", r.ToolResult(tt.result, tt.err), Step{
			Say: "Sorry, I couldn't book that. Goodbye.", End: true, Node: "fail",
		})
		if _, ok := r.Vars()["booking"]; ok {
			t.Errorf("%s: Vars() = %v; want no booking captured", tt.name, r.Vars())
		}
	}
}

func TestRunnerToolErrorWithoutOnError(t *testing.T) {
	f := mustParse(t, flowOf("t", `"t": {"type": "tool", "tool": "ping", "text": "One moment.", "next": "bye"}`, endOK))
	r := f.NewRunner(nil, nil)
	expect(t, "Start()", r.Start(), Step{Say: "One moment.", Tool: &ToolCall{Name: "ping", Args: json.RawMessage(`{}`)}, Node: "t"})
	expect(t, "Input during a tool call", r.Input("hello"), Step{Node: "t"})
	expect(t, "ToolResult(err)", r.ToolResult(nil, errors.New("down")), Step{Say: failText, End: true, Node: "t"})
}

// TestRunnerLoopGuard runs flows Parse would refuse: the runner must still
// end every step.
func TestRunnerLoopGuard(t *testing.T) {
	loop := &Flow{Start: "a", Nodes: map[string]Node{
		"a": {Type: "say", Text: "A.", Next: "b"},
		"b": {Type: "say", Text: "B.", Next: "a"},
	}}
	st := loop.NewRunner(nil, nil).Start()
	want := strings.Repeat("A. B. ", MaxStepVisits/2) + failText
	expect(t, "Start() on a say loop", st, Step{Say: want, End: true, Node: "b"})

	long := &Flow{Start: "s0", Nodes: map[string]Node{}}
	for i := range 150 {
		long.Nodes[fmt.Sprint("s", i)] = Node{Type: "say", Next: fmt.Sprint("s", i+1)}
	}
	long.Nodes["s150"] = Node{Type: "end", Text: "Done.", Success: true}
	expect(t, "Start() on 150 says", long.NewRunner(nil, nil).Start(), Step{Say: failText, End: true, Node: "s99"})

	broken := &Flow{Start: "a", Nodes: map[string]Node{
		"a": {Type: "say", Text: "A.", Next: "missing"},
		"q": {Type: "ask", Text: "Q?", Branches: []Branch{{Match: Match{Kind: "regex", Pattern: "("}, Next: "a"}}},
		"w": {Type: "warp"},
	}}
	expect(t, "Start() into a missing node", broken.NewRunner(nil, nil).Start(), Step{Say: "A. " + failText, End: true, Node: "a"})
	broken.Start = "w"
	expect(t, "Start() on an unknown type", broken.NewRunner(nil, nil).Start(), Step{Say: failText, End: true, Node: "w"})
	broken.Start = "q"
	r := broken.NewRunner(nil, nil)
	r.Start()
	expect(t, "Input on a bad regex", r.Input("("), Step{Say: "Sorry, I didn't catch that. Q?", Node: "q"})

	var none *Flow
	expect(t, "Start() on a nil flow", none.NewRunner(nil, nil).Start(), Step{Say: failText, End: true})
}

func TestRunnerCaptures(t *testing.T) {
	f := mustParse(t, `{"start": "order", "nodes": {
		"order": {"type": "ask", "text": "Your order number?",
			"branches": [{"match": {"kind": "regex", "pattern": "(?P<prefix>[a-z]+)-?(?P<digits>\\d+)"}, "capture": "order", "next": "guests"}]},
		"guests": {"type": "ask", "text": "Order {{order}} ({{ prefix }}/{{digits}}). How many guests?",
			"branches": [{"match": {"kind": "number", "min": 1, "max": 8}, "capture": "guests", "next": "when"}],
			"noMatch": {"text": "Between one and eight, please.", "maxRetries": 0, "next": "when"}},
		"when": {"type": "ask", "text": "{{guests}} guests. When?",
			"branches": [{"match": {"kind": "datetime"}, "capture": "at", "next": "sure"},
			             {"match": {"kind": "time"}, "capture": "time", "next": "sure"}]},
		"sure": {"type": "ask", "text": "{{at}}{{time}}? {{unknown}}Sure?",
			"branches": [{"match": {"kind": "yesno"}, "capture": "sure", "next": "book"}]},
		"book": {"type": "tool", "tool": "book",
			"args": {"order": "{{order}}", "guests": "{{guests}}", "at": "{{at}}", "sure": "{{sure}}", "n": 2,
			         "note": "<{{missing}}>", "nested": [{"x": "{{digits}}"}], "{{key}}": true},
			"capture": "res", "next": "bye"},
		"bye": {"type": "end", "text": "Code {{res.code}}, room {{res.rooms.1}}, {{res.ok}}, {{res.none.deep}}{{res.rooms.9}}{{res}}.", "success": true}
	}}`)
	r := f.NewRunner(clockAt(tuesday), newYork)
	r.Start()
	expect(t, `Input("it's ABC-123")`, r.Input("it's ABC-123"), Step{
		Say: "Order ABC-123 (ABC/123). How many guests?", Node: "guests",
	})
	expect(t, `Input("twelve")`, r.Input("twelve"), Step{Say: "guests. When?", Node: "when"}) // maxRetries 0: straight on, no guests
	expect(t, `Input("tomorrow at half past seven in the evening")`, r.Input("tomorrow at half past seven in the evening"), Step{
		Say: "Wednesday, November 25, 2026 at 7:30 PM? Sure?", Node: "sure",
	})
	st := r.Input("yes")
	expect(t, `Input("yes")`, st, Step{
		Tool: &ToolCall{Name: "book", Args: json.RawMessage(
			`{"at":"2026-11-25T19:30","guests":"","n":2,"nested":[{"x":"123"}],"note":"<>","order":"ABC-123","sure":"true","{{key}}":true}`)},
		Node: "book",
	})
	expect(t, "ToolResult", r.ToolResult(json.RawMessage(`{"code": 7.50, "rooms": ["a", "b"], "ok": true}`), nil), Step{
		Say:     `Code 7.50, room b, yes, {"code":7.50,"ok":true,"rooms":["a","b"]}.`,
		End:     true,
		Success: true,
		Node:    "bye",
	})
	want := map[string]any{
		"order": "ABC-123", "prefix": "ABC", "digits": "123",
		"at": "2026-11-25T19:30", "sure": true,
		"res": map[string]any{"code": json.Number("7.50"), "rooms": []any{"a", "b"}, "ok": true},
	}
	vars := r.Vars()
	if !reflect.DeepEqual(vars, want) {
		t.Errorf("Vars() = %#v; want %#v", vars, want)
	}
	vars["res"].(map[string]any)["rooms"].([]any)[0] = "changed"
	if again := r.Vars(); !reflect.DeepEqual(again, want) {
		t.Errorf("Vars() after changing its copy = %#v; want %#v", again, want)
	}
}

func TestRunnerNumberAndTimeVars(t *testing.T) {
	f := mustParse(t, `{"start": "n", "nodes": {
		"n": {"type": "ask", "text": "How many?", "branches": [{"match": {"kind": "number"}, "capture": "n", "next": "t"}]},
		"t": {"type": "ask", "text": "{{n}} it is. What time?", "branches": [{"match": {"kind": "time"}, "capture": "t", "next": "bye"}]},
		"bye": {"type": "end", "text": "See you at {{t}}.", "success": true}
	}}`)
	r := f.NewRunner(clockAt(tuesday), newYork)
	r.Start()
	expect(t, `Input("three point five")`, r.Input("three point five"), Step{Say: "3.5 it is. What time?", Node: "t"})
	expect(t, `Input("3pm")`, r.Input("3pm"), Step{Say: "See you at 3 PM.", End: true, Success: true, Node: "bye"})
	if got, want := r.Vars(), map[string]any{"n": 3.5, "t": "15:00"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Vars() = %#v; want %#v", got, want)
	}
}

func TestRunnerStartsAtEnd(t *testing.T) {
	r := mustParse(t, flowOf("bye", `"bye": {"type": "end", "text": "Closed today."}`)).NewRunner(nil, nil)
	expect(t, "Start()", r.Start(), Step{Say: "Closed today.", End: true, Node: "bye"})
}

func TestRunnerInputBeforeStart(t *testing.T) {
	r := bookingRunner(t)
	expect(t, "Input before Start", r.Input("tomorrow"), Step{})
	expect(t, "Start()", r.Start(), Step{Say: "Hi! I can book your appointment. What day would suit you?", Node: "ask_date"})
	expect(t, "Start() again", r.Start(), Step{Node: "ask_date"})
	expect(t, "ToolResult while asking", r.ToolResult(json.RawMessage(`{}`), nil), Step{Node: "ask_date"})
}

// TestRunnerSeed: a flow's templates name the call's variables (package
// vars) as they name captures, with fallbacks; a capture of the same name
// takes the call variable's place; Vars holds the captures only; a
// template that does not parse is refused by Parse, naming the field.
func TestRunnerSeed(t *testing.T) {
	f := mustParse(t, `{"start": "hi", "nodes": {
		"hi": {"type": "ask", "text": "Hi {{contact.firstName | there}}, about {{message}}: what is your plan?",
			"branches": [{"match": {"kind": "regex", "pattern": "(?P<plan>gold|silver)"}, "next": "book"}]},
		"book": {"type": "tool", "tool": "book", "args": {"who": "{{contact.name}}", "plan": "{{plan}}", "zone": "{{timezone}}"}, "next": "bye"},
		"bye": {"type": "end", "text": "Bye {{contact.firstName}}, {{plan}} it is.", "success": true}
	}}`)
	r := f.NewRunner(clockAt(tuesday), newYork)
	r.Seed(map[string]any{
		"contact":  map[string]any{"name": "Ada Lovelace", "firstName": "Ada"},
		"message":  "your renewal",
		"plan":     "bronze",
		"timezone": "America/New_York",
	})
	expect(t, "Start", r.Start(), Step{Say: "Hi Ada, about your renewal: what is your plan?", Node: "hi"})
	expect(t, `Input("gold")`, r.Input("gold please"), Step{
		Tool: &ToolCall{Name: "book", Args: json.RawMessage(`{"plan":"gold","who":"Ada Lovelace","zone":"America/New_York"}`)},
		Node: "book",
	})
	expect(t, "ToolResult", r.ToolResult(json.RawMessage(`{}`), nil), Step{Say: "Bye Ada, gold it is.", End: true, Success: true, Node: "bye"})
	if v := r.Vars(); len(v) != 1 || v["plan"] != "gold" {
		t.Errorf("Vars() = %v, want the capture only", v)
	}
	// Unseeded, the fallback speaks.
	r = f.NewRunner(clockAt(tuesday), newYork)
	expect(t, "Start unseeded", r.Start(), Step{Say: "Hi there, about : what is your plan?", Node: "hi"})

	for field, doc := range map[string]string{
		"flow.nodes.a.text":         `{"start": "a", "nodes": {"a": {"type": "end", "text": "Hi {{name"}}}`,
		"flow.nodes.a.args.x[1].y":  `{"start": "a", "nodes": {"a": {"type": "tool", "tool": "t", "args": {"x": [1, {"y": "{{ }}"}]}, "next": "b"}, "b": {"type": "end", "text": "ok"}}}`,
		"flow.nodes.a.noMatch.text": `{"start": "a", "nodes": {"a": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "yesno"}, "next": "b"}], "noMatch": {"text": "{{1x}}", "next": "b"}}, "b": {"type": "end", "text": "ok"}}}`,
		"flow.nodes.a.digits":       `{"start": "a", "nodes": {"a": {"type": "sendDTMF", "digits": "{{pin", "next": "b"}, "b": {"type": "end", "text": "ok"}}}`,
	} {
		found := false
		for _, fe := range parseFields(t, doc) {
			if fe.Field == field && strings.Contains(fe.Message, "template byte") {
				found = true
			}
		}
		if !found {
			t.Errorf("Parse(%s): want a template error naming %s, got %v", doc, field, parseFields(t, doc))
		}
	}
}
