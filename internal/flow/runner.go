package flow

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"switchboard/internal/vars"
)

// What the runner says on its own, when the flow does not.
const (
	// retryText comes before the question when an ask re-asks without a noMatch text.
	retryText = "Sorry, I didn't catch that."
	// giveUpText ends a conversation whose ask ran out of retries with nowhere to go.
	giveUpText = "Sorry, I couldn't understand. Goodbye."
	// failText ends a conversation whose tool failed with no onError, or that
	// tripped a run-time guard (a loop, a missing node).
	failText = "Sorry, something went wrong. Goodbye."
	// transferFailText is said when a transfer without onError is refused.
	transferFailText = "Sorry, I couldn't transfer your call."
)

// Step is what the host does after the runner moved: say Say, then either
// call Tool and hand its result to ToolResult, play SendDTMF and report with
// SentDTMF, transfer the call to Transfer and report with TransferResult,
// end the conversation (End), or wait for the caller's next answer (for
// Input or Digits).
type Step struct {
	// Say is the text to speak now: every say, ask, tool, transfer and end
	// text reached in this step (and the runner's own retry or failure
	// texts), in order, joined by single spaces. It may be empty.
	Say string
	// Tool, when set, is the call the flow waits for.
	Tool *ToolCall
	// SendDTMF, when not empty, is the keys the flow waits to have played
	// to the far party (a sendDTMF node).
	SendDTMF string
	// Transfer, when not empty, is the destination the flow waits to have
	// the call transferred to, once Say has been said (a transfer node).
	Transfer string
	// End says the conversation is over.
	End bool
	// Success is the end node's verdict once End is set (false for the
	// runner's own endings).
	Success bool
	// Node is the id of the node the runner is at now.
	Node string
}

// ToolCall asks the host to run a tool. Args is a JSON object.
type ToolCall struct {
	// Name is the tool node's tool.
	Name string
	// Args is the node's args object with its templates filled in ({} for none).
	Args json.RawMessage
}

// Runner is one conversation's position in a flow and its captured
// variables. Not safe for concurrent use.
type Runner struct {
	nodes    map[string]*compiledNode
	start    string
	now      func() time.Time
	loc      *time.Location
	vars     map[string]any
	kinds    map[string]valueKind
	callVars vars.Values // the call's variables (Seed): templates fall back to them
	node     string
	state    runState
	retries  int // unmatched answers at the current ask
	success  bool
	lastAsk  string // the ask a refused transfer without onError returns to
}

type runState int

const (
	stateNew      runState = iota
	stateAsk               // waiting for Input
	stateTool              // waiting for ToolResult
	stateSendDTMF          // waiting for SentDTMF
	stateTransfer          // waiting for TransferResult
	stateEnded             // at an end; Success holds the verdict
)

// compiledNode is a node with its matchers compiled and its args decoded.
type compiledNode struct {
	Node
	matchers []*matcher
	args     any // the decoded args object; nil for none
}

// NewRunner starts a conversation on f. now is the clock that relative dates
// ("tomorrow") are read against, in the zone loc; nil means time.Now and UTC.
// The runner compiles what it needs from f and does not change it, so many
// runners may share one Flow. A Flow that did not come from Parse still runs:
// a missing node, an unknown node type or a loop ends the conversation
// unsuccessfully, and a matcher that cannot compile never matches.
func (f *Flow) NewRunner(now func() time.Time, loc *time.Location) *Runner {
	if now == nil {
		now = time.Now
	}
	if loc == nil {
		loc = time.UTC
	}
	r := &Runner{
		nodes: map[string]*compiledNode{},
		now:   now,
		loc:   loc,
		vars:  map[string]any{},
		kinds: map[string]valueKind{},
	}
	if f == nil {
		return r
	}
	r.start = f.Start
	for id, n := range f.Nodes {
		c := &compiledNode{Node: n}
		for _, b := range n.Branches {
			c.matchers = append(c.matchers, compileMatch(b.Match))
		}
		if len(n.Args) > 0 {
			if v, err := decodeJSON(n.Args); err == nil {
				if m, ok := v.(map[string]any); ok {
					c.args = m
				}
			}
		}
		r.nodes[id] = c
	}
	return r
}

// Start runs the flow from its start node until it needs an answer, a tool
// result or reaches an end. Later calls change nothing and return an empty
// Step at the current node.
func (r *Runner) Start() Step {
	if r.state != stateNew {
		return r.step(nil, nil)
	}
	return r.run(r.start, nil)
}

// Input gives the caller's answer to the current ask. The ask's branches are
// tried in order and the first that matches moves the flow on; an answer none
// matches is re-asked, then sent to noMatch.next (see NoMatch). When the
// runner is not waiting for an answer, Input changes nothing and returns an
// empty Step.
func (r *Runner) Input(text string) Step {
	if r.state != stateAsk {
		return r.step(nil, nil)
	}
	n := r.nodes[r.node]
	a := newAnswer(text, r.now(), r.loc)
	for i, m := range n.matchers {
		got, ok := m.match(a)
		if !ok {
			continue
		}
		for _, g := range got.groups {
			r.set(g[0], g[1], plainValue)
		}
		if name := n.Branches[i].Capture; name != "" {
			r.set(name, got.value, got.kind)
		}
		return r.run(n.Branches[i].Next, nil)
	}
	return r.unmatched(n)
}

// Digits gives a keypad entry (the keys the caller pressed, 0-9, *, #,
// A-D, in order) to the current ask. Only its dtmf branches are tried, in
// order; an entry none matches is an unmatched answer, as in Input. When
// the runner is not waiting for an answer, Digits changes nothing and
// returns an empty Step. The host decides where an entry ends with
// EntryComplete.
func (r *Runner) Digits(entry string) Step {
	if r.state != stateAsk {
		return r.step(nil, nil)
	}
	n := r.nodes[r.node]
	for i, m := range n.matchers {
		if v, ok := m.matchKeys(entry); ok {
			if name := n.Branches[i].Capture; name != "" {
				r.set(name, v, plainValue)
			}
			return r.run(n.Branches[i].Next, nil)
		}
	}
	return r.unmatched(n)
}

// EntryComplete reports whether keys, pressed at the current ask, are a
// whole keypad entry: true unless one of the ask's dtmf branches could
// still match a longer entry (a longer value that begins with keys, or an
// open entry below its maxDigits that its terminator has not ended). The
// host gives an incomplete entry to Digits anyway after a pause.
func (r *Runner) EntryComplete(keys string) bool {
	n, ok := r.nodes[r.node]
	if r.state != stateAsk || !ok || len(keys) >= MaxKeys {
		return true
	}
	for _, m := range n.matchers {
		if m.Kind == kindDTMF && m.extends(keys) {
			return false
		}
	}
	return true
}

// unmatched handles an answer or entry no branch of ask n matched.
func (r *Runner) unmatched(n *compiledNode) Step {
	r.retries++
	nm := n.NoMatch
	limit := DefaultMaxRetries
	if nm != nil && nm.MaxRetries != nil {
		limit = max(*nm.MaxRetries, 0)
	}
	switch {
	case r.retries <= limit && nm != nil && strings.TrimSpace(nm.Text) != "":
		return r.step(r.say(nil, nm.Text), nil)
	case r.retries <= limit:
		return r.step(r.say([]string{retryText}, n.Text), nil)
	case nm != nil && nm.Next != "":
		return r.run(nm.Next, nil)
	}
	return r.end(nil, giveUpText)
}

// ToolResult answers the Step's Tool. A nil err moves the flow to the tool
// node's next, with result (JSON, numbers kept exact) in its capture
// variable; an error, or a result that is not JSON, moves it to onError, or
// ends the conversation unsuccessfully when there is none. When the runner is
// not waiting for a tool, ToolResult changes nothing and returns an empty Step.
func (r *Runner) ToolResult(result json.RawMessage, err error) Step {
	if r.state != stateTool {
		return r.step(nil, nil)
	}
	n := r.nodes[r.node]
	var v any
	if err == nil && len(bytes.TrimSpace(result)) > 0 {
		v, err = decodeJSON(result)
	}
	if err != nil {
		if n.OnError != "" {
			return r.run(n.OnError, nil)
		}
		return r.end(nil, failText)
	}
	if n.Capture != "" {
		r.set(n.Capture, v, plainValue)
	}
	return r.run(n.Next, nil)
}

// SentDTMF answers the Step's SendDTMF: a nil err moves the flow to the
// sendDTMF node's next; an error to its onError, or ends the conversation
// unsuccessfully when there is none. (Digits whose variables render to
// something other than 1 to MaxKeys keys fail the same way, without a
// Step.SendDTMF.) When the runner is not waiting for
// keys to be sent, SentDTMF changes nothing and returns an empty Step.
func (r *Runner) SentDTMF(err error) Step {
	if r.state != stateSendDTMF {
		return r.step(nil, nil)
	}
	n := r.nodes[r.node]
	switch {
	case err == nil:
		return r.run(n.Next, nil)
	case n.OnError != "":
		return r.run(n.OnError, nil)
	}
	return r.end(nil, failText)
}

// TransferResult answers the Step's Transfer. A nil err (the call was
// transferred) ends the conversation with the transfer node's success. A
// refusal moves the flow to the node's onError; without one the runner
// says it could not transfer the call and asks the last question again
// (or, when no question came before, ends unsuccessfully). When the
// runner is not waiting for a transfer, TransferResult changes nothing and
// returns an empty Step.
func (r *Runner) TransferResult(err error) Step {
	if r.state != stateTransfer {
		return r.step(nil, nil)
	}
	n := r.nodes[r.node]
	switch {
	case err == nil:
		r.state, r.success = stateEnded, n.Success
		return r.step(nil, nil)
	case n.OnError != "":
		return r.run(n.OnError, nil)
	case r.lastAsk != "":
		return r.run(r.lastAsk, []string{transferFailText})
	}
	return r.end(nil, transferFailText+" Goodbye.")
}

// Seed gives the runner the call's variables (package vars): the flow's
// templates name them as they name its captures, and a capture of the
// same name takes their place. Vars still returns the captures only.
func (r *Runner) Seed(v vars.Values) { r.callVars = v }

// values are what templates render from: the captures over the call's
// variables.
func (r *Runner) values() vars.Values {
	if len(r.callVars) == 0 {
		return vars.Values(r.vars)
	}
	out := make(vars.Values, len(r.callVars)+len(r.vars))
	for k, v := range r.callVars {
		out[k] = v
	}
	for k, v := range r.vars {
		out[k] = v
	}
	return out
}

// Vars returns a copy of the captured variables: numbers as float64, dates as
// "2006-01-02", times as "15:04", date-times as "2006-01-02T15:04", yes/no as
// bool, keywords, regex matches and free answers as strings, tool results as
// decoded JSON (json.Number for numbers).
func (r *Runner) Vars() map[string]any {
	out := make(map[string]any, len(r.vars))
	for k, v := range r.vars {
		out[k] = deepCopy(v)
	}
	return out
}

// run enters node id and walks on through say nodes until the flow waits or
// ends; say holds what this step already says.
func (r *Runner) run(id string, say []string) Step {
	for visits := 0; ; visits++ {
		n, ok := r.nodes[id]
		if !ok || visits == MaxStepVisits {
			return r.end(say, failText)
		}
		switch n.Type {
		case typeSay:
			r.node = id
			say = r.say(say, n.Text)
			id = n.Next
		case typeAsk:
			r.node, r.state, r.retries, r.lastAsk = id, stateAsk, 0, id
			return r.step(r.say(say, n.Text), nil)
		case typeTool:
			r.node, r.state = id, stateTool
			call := &ToolCall{Name: n.Tool, Args: renderArgs(n.args, r.values(), r.kinds)}
			return r.step(r.say(say, n.Text), call)
		case typeSendDTMF:
			r.node = id
			keys := render(n.Digits, r.values(), r.kinds, literal)
			if !keysRE.MatchString(keys) { // a variable that held no keys: the send fails
				if n.OnError == "" {
					return r.end(say, failText)
				}
				id = n.OnError
				continue
			}
			r.state = stateSendDTMF
			st := r.step(say, nil)
			st.SendDTMF = keys
			return st
		case typeTransfer:
			r.node, r.state = id, stateTransfer
			st := r.step(r.say(say, n.Text), nil)
			st.Transfer = n.Destination
			return st
		case typeEnd:
			r.node, r.state, r.success = id, stateEnded, n.Success
			return r.step(r.say(say, n.Text), nil)
		default:
			r.node = id
			return r.end(say, failText)
		}
	}
}

// end finishes the conversation unsuccessfully with the runner's own text.
func (r *Runner) end(say []string, text string) Step {
	r.state, r.success = stateEnded, false
	return r.step(append(say, text), nil)
}

func (r *Runner) step(say []string, tool *ToolCall) Step {
	ended := r.state == stateEnded
	return Step{
		Say:     strings.Join(say, " "),
		Tool:    tool,
		End:     ended,
		Success: ended && r.success,
		Node:    r.node,
	}
}

// say appends a node's text, rendered for speech, unless it is blank.
func (r *Runner) say(say []string, text string) []string {
	if t := strings.TrimSpace(render(text, r.values(), r.kinds, spoken)); t != "" {
		say = append(say, t)
	}
	return say
}

func (r *Runner) set(name string, v any, k valueKind) {
	r.vars[name] = v
	if k == plainValue {
		delete(r.kinds, name)
	} else {
		r.kinds[name] = k
	}
}

// deepCopy copies decoded JSON so a caller of Vars cannot change the runner's.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// Expected is what the caller is expected to say next, for speech
// recognition to listen for (a grammar): at an ask whose spoken branches
// are all keyword or yes/no matchers, their keywords and the yes/no words
// (dtmf branches hear keys, not speech, and are left out). Any other
// matcher (a date, a number, a pattern, anything) means an open answer,
// and so do an ask with only dtmf branches, a no-match retry and every
// state but asking: nil.
func (r *Runner) Expected() []string {
	n, ok := r.nodes[r.node]
	if r.state != stateAsk || !ok || len(n.Branches) == 0 {
		return nil
	}
	var out []string
	for _, b := range n.Branches {
		switch b.Match.Kind {
		case kindKeywords:
			out = append(out, b.Match.Any...)
		case kindYesNo:
			out = append(out, "yes", "no")
		case kindDate:
			out = append(out, DateAnswers...)
		case kindDTMF:
		default:
			return nil
		}
	}
	return out
}
