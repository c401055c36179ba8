package flow

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// menuJSON is a phone menu: keys or words, a transfer, and an account
// number collected on the keypad.
const menuJSON = `{
  "start": "menu",
  "nodes": {
    "menu": {"type": "ask", "text": "Press 1 or say sales for sales, press 2 for your balance.",
      "branches": [
        {"match": {"kind": "dtmf", "value": "1"}, "next": "to_sales"},
        {"match": {"kind": "keywords", "any": ["sales"]}, "next": "to_sales"},
        {"match": {"kind": "dtmf", "value": "2"}, "next": "account"}]},
    "to_sales": {"type": "transfer", "destination": "+16175550123", "text": "Transferring you to sales now.", "success": true},
    "account": {"type": "ask", "text": "Enter your account number, then press pound.",
      "branches": [{"match": {"kind": "dtmf", "minDigits": 4, "maxDigits": 6, "terminator": "#"}, "capture": "account", "next": "ivr"}],
      "noMatch": {"text": "That was not 4 to 6 digits. Enter your account number, then press pound.", "next": "bye"}},
    "ivr": {"type": "sendDTMF", "digits": "3*{{account}}#", "next": "bye"},
    "bye": {"type": "end", "text": "Done for {{account}}. Goodbye!", "success": true}
  }
}`

func TestParseKeypadAndTransferRules(t *testing.T) {
	ask := func(match string) string {
		return flowOf("ask", `"ask": {"type": "ask", "text": "Well?", "branches": [{"match": `+match+`, "next": "bye"}]}`, endOK)
	}
	const field = "flow.nodes.ask.branches[0].match."
	tests := []struct {
		rule string
		raw  string
		want []string
		msg  string
	}{
		{"dtmf value with a bad key", ask(`{"kind": "dtmf", "value": "1x"}`), []string{field + "value"}, `must be 1 to 32 keys 0-9, *, #, A-D, not "1x"`},
		{"dtmf value too long", ask(`{"kind": "dtmf", "value": "` + strings.Repeat("1", 33) + `"}`), []string{field + "value"}, "1 to 32 keys"},
		{"dtmf value not a string", ask(`{"kind": "dtmf", "value": true}`), []string{field + "value"}, "must be a string"},
		{"dtmf value with bounds", ask(`{"kind": "dtmf", "value": "1", "maxDigits": 2, "terminator": "#"}`),
			[]string{field + "maxDigits", field + "terminator"}, "not used with value"},
		{"dtmf minDigits 0", ask(`{"kind": "dtmf", "minDigits": 0}`), []string{field + "minDigits"}, "whole number from 1 to 32"},
		{"dtmf maxDigits 33", ask(`{"kind": "dtmf", "maxDigits": 33}`), []string{field + "maxDigits"}, "whole number from 1 to 32"},
		{"dtmf maxDigits 2.5", ask(`{"kind": "dtmf", "maxDigits": 2.5}`), []string{field + "maxDigits"}, "whole number"},
		{"dtmf minDigits over maxDigits", ask(`{"kind": "dtmf", "minDigits": 5, "maxDigits": 2}`), []string{field + "minDigits"}, "not be greater than maxDigits (5 > 2)"},
		{"dtmf terminator a digit", ask(`{"kind": "dtmf", "terminator": "1"}`), []string{field + "terminator"}, `must be "#" or "*", not "1"`},
		{"dtmf with a keywords field", ask(`{"kind": "dtmf", "any": ["one"]}`), []string{field + "any"}, "not used by a dtmf match"},
		{"sendDTMF without digits", flowOf("k", `"k": {"type": "sendDTMF", "next": "bye"}`, endOK), []string{"flow.nodes.k.digits"}, "is required"},
		{"sendDTMF with bad digits", flowOf("k", `"k": {"type": "sendDTMF", "digits": "1 2", "next": "bye"}`, endOK), []string{"flow.nodes.k.digits"}, `not "1 2"`},
		{"sendDTMF with a bad key around a template", flowOf("k", `"k": {"type": "sendDTMF", "digits": "{{pin}}x", "next": "bye"}`, endOK), []string{"flow.nodes.k.digits"}, "{{var}} references"},
		{"sendDTMF with braces that are no template", flowOf("k", `"k": {"type": "sendDTMF", "digits": "{{1}}", "next": "bye"}`, endOK), []string{"flow.nodes.k.digits"}, `template byte 0: {{1}}: "1" is not a variable name`},
		{"sendDTMF without next", flowOf("k", `"k": {"type": "sendDTMF", "digits": "1"}`), []string{"flow.nodes.k.next"}, "is required"},
		{"sendDTMF with text", flowOf("k", `"k": {"type": "sendDTMF", "digits": "1", "text": "Hi", "next": "bye"}`, endOK),
			[]string{"flow.nodes.k.text"}, "not a field of a sendDTMF node; it takes digits, next, onError"},
		{"transfer without destination", flowOf("x", `"x": {"type": "transfer"}`), []string{"flow.nodes.x.destination"}, "is required"},
		{"transfer to a local number", flowOf("x", `"x": {"type": "transfer", "destination": "617-555-0123"}`), []string{"flow.nodes.x.destination"}, "E.164 form"},
		{"transfer to a tel: URI", flowOf("x", `"x": {"type": "transfer", "destination": "tel:+16175550123"}`), []string{"flow.nodes.x.destination"}, "E.164 form"},
		{"transfer to a SIP URI with headers", flowOf("x", `"x": {"type": "transfer", "destination": "sip:a@b.example?Replaces=1"}`), []string{"flow.nodes.x.destination"}, "SIP URI"},
		{"transfer with next", flowOf("x", `"x": {"type": "transfer", "destination": "+16175550123", "next": "bye"}`, endOK),
			[]string{"flow.nodes.x.next", "flow.nodes.bye"}, "not a field of a transfer node; it takes text, destination, onError, success"},
		{"transfer onError to nowhere", flowOf("x", `"x": {"type": "transfer", "destination": "+16175550123", "onError": "nope"}`),
			[]string{"flow.nodes.x.onError"}, `unknown node "nope"`},
		{"transfer loop", flowOf("x", `"x": {"type": "transfer", "destination": "+16175550123", "onError": "sorry"}`,
			`"sorry": {"type": "say", "text": "Trying again.", "next": "x"}`),
			[]string{"flow.nodes.sorry.next"}, "sorry → x → sorry"},
		{"sendDTMF loop", flowOf("k", `"k": {"type": "sendDTMF", "digits": "1", "next": "k"}`), []string{"flow.nodes.k.next"}, "k → k"},
		{"unknown node type", flowOf("x", `"x": {"type": "dial"}`), []string{"flow.nodes.x.type"}, "must be say, ask, tool, sendDTMF, transfer or end"},
	}
	for _, tt := range tests {
		got := parseFields(t, tt.raw)
		if names := fieldNames(got); !slices.Equal(names, tt.want) {
			t.Errorf("%s: Parse fields = %q; want %q\n%+v", tt.rule, names, tt.want, got)
			continue
		}
		if !strings.Contains(got[0].Message, tt.msg) {
			t.Errorf("%s: Parse field %s message = %q; want it to contain %q", tt.rule, got[0].Field, got[0].Message, tt.msg)
		}
	}
	for _, ok := range []string{
		ask(`{"kind": "dtmf"}`),
		ask(`{"kind": "dtmf", "value": "*#0A"}`),
		ask(`{"kind": "dtmf", "minDigits": 1, "maxDigits": 32, "terminator": "*"}`),
		flowOf("x", `"x": {"type": "transfer", "destination": "sips:desk@pbx.example.com:5061;transport=tls"}`),
		menuJSON,
	} {
		mustParse(t, ok)
	}
}

// TestKeypadRoundTrip: a dtmf value encodes back as "value", so a parsed
// flow marshals to one that parses to the same thing.
func TestKeypadRoundTrip(t *testing.T) {
	f := mustParse(t, menuJSON)
	if m := f.Nodes["menu"].Branches[0].Match; m.Keys != "1" || m.Value != nil {
		t.Errorf("Parse(menu) dtmf match = %+v; want Keys 1 and no yes/no Value", m)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"match":{"kind":"dtmf","value":"1"}`) || !strings.Contains(string(b), `"minDigits":4,"maxDigits":6,"terminator":"#"`) {
		t.Errorf("json.Marshal(Parse(menu)) = %s; want the dtmf matches as written", b)
	}
	if again := mustParse(t, string(b)); !reflect.DeepEqual(again, f) {
		t.Errorf("Parse(Marshal(Parse(menu))) = %+v; want %+v", again, f)
	}
}

func stepString(s Step) string {
	return fmt.Sprintf("{Say: %q, SendDTMF: %q, Transfer: %q, End: %v, Success: %v, Node: %q}", s.Say, s.SendDTMF, s.Transfer, s.End, s.Success, s.Node)
}

func expectStep(t *testing.T, what string, got, want Step) {
	t.Helper()
	if got.Say != want.Say || got.SendDTMF != want.SendDTMF || got.Transfer != want.Transfer || got.End != want.End ||
		got.Success != want.Success || got.Node != want.Node || got.Tool != nil {
		t.Fatalf("%s = %s\nwant %s", what, stepString(got), stepString(want))
	}
}

// TestRunnerKeypadMenu: a key press takes a dtmf branch; typed or spoken
// "1" and "one" never do, and a word never takes a keypad branch.
func TestRunnerKeypadMenu(t *testing.T) {
	const question = "Press 1 or say sales for sales, press 2 for your balance."
	r := mustParse(t, menuJSON).NewRunner(nil, nil)
	expectStep(t, "Start()", r.Start(), Step{Say: question, Node: "menu"})
	if !r.EntryComplete("1") || !r.EntryComplete("9") {
		t.Errorf("EntryComplete(1), (9) at a menu of single keys = false; want true (no longer entry can match)")
	}
	for _, typed := range []string{"1", "one", "press 1", "2"} {
		expectStep(t, fmt.Sprintf("Input(%q)", typed), r.Input(typed), Step{Say: retryText + " " + question, Node: "menu"})
		r = mustParse(t, menuJSON).NewRunner(nil, nil)
		r.Start()
	}
	expectStep(t, `Digits("3")`, r.Digits("3"), Step{Say: retryText + " " + question, Node: "menu"})
	expectStep(t, `Digits("1")`, r.Digits("1"), Step{Say: "Transferring you to sales now.", Transfer: "+16175550123", Node: "to_sales"})
	expectStep(t, "Input during the transfer", r.Input("hello"), Step{Node: "to_sales"})
	expectStep(t, "Digits during the transfer", r.Digits("1"), Step{Node: "to_sales"})
	expectStep(t, "TransferResult(nil)", r.TransferResult(nil), Step{End: true, Success: true, Node: "to_sales"})
	expectStep(t, "TransferResult again", r.TransferResult(nil), Step{End: true, Success: true, Node: "to_sales"})

	// Words still work at the same ask.
	r = mustParse(t, menuJSON).NewRunner(nil, nil)
	r.Start()
	expectStep(t, `Input("sales please")`, r.Input("sales please"), Step{Say: "Transferring you to sales now.", Transfer: "+16175550123", Node: "to_sales"})
}

// TestRunnerKeypadCapture: an open entry is captured without its
// terminator, leading zeros kept; entries outside the bounds are unmatched.
func TestRunnerKeypadCapture(t *testing.T) {
	r := mustParse(t, menuJSON).NewRunner(nil, nil)
	r.Start()
	expectStep(t, `Digits("2")`, r.Digits("2"), Step{Say: "Enter your account number, then press pound.", Node: "account"})
	for keys, complete := range map[string]bool{"0": false, "00421": false, "004217": true, "12#": true, "#": true} {
		if got := r.EntryComplete(keys); got != complete {
			t.Errorf("EntryComplete(%q) at maxDigits 6, terminator # = %v; want %v", keys, got, complete)
		}
	}
	const retry = "That was not 4 to 6 digits. Enter your account number, then press pound."
	expectStep(t, `Digits("12#")`, r.Digits("12#"), Step{Say: retry, Node: "account"})
	expectStep(t, `Digits("1234567")`, r.Digits("1234567"), Step{Say: retry, Node: "account"})
	expectStep(t, `Digits("0042#")`, r.Digits("0042#"), Step{SendDTMF: "3*0042#", Node: "ivr"})
	if got := r.Vars(); !reflect.DeepEqual(got, map[string]any{"account": "0042"}) {
		t.Errorf("Vars() = %v; want account 0042 as a string", got)
	}
	expectStep(t, "SentDTMF(nil)", r.SentDTMF(nil), Step{Say: "Done for 0042. Goodbye!", End: true, Success: true, Node: "bye"})

	// An entry that a pause ended, without the terminator, counts too.
	r = mustParse(t, menuJSON).NewRunner(nil, nil)
	r.Start()
	r.Digits("2")
	if st := r.Digits("98765"); st.Node != "ivr" || r.Vars()["account"] != "98765" {
		t.Errorf(`Digits("98765") = %s, account %v; want ivr with 98765`, stepString(st), r.Vars()["account"])
	}
}

// TestEntryComplete: an entry is complete once no dtmf branch could match
// a longer one.
func TestEntryComplete(t *testing.T) {
	for _, tc := range []struct {
		matches string
		keys    string
		want    bool
	}{
		{`{"kind": "dtmf", "value": "1"}, {"kind": "dtmf", "value": "10"}`, "1", false},
		{`{"kind": "dtmf", "value": "1"}, {"kind": "dtmf", "value": "10"}`, "10", true},
		{`{"kind": "dtmf", "value": "1"}, {"kind": "dtmf", "value": "10"}`, "2", true},
		{`{"kind": "dtmf", "value": "*9"}`, "*", false},
		{`{"kind": "dtmf", "maxDigits": 1}`, "5", true},
		{`{"kind": "dtmf"}`, "12345", false},
		{`{"kind": "dtmf"}`, strings.Repeat("1", MaxKeys), true},
		{`{"kind": "dtmf", "terminator": "*"}`, "12*", true},
		{`{"kind": "dtmf", "terminator": "*"}`, "12#", false},
		{`{"kind": "keywords", "any": ["help"]}`, "1", true},
	} {
		var branches []string
		for _, m := range strings.SplitAfter(tc.matches, "}") {
			if m = strings.Trim(m, ", "); m != "" {
				branches = append(branches, `{"match": `+m+`, "next": "bye"}`)
			}
		}
		r := mustParse(t, flowOf("ask", `"ask": {"type": "ask", "text": "Key?", "branches": [`+strings.Join(branches, ",")+`]}`, endOK)).NewRunner(nil, nil)
		r.Start()
		if got := r.EntryComplete(tc.keys); got != tc.want {
			t.Errorf("EntryComplete(%q) with branches %s = %v; want %v", tc.keys, tc.matches, got, tc.want)
		}
	}
	r := mustParse(t, flowOf("bye", endOK)).NewRunner(nil, nil)
	r.Start()
	if !r.EntryComplete("1") {
		t.Errorf("EntryComplete after the end = false; want true (nothing waits for keys)")
	}
}

// TestRunnerSendDTMF: a sendDTMF node asks the host to play its keys and
// goes on when they are sent; a failure takes onError, or ends the
// conversation without one.
func TestRunnerSendDTMF(t *testing.T) {
	const raw = `{"start": "hi", "nodes": {
		"hi": {"type": "say", "text": "Navigating.", "next": "k"},
		"k": {"type": "sendDTMF", "digits": "1#", "next": "k2"},
		"k2": {"type": "sendDTMF", "digits": "0", "next": "bye", "onError": "oops"},
		"oops": {"type": "end", "text": "The line failed."},
		"bye": {"type": "end", "text": "Bye.", "success": true}}}`
	r := mustParse(t, raw).NewRunner(nil, nil)
	expectStep(t, "Start()", r.Start(), Step{Say: "Navigating.", SendDTMF: "1#", Node: "k"})
	expectStep(t, "ToolResult while keys are pending", r.ToolResult(nil, nil), Step{Node: "k"})
	expectStep(t, "SentDTMF(nil)", r.SentDTMF(nil), Step{SendDTMF: "0", Node: "k2"})
	expectStep(t, "SentDTMF(err) with onError", r.SentDTMF(errors.New("line gone")), Step{Say: "The line failed.", End: true, Node: "oops"})

	r = mustParse(t, raw).NewRunner(nil, nil)
	r.Start()
	expectStep(t, "SentDTMF(err) without onError", r.SentDTMF(errors.New("no phone line")), Step{Say: failText, End: true, Node: "k"})

	// Digits from a variable: a value that is not keys fails the node
	// without asking the host to send anything.
	const templated = `{"start": "ask", "nodes": {
		"ask": {"type": "ask", "text": "Your PIN?", "branches": [{"match": {"kind": "regex", "pattern": "^\\w+$"}, "capture": "pin", "next": "k"}]},
		"k": {"type": "sendDTMF", "digits": "{{pin}}#", "next": "bye", "onError": "oops"},
		"oops": {"type": "end", "text": "That PIN has letters."},
		"bye": {"type": "end", "text": "Bye.", "success": true}}}`
	r = mustParse(t, templated).NewRunner(nil, nil)
	r.Start()
	expectStep(t, `Input("4321")`, r.Input("4321"), Step{SendDTMF: "4321#", Node: "k"})
	r = mustParse(t, templated).NewRunner(nil, nil)
	r.Start()
	expectStep(t, `Input("abcd")`, r.Input("abcd"), Step{Say: "That PIN has letters.", End: true, Node: "oops"})
}

// TestRunnerTransferRefused: a refused transfer goes to onError; without
// one the caller hears why and the last question again, or a goodbye when
// there was no question.
func TestRunnerTransferRefused(t *testing.T) {
	r := mustParse(t, menuJSON).NewRunner(nil, nil)
	r.Start()
	r.Digits("3") // one retry used: the question after the refusal gets fresh retries
	r.Digits("1")
	const question = "Press 1 or say sales for sales, press 2 for your balance."
	expectStep(t, "TransferResult(refused)", r.TransferResult(errors.New("486 busy")), Step{Say: transferFailText + " " + question, Node: "menu"})
	r.Digits("7")
	r.Digits("7")
	if st := r.Digits("7"); !st.End || st.Say != giveUpText {
		t.Errorf("third unmatched entry after a refused transfer = %s; want the give-up end (retries start over)", stepString(st))
	}

	withOnError := flowOf("x", `"x": {"type": "transfer", "destination": "sip:desk@pbx.example.com", "onError": "sorry"}`,
		`"sorry": {"type": "end", "text": "The desk is busy. Goodbye."}`)
	r = mustParse(t, withOnError).NewRunner(nil, nil)
	expectStep(t, "Start()", r.Start(), Step{Transfer: "sip:desk@pbx.example.com", Node: "x"})
	expectStep(t, "TransferResult(refused) with onError", r.TransferResult(errors.New("refused")), Step{Say: "The desk is busy. Goodbye.", End: true, Node: "sorry"})

	r = mustParse(t, flowOf("x", `"x": {"type": "transfer", "destination": "+16175550123", "success": true}`)).NewRunner(nil, nil)
	r.Start()
	expectStep(t, "TransferResult(refused) with no question before", r.TransferResult(errors.New("refused")),
		Step{Say: transferFailText + " Goodbye.", End: true, Node: "x"})
}

// TestExpectedSkipsKeys: the speech grammar of an ask leaves its dtmf
// branches out; an ask with only dtmf branches expects anything.
func TestExpectedSkipsKeys(t *testing.T) {
	r := mustParse(t, menuJSON).NewRunner(nil, nil)
	r.Start()
	if got := r.Expected(); !slices.Equal(got, []string{"sales"}) {
		t.Errorf("Expected() at the menu = %q; want [sales]", got)
	}
	r.Digits("2")
	if got := r.Expected(); got != nil {
		t.Errorf("Expected() at a keypad-only ask = %q; want nil", got)
	}
}
