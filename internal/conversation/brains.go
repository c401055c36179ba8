package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/catalog"
	"switchboard/internal/flow"
	"switchboard/internal/llm"
	"switchboard/internal/vars"
)

// ToolRunner calls an assistant's HTTP tools.
type ToolRunner interface {
	Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error)
}

// Brains makes the Brain of a call from its assistant: the scripted flow,
// or a model provider configured on the server.
type Brains struct {
	// Models are the configured model providers by name ("openai", "anthropic").
	Models map[string]llm.Client
	// Tools makes the tool runner of a call's assistant (HTTP tools).
	Tools func(c call.Call, a assistant.Assistant) ToolRunner
	// Now and Location are the flow runner's clock (relative dates);
	// Location is its zone for a call without a timezone variable.
	Now      func() time.Time
	Location *time.Location
	Log      *slog.Logger
	// MaxToolRounds bounds the model's tool-call loop per turn (default 5).
	MaxToolRounds int
}

// New makes the brain for a call of assistant a.
func (b *Brains) New(ctx context.Context, c call.Call, a assistant.Assistant) (Brain, error) {
	var tools ToolRunner = noTools{}
	if b.Tools != nil {
		tools = b.Tools(c, a)
	}
	switch a.Brain() {
	case assistant.BrainNoteTaker:
		return &noteTaker{}, nil
	case assistant.BrainFlow:
		f, err := flow.Parse(a.Flow)
		if err != nil {
			return nil, fmt.Errorf("assistant %s: %w", a.ID, err)
		}
		now := b.Now
		if now == nil {
			now = time.Now
		}
		// The flow runs in the call's zone (its timezone variable: the
		// contact's, else the schedule's), else the server's.
		values := vars.Running(c.Variables, now())
		loc := b.Location
		if _, ok := values["timezone"]; ok {
			loc = values.Zone()
		}
		runner := f.NewRunner(now, loc)
		runner.Seed(values)
		return &flowBrain{flow: f, runner: runner, tools: tools, transfer: a.Transfer}, nil
	}
	client, ok := b.Models[a.Model.Provider]
	if !ok {
		msg := fmt.Sprintf("model provider %q is not configured on this server", a.Model.Provider)
		if p, known := catalog.Lookup(catalog.Model, a.Model.Provider); known {
			msg += "; " + p.HowToEnable()
		}
		return nil, fmt.Errorf("assistant %s: %s", a.ID, msg)
	}
	rounds := b.MaxToolRounds
	if rounds <= 0 {
		rounds = 5
	}
	mb := &modelBrain{client: client, a: a, tools: tools, rounds: rounds, log: b.Log}
	mb.toolDefs = append(mb.toolDefs, EndCallTool)
	for _, t := range a.Tools {
		mb.toolDefs = append(mb.toolDefs, llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
	return mb, nil
}

type noTools struct{}

func (noTools) Call(ctx context.Context, name string, _ json.RawMessage) (json.RawMessage, error) {
	return nil, fmt.Errorf("tool %q is not declared on this assistant", name)
}

// noteTaker is the brain of an assistant with neither a flow nor a model
// (assistant.BrainNoteTaker): it hears one caller turn, thanks them and
// ends the call.
type noteTaker struct{}

func (*noteTaker) Open(context.Context, func(string)) (Reply, error) { return Reply{}, nil }
func (*noteTaker) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	return Reply{Text: assistant.NoteTakerReply, End: true}, nil
}
func (*noteTaker) Said(string)         {}
func (*noteTaker) Result() call.Result { return call.Result{} }

// flowBrain runs a scripted flow, calling its tools, sending its keys and
// asking for its transfers as the flow says.
type flowBrain struct {
	flow     *flow.Flow
	runner   *flow.Runner
	tools    ToolRunner
	control  Control            // nil: no phone line
	transfer assistant.Transfer // the assistant's destinations (their messages)
	ended    bool
	success  bool
}

func (f *flowBrain) useControl(c Control) { f.control = c }

// EntryComplete is flow.Runner.EntryComplete: an entry ends once no dtmf
// branch of the current question could match a longer one.
func (f *flowBrain) EntryComplete(keys string) bool { return f.runner.EntryComplete(keys) }

// Keys answers a keypad entry through the flow's dtmf branches.
func (f *flowBrain) Keys(ctx context.Context, entry string, emit func(string)) (Reply, error) {
	if f.ended {
		return Reply{End: true}, nil
	}
	return f.run(ctx, f.runner.Digits(entry), emit)
}

// Transferred ends the flow with its transfer node's verdict.
func (f *flowBrain) Transferred(string) { f.finish(f.runner.TransferResult(nil)) }

// TransferFailed takes the transfer node's onError (or says the transfer
// failed and asks the last question again).
func (f *flowBrain) TransferFailed(ctx context.Context, err error, emit func(string)) (Reply, error) {
	return f.run(ctx, f.runner.TransferResult(err), emit)
}

func (f *flowBrain) finish(st flow.Step) {
	if st.End {
		f.ended, f.success = true, st.Success
	}
}

func (f *flowBrain) Open(ctx context.Context, emit func(string)) (Reply, error) {
	return f.run(ctx, f.runner.Start(), emit)
}

func (f *flowBrain) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	if f.ended {
		return Reply{End: true}, nil
	}
	return f.run(ctx, f.runner.Input(text), emit)
}

// run follows a step through its tool calls and keys, saying each part as
// it comes; a transfer ends the reply (the engine carries it out).
func (f *flowBrain) run(ctx context.Context, st flow.Step, emit func(string)) (Reply, error) {
	var said []string
	for {
		if s := strings.TrimSpace(st.Say); s != "" {
			if len(said) > 0 {
				emit(" ")
			}
			emit(s)
			said = append(said, s)
		}
		if st.Tool != nil {
			res, err := f.tools.Call(ctx, st.Tool.Name, st.Tool.Args)
			st = f.runner.ToolResult(res, err)
			continue
		}
		if st.SendDTMF == "" {
			break
		}
		err := ErrNoControl
		if f.control != nil {
			err = f.control.SendDTMF(ctx, st.SendDTMF)
		}
		st = f.runner.SentDTMF(err)
	}
	f.finish(st)
	rep := Reply{Text: strings.Join(said, " "), End: st.End}
	if st.Transfer != "" {
		rep.Transfer = &Transfer{Destination: st.Transfer}
		// The node's text was said above; without one, the destination's message.
		if d, ok := f.transfer.Find(st.Transfer); ok && strings.TrimSpace(f.flow.Nodes[st.Node].Text) == "" {
			rep.Transfer.Message = d.Message
		}
	}
	return rep, nil
}

func (f *flowBrain) Said(string) {}

// Expected is what the flow's current question expects (flow.Runner.Expected).
func (f *flowBrain) Expected() []string { return f.runner.Expected() }

func (f *flowBrain) Result() call.Result {
	r := call.Result{Vars: f.runner.Vars()}
	if f.ended {
		s := f.success
		r.FlowSuccess = &s
	}
	return r
}

// EndCallTool is the built-in tool a model calls to hang up.
var EndCallTool = llm.Tool{
	Name:        "endCall",
	Description: "End the call. Call it after you have said goodbye, or when the caller asks to hang up.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"why the call ends"}},"additionalProperties":false}`),
}

// modelBrain asks a language model, with a bounded tool-call loop.
type modelBrain struct {
	client   llm.Client
	a        assistant.Assistant
	tools    ToolRunner
	toolDefs []llm.Tool
	history  []llm.Message
	rounds   int
	log      *slog.Logger
	control  Control // nil: no phone line, no sendDTMF or transferCall
	// start is where the messages of the current reply begin in history
	// (after the caller's turn, or after a refused transfer's answer).
	start int
	// pending is the transferCall the engine is carrying out: its answer
	// is added once the engine says how it went.
	pending *llm.ToolCall
	// transfer is the transfer pending asks for; transfers counts the
	// transfers asked for on this call.
	transfer  *Transfer
	transfers int
}

// useControl offers the built-in phone tools when the call has a line (a
// declared HTTP tool of the same name, stored before the names were
// reserved, keeps the name).
func (m *modelBrain) useControl(c Control) {
	m.control = c
	if c == nil {
		return
	}
	if !m.declared(sendDTMFName) {
		m.toolDefs = append(m.toolDefs, SendDTMFTool)
	}
	if m.offersTransfer() {
		m.toolDefs = append(m.toolDefs, TransferCallTool(m.a.Transfer))
	}
}

func (m *modelBrain) declared(name string) bool {
	for _, t := range m.a.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (m *modelBrain) offersTransfer() bool {
	return m.control != nil && len(m.a.Transfer.Destinations) > 0 && !m.declared(transferCallName)
}

func (m *modelBrain) Open(context.Context, func(string)) (Reply, error) { return Reply{}, nil }

func (m *modelBrain) Said(text string) {
	m.history = append(m.history, llm.Message{Role: llm.RoleAssistant, Content: text})
}

func (m *modelBrain) Result() call.Result { return call.Result{} }

// Heard truncates the assistant's side of the last exchange (the messages
// after the caller's last turn) to what the caller heard: contents are cut
// at len(heard) bytes in order, tool calls and their results stay (the
// model did make them), and a final message left empty is dropped.
func (m *modelBrain) Heard(heard string) {
	start := 0
	for i := len(m.history) - 1; i >= 0; i-- {
		if m.history[i].Role == llm.RoleUser {
			start = i + 1
			break
		}
	}
	start = max(start, min(m.start, len(m.history)))
	budget := len(strings.TrimSpace(heard))
	for i := start; i < len(m.history); i++ {
		msg := &m.history[i]
		if msg.Role != llm.RoleAssistant {
			continue
		}
		c := msg.Content
		switch {
		case budget >= len(c):
			budget -= len(c)
		default:
			msg.Content = strings.TrimSpace(strings.ToValidUTF8(c[:budget], ""))
			budget = 0
		}
		budget = max(budget-1, 0) // the space between rounds
	}
	if n := len(m.history); n > start && m.history[n-1].Role == llm.RoleAssistant &&
		m.history[n-1].Content == "" && len(m.history[n-1].ToolCalls) == 0 {
		m.history = m.history[:n-1]
	}
}

func (m *modelBrain) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	if m.pending != nil { // never left so by the engine; keep the history valid
		m.answerPending(toolError("not transferred"))
	}
	return m.converse(ctx, llm.Message{Role: llm.RoleUser, Content: text}, emit)
}

// Transferred answers the pending transferCall: the call is transferred.
func (m *modelBrain) Transferred(destination string) {
	if m.pending != nil {
		b, _ := json.Marshal(map[string]any{"ok": true, "transferred": destination})
		m.answerPending(b)
	}
}

// TransferFailed answers the pending transferCall with the refusal and
// lets the model go on.
func (m *modelBrain) TransferFailed(ctx context.Context, err error, emit func(string)) (rep Reply, rerr error) {
	if m.pending == nil {
		return Reply{}, nil
	}
	pending, t := m.pending, m.transfer
	ans := map[string]string{"error": "the transfer was refused: " + err.Error() + "; the caller is still on the line"}
	if t != nil && t.Message != "" {
		ans["messageSaid"] = t.Message
	}
	b, _ := json.Marshal(ans)
	m.pending, m.transfer = nil, nil
	defer func() {
		if rerr != nil && !errors.Is(rerr, context.Canceled) && ctx.Err() != context.Canceled {
			m.pending, m.transfer = pending, t // the answer was rolled back: a retry gives it again
		}
	}()
	return m.converse(ctx, llm.Message{Role: llm.RoleTool, ToolCallID: pending.ID, Content: string(b)}, emit)
}

func (m *modelBrain) answerPending(content json.RawMessage) {
	m.history = append(m.history, llm.Message{Role: llm.RoleTool, ToolCallID: m.pending.ID, Content: string(content)})
	m.pending, m.transfer = nil, nil
}

// converse adds opening (the caller's turn, or the answer to a tool call)
// to the history and runs the model's tool-call loop.
func (m *modelBrain) converse(ctx context.Context, opening llm.Message, emit func(string)) (rep Reply, err error) {
	// A failed reply leaves the history as it was, so a retry does not
	// send the caller's words twice.
	mark := len(m.history)
	var said strings.Builder
	defer func() {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled) || ctx.Err() == context.Canceled:
			// Interrupted by the caller: the model remembers the caller's
			// words and only the part of its reply that was delivered.
			m.history = append(m.history[:mark], opening)
			if said.Len() > 0 {
				m.history = append(m.history, llm.Message{Role: llm.RoleAssistant, Content: said.String()})
			}
		default:
			m.history = m.history[:mark]
		}
		if err != nil && m.pending != nil { // its tool call was rolled back with the rest
			m.pending, m.transfer = nil, nil
		}
	}()
	m.history = append(m.history, opening)
	m.start = len(m.history)
	end := false
	for round := 0; round < m.rounds; round++ {
		res, err := m.client.Stream(ctx, llm.Request{
			Model: m.a.Model.Model, System: m.a.SystemPrompt, Messages: m.history, Tools: m.toolDefs,
			Temperature: m.a.Model.Temperature, MaxTokens: m.a.Model.MaxTokens,
		}, func(d string) {
			if said.Len() > 0 && round > 0 && !strings.HasSuffix(said.String(), " ") && !strings.HasPrefix(d, " ") {
				said.WriteString(" ")
				emit(" ")
			}
			said.WriteString(d)
			emit(d)
		})
		if err != nil {
			// Keep the history consistent: the user turn stays, nothing else.
			return Reply{Text: said.String()}, err
		}
		m.history = append(m.history, llm.Message{Role: llm.RoleAssistant, Content: res.Text, ToolCalls: res.ToolCalls})
		if len(res.ToolCalls) == 0 {
			return Reply{Text: said.String(), End: end}, nil
		}
		for _, tc := range res.ToolCalls {
			var out json.RawMessage
			switch {
			case m.pending != nil:
				out = toolError("not run: the call is being transferred")
			case tc.Name == EndCallTool.Name:
				end = true
				out = json.RawMessage(`{"ok":true}`)
			case tc.Name == sendDTMFName && m.control != nil && !m.declared(sendDTMFName):
				out = m.sendDTMF(ctx, tc.Arguments)
			case tc.Name == transferCallName && m.offersTransfer():
				if out = m.askTransfer(tc); out == nil {
					continue // answered once the engine has tried
				}
			default:
				r, err := m.tools.Call(ctx, tc.Name, tc.Arguments)
				if err != nil {
					r = toolError("%s", err.Error())
				}
				out = r
			}
			m.history = append(m.history, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: string(out)})
		}
		if m.pending != nil { // a transfer wins over endCall: it is tried first
			return Reply{Text: said.String(), Transfer: m.transfer}, nil
		}
		if end {
			return Reply{Text: said.String(), End: true}, nil
		}
	}
	if m.log != nil {
		m.log.Warn("tool-call loop bound reached", "assistant_id", m.a.ID, "rounds", m.rounds)
	}
	return Reply{Text: said.String()}, nil
}

// sendDTMF runs the built-in sendDTMF tool.
func (m *modelBrain) sendDTMF(ctx context.Context, args json.RawMessage) json.RawMessage {
	var a struct {
		Digits string `json:"digits"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return toolError(`arguments must be {"digits": "..."}`)
	}
	keys := strings.ToUpper(strings.Join(strings.Fields(a.Digits), ""))
	if !validKeys(keys) {
		return toolError("digits must be 1 to %d keys 0-9, *, #, A-D, not %q", MaxKeypadEntry, a.Digits)
	}
	if err := m.control.SendDTMF(ctx, keys); err != nil {
		return toolError("the keys were not sent: %s", err.Error())
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "sent": keys})
	return b
}

// askTransfer checks a transferCall: nil when the engine is to try it
// (m.pending and m.transfer set), else the tool's error answer.
func (m *modelBrain) askTransfer(tc llm.ToolCall) json.RawMessage {
	var a struct {
		Destination string `json:"destination"`
	}
	if len(tc.Arguments) > 0 {
		if err := json.Unmarshal(tc.Arguments, &a); err != nil {
			return toolError(`arguments must be {"destination": "..."}`)
		}
	}
	ds := m.a.Transfer.Destinations
	if a.Destination == "" && len(ds) == 1 {
		a.Destination = ds[0].Destination
	}
	d, ok := m.a.Transfer.Find(strings.TrimSpace(a.Destination))
	if !ok {
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = d.Destination
		}
		return toolError("unknown destination %q; choose one of: %s", a.Destination, strings.Join(names, ", "))
	}
	if m.transfers >= maxModelTransfers {
		return toolError("not transferred: %d transfers were already refused on this call; do not try again", m.transfers)
	}
	m.transfers++
	m.pending = &tc
	m.transfer = &Transfer{Destination: d.Destination, Message: d.Message}
	return nil
}
