// Package flow runs scripted conversations: the embedded, offline "model" of
// an assistant whose model provider is "flow". A flow is a graph of nodes
// (say, ask, tool, sendDTMF, transfer, end) stored as JSON on the assistant;
// a Runner walks it one caller answer (or keypad entry) at a time, text in
// and text out, with no I/O of its own, so a conversation is deterministic
// given its clock. The format, its JSON Schema
// and the phrasings each matcher understands are in docs/flows.md.
package flow

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/vars"
)

// Limits that keep a flow, and one step of it, bounded.
const (
	// MaxNodes is the most nodes a flow may hold.
	MaxNodes = 500
	// MaxStepVisits is the most nodes one step may enter before the runner
	// gives up and ends the conversation: the run-time guard against loops
	// that validation did not (or, for a Flow built by hand, could not) catch.
	MaxStepVisits = 100
	// DefaultMaxRetries is how many times an ask re-asks after an answer no
	// branch matches, when its noMatch does not say.
	DefaultMaxRetries = 2
	// maxRetriesLimit bounds noMatch.maxRetries.
	maxRetriesLimit = 10
	// MaxKeys is the most keys a keypad entry, a dtmf match's value or
	// maxDigits, and a sendDTMF node's digits may hold.
	MaxKeys = 32
)

// Flow is a conversation script. The zero Flow is empty; build one with
// Parse, which validates it, and share it read-only between the calls that
// run it (each call gets its own Runner).
type Flow struct {
	// Start is the id of the first node.
	Start string `json:"start"`
	// Nodes are the nodes by id.
	Nodes map[string]Node `json:"nodes"`
}

// Node is one step of a flow. Which fields apply depends on Type: say (Text,
// Next), ask (Text, Branches, NoMatch), tool (Tool, Args, Capture, Next,
// OnError and an optional Text said while the tool runs), sendDTMF (Digits,
// Next, OnError), transfer (Destination, an optional Text said before the
// transfer, OnError, Success) and end (Text, Success).
type Node struct {
	// Type is say, ask, tool, sendDTMF, transfer or end.
	Type string `json:"type"`
	// Text is spoken on entering the node; it is a template ({{var}}).
	Text string `json:"text,omitempty"`
	// Next is the node that follows a say, or a tool that succeeded.
	Next string `json:"next,omitempty"`
	// Branches are tried in order on each answer to an ask; the first that
	// matches wins.
	Branches []Branch `json:"branches,omitempty"`
	// NoMatch says what an ask does with an answer no branch matches.
	NoMatch *NoMatch `json:"noMatch,omitempty"`
	// Tool is the name of the tool a tool node calls.
	Tool string `json:"tool,omitempty"`
	// Args is the JSON object passed to the tool; its strings are templates.
	Args json.RawMessage `json:"args,omitempty"`
	// Capture names the variable that receives the tool's JSON result.
	Capture string `json:"capture,omitempty"`
	// OnError is where a failed tool call, DTMF send or transfer goes.
	// Without it a failed tool or sendDTMF ends the conversation
	// unsuccessfully, and a refused transfer returns to the last question.
	OnError string `json:"onError,omitempty"`
	// Success is an end node's verdict on the conversation, and a transfer
	// node's when the transfer succeeds.
	Success bool `json:"success,omitempty"`
	// Digits are the keys a sendDTMF node plays to the far party; a
	// template ({{account}}#), rendered as tool arguments are.
	Digits string `json:"digits,omitempty"`
	// Destination is where a transfer node transfers the call: a phone
	// number in E.164 form or a sip:/sips: URI, one of the assistant's
	// transfer destinations or a destination of its own.
	Destination string `json:"destination,omitempty"`
}

// Branch is one way an ask can go: when Match accepts the answer, its value
// goes to the variable Capture (if set) and the flow moves to Next.
type Branch struct {
	// Match decides whether the answer takes this branch.
	Match Match `json:"match"`
	// Capture names the variable that receives the matched value; optional.
	Capture string `json:"capture,omitempty"`
	// Next is the node the branch goes to.
	Next string `json:"next"`
}

// Match is a matcher. Kind is one of keywords (Any), regex (Pattern,
// CaseSensitive), yesno (Value), number (Min, Max), date, time, datetime,
// any or dtmf (Keys or MinDigits, MaxDigits, Terminator); the other fields
// belong to the kinds named. Every kind but dtmf reads what the caller said
// or typed; dtmf reads only keypad entries.
type Match struct {
	// Kind is keywords, regex, yesno, number, date, time, datetime, any or dtmf.
	Kind string `json:"kind"`
	// Any lists the keywords or phrases, matched case-insensitively as whole words.
	Any []string `json:"any,omitempty"`
	// Pattern is an RE2 regular expression; its named groups become variables.
	Pattern string `json:"pattern,omitempty"`
	// CaseSensitive turns off the regex's default case-insensitivity.
	CaseSensitive bool `json:"caseSensitive,omitempty"`
	// Value restricts a yesno match to a yes (true) or a no (false); nil accepts both.
	Value *bool `json:"value,omitempty"`
	// Min bounds a number match from below, inclusive; nil for no bound.
	Min *float64 `json:"min,omitempty"`
	// Max bounds a number match from above, inclusive; nil for no bound.
	Max *float64 `json:"max,omitempty"`
	// Keys is a dtmf match's exact entry (its JSON "value", a string of
	// 0-9, *, #, A-D); empty for an open entry bounded by the fields below.
	Keys string `json:"-"`
	// MinDigits and MaxDigits bound an open dtmf entry (terminator not
	// counted); 0 means 1 and MaxKeys.
	MinDigits int `json:"minDigits,omitempty"`
	MaxDigits int `json:"maxDigits,omitempty"`
	// Terminator is the key ("#" or "*") that ends an open dtmf entry; it
	// is not part of the captured digits.
	Terminator string `json:"terminator,omitempty"`
}

// MarshalJSON writes a dtmf match's Keys as its "value", as Parse reads it.
func (m Match) MarshalJSON() ([]byte, error) {
	type plain Match
	if m.Kind != kindDTMF || m.Keys == "" {
		return json.Marshal(plain(m))
	}
	return json.Marshal(struct {
		plain
		Value string `json:"value"`
	}{plain(m), m.Keys})
}

// NoMatch handles answers no branch of an ask matches: the first MaxRetries
// of them get Text (by default an apology and the question again), the next
// one goes to Next (by default an unsuccessful end).
type NoMatch struct {
	// Text is said on each retry instead of the default apology and question.
	Text string `json:"text,omitempty"`
	// MaxRetries is how many unmatched answers are re-asked, 0 to 10; nil
	// means DefaultMaxRetries.
	MaxRetries *int `json:"maxRetries,omitempty"`
	// Next is where the answer after the last retry goes; empty ends the
	// conversation unsuccessfully.
	Next string `json:"next,omitempty"`
}

// Node types and match kinds.
const (
	typeSay      = "say"
	typeAsk      = "ask"
	typeTool     = "tool"
	typeSendDTMF = "sendDTMF"
	typeTransfer = "transfer"
	typeEnd      = "end"

	kindKeywords = "keywords"
	kindRegex    = "regex"
	kindYesNo    = "yesno"
	kindNumber   = "number"
	kindDate     = "date"
	kindTime     = "time"
	kindDateTime = "datetime"
	kindAny      = "any"
	kindDTMF     = "dtmf"
)

// nodeTypes and matchKinds, as error messages list them.
const (
	nodeTypes  = "say, ask, tool, sendDTMF, transfer or end"
	matchKinds = "keywords, regex, yesno, number, date, time, datetime, any or dtmf"
)

// nodeFields lists, per node type, the fields it takes (besides "type").
var nodeFields = map[string][]string{
	typeSay:      {"text", "next"},
	typeAsk:      {"text", "branches", "noMatch"},
	typeTool:     {"text", "tool", "args", "capture", "next", "onError"},
	typeSendDTMF: {"digits", "next", "onError"},
	typeTransfer: {"text", "destination", "onError", "success"},
	typeEnd:      {"text", "success"},
}

// matchFields lists, per match kind, the fields it takes (besides "kind").
var matchFields = map[string][]string{
	kindKeywords: {"any"},
	kindRegex:    {"pattern", "caseSensitive"},
	kindYesNo:    {"value"},
	kindNumber:   {"min", "max"},
	kindDate:     {},
	kindTime:     {},
	kindDateTime: {},
	kindAny:      {},
	kindDTMF:     {"value", "minDigits", "maxDigits", "terminator"},
}

var (
	nodeIDRE   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
	varNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// keysRE is a string of DTMF keys.
	keysRE = regexp.MustCompile(`^[0-9*#A-D]{1,32}$`)
	// destinationRE is the shape of a transfer destination: an E.164
	// number or a sip:/sips: URI without whitespace (the API also checks
	// the number and the URI's syntax: internal/assistant.CheckDestination).
	destinationRE = regexp.MustCompile(`^(?:\+[1-9][0-9]{1,14}|[sS][iI][pP][sS]?:[^\s?]{1,250})$`)
)

// Parse decodes and validates a flow. It returns an apperr Invalid error that
// lists every problem at once, each under a field that names the node, such
// as "flow.start" or "flow.nodes.confirm.branches[1].next"; a flow that
// parses can run without the runner's guards ever firing.
func Parse(raw json.RawMessage) (*Flow, error) {
	var fs apperr.Fields
	d := decoder{fs: &fs}
	f := d.flow(raw)
	if f != nil && f.Nodes != nil {
		checkGraph(f, &fs)
	}
	if err := fs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// decoder decodes a flow field by field, so that one bad field is reported
// with its path and does not hide the others.
type decoder struct{ fs *apperr.Fields }

func (d decoder) flow(raw json.RawMessage) *Flow {
	top, ok := d.object("flow", raw)
	if !ok {
		return nil
	}
	f := &Flow{}
	var nodes map[string]json.RawMessage
	haveNodes := false
	for _, k := range sortedKeys(top) {
		v := top[k]
		switch k {
		case "start":
			f.Start = d.str("flow.start", v)
		case "nodes":
			nodes, haveNodes = d.object("flow.nodes", v)
		default:
			d.fs.Add("flow."+k, "is not a field of a flow; a flow has start and nodes")
		}
	}
	if f.Start == "" && !d.fs.Has("flow.start") {
		d.fs.Add("flow.start", "is required: the id of the first node")
	}
	if !haveNodes {
		if !d.fs.Has("flow.nodes") {
			d.fs.Add("flow.nodes", "is required: an object of nodes by id")
		}
		return nil
	}
	switch {
	case len(nodes) == 0:
		d.fs.Add("flow.nodes", "must hold at least one node")
		return nil
	case len(nodes) > MaxNodes:
		d.fs.Add("flow.nodes", "must hold at most %d nodes, not %d", MaxNodes, len(nodes))
		return nil
	}
	f.Nodes = make(map[string]Node, len(nodes))
	for _, id := range sortedKeys(nodes) {
		field := nodeField(id)
		if !nodeIDRE.MatchString(id) {
			d.fs.Add(field, "node id must be a letter followed by up to 63 letters, digits, '_' or '-'")
		}
		f.Nodes[id] = d.node(field, nodes[id])
	}
	return f
}

func (d decoder) node(field string, raw json.RawMessage) Node {
	var n Node
	obj, ok := d.object(field, raw)
	if !ok {
		return n
	}
	if v, ok := obj["type"]; ok {
		n.Type = d.str(field+".type", v)
	}
	allowed, known := nodeFields[n.Type]
	switch {
	case n.Type == "" && !d.fs.Has(field+".type"):
		d.fs.Add(field+".type", "is required: %s", nodeTypes)
	case n.Type != "" && !known:
		d.fs.Add(field+".type", "must be %s, not %q", nodeTypes, n.Type)
	}
	for _, k := range sortedKeys(obj) {
		v, f := obj[k], field+"."+k
		if k == "type" {
			continue
		}
		if known && !slices.Contains(allowed, k) {
			if isNodeField(k) {
				d.fs.Add(f, "is not a field of %s %s node; it takes %s", article(n.Type), n.Type, strings.Join(allowed, ", "))
			} else {
				d.fs.Add(f, "is not a node field")
			}
			continue
		}
		switch k {
		case "text":
			n.Text = d.template(f, d.str(f, v))
		case "next":
			n.Next = d.str(f, v)
		case "branches":
			for i, b := range d.array(f, v) {
				n.Branches = append(n.Branches, d.branch(f+"["+strconv.Itoa(i)+"]", b))
			}
		case "noMatch":
			n.NoMatch = d.noMatch(f, v)
		case "tool":
			n.Tool = d.str(f, v)
		case "args":
			if obj, ok := d.object(f, v); ok {
				n.Args = append(json.RawMessage(nil), bytes.TrimSpace(v)...)
				d.templates(f, obj)
			}
		case "capture":
			n.Capture = d.str(f, v)
		case "onError":
			n.OnError = d.str(f, v)
		case "success":
			n.Success = d.boolean(f, v)
		case "digits":
			n.Digits = d.str(f, v)
		case "destination":
			n.Destination = d.str(f, v)
		default:
			d.fs.Add(f, "is not a node field")
		}
	}
	if !known {
		return n
	}
	switch n.Type {
	case typeSay, typeAsk:
		if strings.TrimSpace(n.Text) == "" && !d.fs.Has(field+".text") {
			d.fs.Add(field+".text", "is required and must not be blank")
		}
	}
	switch n.Type {
	case typeSay, typeTool, typeSendDTMF:
		if n.Next == "" && !d.fs.Has(field+".next") {
			d.fs.Add(field+".next", "is required: the id of the node that follows")
		}
	}
	switch n.Type {
	case typeAsk:
		if len(n.Branches) == 0 && !d.fs.Has(field+".branches") {
			d.fs.Add(field+".branches", "must hold at least one branch")
		}
	case typeTool:
		if n.Tool == "" && !d.fs.Has(field+".tool") {
			d.fs.Add(field+".tool", "is required: the name of the tool to call")
		} else if n.Tool != "" && !toolNameRE.MatchString(n.Tool) {
			d.fs.Add(field+".tool", "must be 1 to 64 letters, digits, '_' or '-'")
		}
		d.varName(field+".capture", n.Capture)
	case typeSendDTMF:
		switch {
		case d.fs.Has(field + ".digits"):
		case n.Digits == "":
			d.fs.Add(field+".digits", "is required: the keys to send (0-9, *, #, A-D)")
		case vars.Check(n.Digits) != nil:
			d.fs.Add(field+".digits", "template %v", vars.Check(n.Digits))
		case !validDigits(n.Digits):
			d.fs.Add(field+".digits", "must be 1 to %d keys 0-9, *, #, A-D, or {{var}} references to captured keys, not %q", MaxKeys, n.Digits)
		}
	case typeTransfer:
		switch {
		case d.fs.Has(field + ".destination"):
		case n.Destination == "":
			d.fs.Add(field+".destination", "is required: a phone number in E.164 form (+16175550123) or a SIP URI (sip:desk@pbx.example.com)")
		case !destinationRE.MatchString(n.Destination):
			d.fs.Add(field+".destination", "must be a phone number in E.164 form (+16175550123) or a SIP URI (sip:desk@pbx.example.com)")
		}
	}
	return n
}

func (d decoder) branch(field string, raw json.RawMessage) Branch {
	var b Branch
	obj, ok := d.object(field, raw)
	if !ok {
		return b
	}
	haveMatch := false
	for _, k := range sortedKeys(obj) {
		v, f := obj[k], field+"."+k
		switch k {
		case "match":
			b.Match, haveMatch = d.match(f, v), true
		case "capture":
			b.Capture = d.str(f, v)
			d.varName(f, b.Capture)
		case "next":
			b.Next = d.str(f, v)
		default:
			d.fs.Add(f, "is not a field of a branch; a branch has match, capture and next")
		}
	}
	if !haveMatch {
		d.fs.Add(field+".match", "is required")
	}
	if b.Next == "" && !d.fs.Has(field+".next") {
		d.fs.Add(field+".next", "is required: the id of the node this branch goes to")
	}
	return b
}

func (d decoder) match(field string, raw json.RawMessage) Match {
	var m Match
	obj, ok := d.object(field, raw)
	if !ok {
		return m
	}
	if v, ok := obj["kind"]; ok {
		m.Kind = d.str(field+".kind", v)
	}
	allowed, known := matchFields[m.Kind]
	if !known && !d.fs.Has(field+".kind") {
		d.fs.Add(field+".kind", "must be one of %s", matchKinds)
	}
	for _, k := range sortedKeys(obj) {
		v, f := obj[k], field+"."+k
		if k == "kind" {
			continue
		}
		if known && !slices.Contains(allowed, k) {
			d.fs.Add(f, "is not used by %s %s match", article(m.Kind), m.Kind)
			continue
		}
		switch k {
		case "any":
			for i, s := range d.array(f, v) {
				kw := d.str(f+"["+strconv.Itoa(i)+"]", s)
				if len(tokenize(kw)) == 0 && !d.fs.Has(f+"["+strconv.Itoa(i)+"]") {
					d.fs.Add(f+"["+strconv.Itoa(i)+"]", "must contain a word")
				}
				m.Any = append(m.Any, kw)
			}
		case "pattern":
			m.Pattern = d.str(f, v)
		case "caseSensitive":
			m.CaseSensitive = d.boolean(f, v)
		case "value":
			if m.Kind == kindDTMF {
				m.Keys = d.str(f, v)
				break
			}
			b := d.boolean(f, v)
			m.Value = &b
		case "minDigits":
			m.MinDigits = d.digitCount(f, v)
		case "maxDigits":
			m.MaxDigits = d.digitCount(f, v)
		case "terminator":
			m.Terminator = d.str(f, v)
		case "min":
			m.Min = d.number(f, v)
		case "max":
			m.Max = d.number(f, v)
		default:
			d.fs.Add(f, "is not a field of a match")
		}
	}
	switch m.Kind {
	case kindKeywords:
		if len(m.Any) == 0 && !d.fs.Has(field+".any") {
			d.fs.Add(field+".any", "must list at least one keyword or phrase")
		}
	case kindRegex:
		if m.Pattern == "" && !d.fs.Has(field+".pattern") {
			d.fs.Add(field+".pattern", "is required: an RE2 regular expression")
		} else if m.Pattern != "" {
			re, err := compilePattern(m.Pattern, m.CaseSensitive)
			if err != nil {
				d.fs.Add(field+".pattern", "is not a valid RE2 regular expression: %v", err)
				break
			}
			for _, name := range re.SubexpNames() {
				if name != "" && !varNameRE.MatchString(name) {
					d.fs.Add(field+".pattern", "group name %q must start with a letter or '_' (it becomes a variable)", name)
				}
			}
		}
	case kindNumber:
		if m.Min != nil && m.Max != nil && *m.Min > *m.Max {
			d.fs.Add(field+".min", "must not be greater than max (%g > %g)", *m.Min, *m.Max)
		}
	case kindDTMF:
		d.dtmf(field, obj, m)
	}
	return m
}

// dtmf checks a dtmf match: an exact entry (value), or an open one bounded
// by minDigits, maxDigits and a terminator.
func (d decoder) dtmf(field string, obj map[string]json.RawMessage, m Match) {
	if _, ok := obj["value"]; ok {
		if !d.fs.Has(field+".value") && !keysRE.MatchString(m.Keys) {
			d.fs.Add(field+".value", "must be 1 to %d keys 0-9, *, #, A-D, not %q", MaxKeys, m.Keys)
		}
		for _, k := range []string{"minDigits", "maxDigits", "terminator"} {
			if _, ok := obj[k]; ok {
				d.fs.Add(field+"."+k, "is not used with value: value matches that exact entry")
			}
		}
		return
	}
	if m.MinDigits > 0 && m.MaxDigits > 0 && m.MinDigits > m.MaxDigits {
		d.fs.Add(field+".minDigits", "must not be greater than maxDigits (%d > %d)", m.MinDigits, m.MaxDigits)
	}
	if _, ok := obj["terminator"]; ok && !d.fs.Has(field+".terminator") && m.Terminator != "#" && m.Terminator != "*" {
		d.fs.Add(field+".terminator", `must be "#" or "*", not %q`, m.Terminator)
	}
}

// validDigits reports whether a sendDTMF node's digits are keys and
// template references: at least one of either, at most MaxKeys keys.
func validDigits(s string) bool {
	keys, refs := vars.Strip(s)
	if keys == "" {
		return refs > 0
	}
	return keysRE.MatchString(keys)
}

// digitCount decodes minDigits or maxDigits: a whole number from 1 to MaxKeys.
func (d decoder) digitCount(field string, raw json.RawMessage) int {
	n := d.number(field, raw)
	if n == nil {
		return 0
	}
	if *n != float64(int(*n)) || *n < 1 || *n > MaxKeys {
		d.fs.Add(field, "must be a whole number from 1 to %d", MaxKeys)
		return 0
	}
	return int(*n)
}

func (d decoder) noMatch(field string, raw json.RawMessage) *NoMatch {
	nm := &NoMatch{}
	obj, ok := d.object(field, raw)
	if !ok {
		return nm
	}
	for _, k := range sortedKeys(obj) {
		v, f := obj[k], field+"."+k
		switch k {
		case "text":
			nm.Text = d.template(f, d.str(f, v))
		case "next":
			nm.Next = d.str(f, v)
		case "maxRetries":
			n := d.number(f, v)
			if n == nil {
				continue
			}
			if *n != float64(int(*n)) || *n < 0 || *n > maxRetriesLimit {
				d.fs.Add(f, "must be a whole number from 0 to %d", maxRetriesLimit)
				continue
			}
			r := int(*n)
			nm.MaxRetries = &r
		default:
			d.fs.Add(f, "is not a field of noMatch; it has text, maxRetries and next")
		}
	}
	return nm
}

// varName checks a variable name, if one is given.
func (d decoder) varName(field, name string) {
	if name != "" && !varNameRE.MatchString(name) {
		d.fs.Add(field, "must be a variable name: a letter or '_' followed by up to 63 letters, digits or '_'")
	}
}

// object decodes a JSON object; JSON null counts as missing.
func (d decoder) object(field string, raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		d.fs.Add(field, "must be a JSON object")
		return nil, false
	}
	return m, true
}

func (d decoder) array(field string, raw json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		d.fs.Add(field, "must be an array")
	}
	return a
}

// template checks that a text's {{…}} references parse (package vars)
// and returns it.
func (d decoder) template(field, s string) string {
	if err := vars.Check(s); err != nil {
		d.fs.Add(field, "template %v", err)
	}
	return s
}

// templates checks every string of a tool's args, at any depth.
func (d decoder) templates(field string, obj map[string]json.RawMessage) {
	for _, k := range sortedKeys(obj) {
		d.templateValue(field+"."+k, obj[k])
	}
}

func (d decoder) templateValue(field string, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			d.template(field, s)
		}
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) == nil {
			d.templates(field, obj)
		}
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) == nil {
			for i, e := range arr {
				d.templateValue(field+"["+strconv.Itoa(i)+"]", e)
			}
		}
	}
}

func (d decoder) str(field string, raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
		d.fs.Add(field, "must be a string")
	}
	return s
}

func (d decoder) boolean(field string, raw json.RawMessage) bool {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil || isNull(raw) {
		d.fs.Add(field, "must be true or false")
	}
	return b
}

func (d decoder) number(field string, raw json.RawMessage) *float64 {
	var n float64
	if err := json.Unmarshal(raw, &n); err != nil || isNull(raw) {
		d.fs.Add(field, "must be a number")
		return nil
	}
	return &n
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// article is "an" before a vowel ("an ask node", "an end node"), else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func isNodeField(k string) bool {
	for _, fields := range nodeFields {
		if slices.Contains(fields, k) {
			return true
		}
	}
	return false
}

// nodeField is the error field of a node; an absurdly long id is cut so the
// error stays readable.
func nodeField(id string) string {
	if len(id) > 80 {
		id = strings.ToValidUTF8(id[:64], "") + "…"
	}
	return "flow.nodes." + id
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
