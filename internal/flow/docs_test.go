package flow

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docBlocks returns the fenced code blocks of docs/flows.md in the given language.
func docBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/flows.md")
	if err != nil {
		t.Fatalf("reading docs/flows.md: %v", err)
	}
	var blocks []string
	parts := strings.Split(string(b), "\n```")
	for i := 1; i < len(parts); i += 2 {
		if body, ok := strings.CutPrefix(parts[i], lang+"\n"); ok {
			blocks = append(blocks, body)
		}
	}
	return blocks
}

// TestDocsExample parses the documented booking flow and replays the
// documented conversation, so the page cannot drift from the code.
func TestDocsExample(t *testing.T) {
	var example, transcript string
	for _, b := range docBlocks(t, "json") {
		if strings.Contains(b, `"start"`) && strings.Contains(b, `"nodes"`) && !strings.Contains(b, "$schema") {
			example = b
			break
		}
	}
	for _, b := range docBlocks(t, "text") {
		if strings.HasPrefix(b, "bot:") {
			transcript = b
		}
	}
	if example == "" || transcript == "" {
		t.Fatal("docs/flows.md: no example flow or no transcript")
	}
	r := mustParse(t, example).NewRunner(clockAt(tuesday), newYork)
	step, did := r.Start(), "Start()"
	for _, line := range strings.Split(strings.TrimSpace(transcript), "\n") {
		who, text, _ := strings.Cut(line, ":")
		text = strings.TrimSpace(text)
		switch who {
		case "bot":
			if got, ok := strings.CutPrefix(step.Say, text); !ok {
				t.Fatalf("after %s: Say = %q; the docs say %q", did, step.Say, text)
			} else {
				step.Say = strings.TrimSpace(got) // a step may be written as several bot lines
			}
		case "caller":
			if step.Say != "" {
				t.Fatalf("after %s: Say also has %q, not in the docs", did, step.Say)
			}
			step, did = r.Input(text), "Input("+text+")"
		case "tool":
			name, args, _ := strings.Cut(text, " ")
			if step.Tool == nil || step.Tool.Name != name || string(step.Tool.Args) != args {
				t.Fatalf("after %s: Tool = %+v; the docs say %s %s", did, step.Tool, name, args)
			}
		case "result":
			step, did = r.ToolResult(json.RawMessage(text), nil), "ToolResult("+text+")"
		case "end":
			if !step.End || step.Success != (text == "success") {
				t.Fatalf("after %s: End, Success = %v, %v; the docs say %s", did, step.End, step.Success, text)
			}
		default:
			t.Fatalf("docs/flows.md transcript: unknown line %q", line)
		}
	}
	want := map[string]any{"name": "Jane Doe", "date": "2026-12-03", "time": "10:00",
		"booking": map[string]any{"confirmation": "BK-4821"}}
	if got := r.Vars(); !reflect.DeepEqual(got, want) {
		t.Errorf("Vars() after the docs' conversation = %#v; want %#v", got, want)
	}
}

// TestDocsSchema checks that the documented JSON Schema lists exactly the
// node types, fields, match kinds and patterns Parse accepts.
func TestDocsSchema(t *testing.T) {
	var raw string
	for _, b := range docBlocks(t, "json") {
		if strings.Contains(b, `"$schema"`) {
			raw = b
		}
	}
	type schema struct {
		Schema        string            `json:"$schema"`
		Properties    map[string]schema `json:"properties"`
		Defs          map[string]schema `json:"$defs"`
		Enum          []string          `json:"enum"`
		Const         string            `json:"const"`
		Pattern       string            `json:"pattern"`
		MaxProperties int               `json:"maxProperties"`
		Maximum       *float64          `json:"maximum"`
	}
	var s schema
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatalf("docs/flows.md schema is not JSON: %v", err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("schema $schema = %q; want draft 2020-12", s.Schema)
	}
	props := func(def string, without string) []string {
		d, ok := s.Defs[def]
		if !ok {
			t.Fatalf("schema has no $defs.%s", def)
		}
		keys := slices.Sorted(maps.Keys(d.Properties))
		return slices.DeleteFunc(keys, func(k string) bool { return k == without })
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }

	if got, want := sorted(s.Defs["node"].Properties["type"].Enum), slices.Sorted(maps.Keys(nodeFields)); !slices.Equal(got, want) {
		t.Errorf("schema node types = %q; Parse takes %q", got, want)
	}
	for typ, fields := range nodeFields {
		if got, want := props(typ, "type"), sorted(fields); !slices.Equal(got, want) {
			t.Errorf("schema $defs.%s fields = %q; Parse takes %q", typ, got, want)
		}
		if c := s.Defs[typ].Properties["type"].Const; c != typ {
			t.Errorf("schema $defs.%s.type const = %q; want %q", typ, c, typ)
		}
	}
	if got, want := sorted(s.Defs["match"].Properties["kind"].Enum), slices.Sorted(maps.Keys(matchFields)); !slices.Equal(got, want) {
		t.Errorf("schema match kinds = %q; Parse takes %q", got, want)
	}
	for kind, fields := range matchFields {
		def := kind + "Match"
		if len(fields) == 0 {
			def = "plainMatch"
			if !slices.Contains(s.Defs[def].Properties["kind"].Enum, kind) {
				t.Errorf("schema $defs.plainMatch kinds = %q; want %q in them", s.Defs[def].Properties["kind"].Enum, kind)
			}
		} else if c := s.Defs[def].Properties["kind"].Const; c != kind {
			t.Errorf("schema $defs.%s.kind const = %q; want %q", def, c, kind)
		}
		if got, want := props(def, "kind"), sorted(fields); !slices.Equal(got, want) {
			t.Errorf("schema $defs.%s fields = %q; Parse takes %q", def, got, want)
		}
	}
	if got, want := props("branch", ""), []string{"capture", "match", "next"}; !slices.Equal(got, want) {
		t.Errorf("schema $defs.branch fields = %q; want %q", got, want)
	}
	if got, want := props("noMatch", ""), []string{"maxRetries", "next", "text"}; !slices.Equal(got, want) {
		t.Errorf("schema $defs.noMatch fields = %q; want %q", got, want)
	}
	for def, want := range map[string]string{"nodeId": nodeIDRE.String(), "varName": varNameRE.String()} {
		if got := s.Defs[def].Pattern; got != want {
			t.Errorf("schema $defs.%s pattern = %q; Parse uses %q", def, got, want)
		}
	}
	if got := s.Defs["keys"].Pattern; got != keysRE.String() {
		t.Errorf("schema $defs.keys pattern = %q; Parse uses %q", got, keysRE.String())
	}
	if got := s.Defs["transfer"].Properties["destination"].Pattern; got != destinationRE.String() {
		t.Errorf("schema transfer destination pattern = %q; Parse uses %q", got, destinationRE.String())
	}
	if got := s.Defs["tool"].Properties["tool"].Pattern; got != toolNameRE.String() {
		t.Errorf("schema tool name pattern = %q; Parse uses %q", got, toolNameRE.String())
	}
	if got := s.Properties["nodes"].MaxProperties; got != MaxNodes {
		t.Errorf("schema nodes maxProperties = %d; want MaxNodes %d", got, MaxNodes)
	}
	if m := s.Defs["noMatch"].Properties["maxRetries"].Maximum; m == nil || *m != maxRetriesLimit {
		t.Errorf("schema noMatch.maxRetries maximum = %v; want %d", m, maxRetriesLimit)
	}
}

// TestDocsSchemaAccepts compiles the documented JSON Schema and checks that
// it accepts every flow the page shows and refuses what Parse refuses in
// the new node and match kinds.
func TestDocsSchemaAccepts(t *testing.T) {
	var raw string
	for _, b := range docBlocks(t, "json") {
		if strings.Contains(b, `"$schema"`) {
			raw = b
		}
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("docs/flows.md schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("flows.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("flows.json")
	if err != nil {
		t.Fatalf("docs/flows.md schema does not compile: %v", err)
	}
	valid := func(flow string) error {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(flow))
		if err != nil {
			t.Fatalf("bad test flow %s: %v", flow, err)
		}
		return sch.Validate(v)
	}
	docFlows := 0
	for _, b := range docBlocks(t, "json") {
		if strings.Contains(b, `"start"`) && !strings.Contains(b, "$schema") {
			docFlows++
			if _, err := Parse(json.RawMessage(b)); err != nil {
				t.Errorf("Parse refuses the documented flow:\n%s\n%v", b, err)
			}
			if err := valid(b); err != nil {
				t.Errorf("the schema refuses the documented flow:\n%s\n%v", b, err)
			}
		}
	}
	if docFlows == 0 {
		t.Fatal("docs/flows.md: no example flow")
	}
	for _, ok := range []string{bookingJSON, menuJSON} {
		mustParse(t, ok)
		if err := valid(ok); err != nil {
			t.Errorf("the schema refuses a flow Parse accepts:\n%s\n%v", ok, err)
		}
	}
	for _, bad := range []string{
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "dtmf", "value": "1", "maxDigits": 2}, "next": "bye"}]}`, endOK),
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "dtmf", "terminator": "1"}, "next": "bye"}]}`, endOK),
		flowOf("ask", `"ask": {"type": "ask", "text": "?", "branches": [{"match": {"kind": "dtmf", "value": "1x"}, "next": "bye"}]}`, endOK),
		flowOf("x", `"x": {"type": "transfer", "destination": "617-555-0123"}`),
		flowOf("k", `"k": {"type": "sendDTMF", "digits": "1"}`),
	} {
		if _, err := Parse(json.RawMessage(bad)); err == nil {
			t.Fatalf("Parse accepts %s", bad)
		}
		if valid(bad) == nil {
			t.Errorf("the schema accepts a flow Parse refuses:\n%s", bad)
		}
	}
}
