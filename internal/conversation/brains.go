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
	"switchboard/internal/flow"
	"switchboard/internal/llm"
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
	// Now and Location are the flow runner's clock (relative dates).
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
	switch a.Model.Provider {
	case "flow", "":
		if len(a.Flow) == 0 || string(a.Flow) == "null" {
			return &noteTaker{}, nil
		}
		f, err := flow.Parse(a.Flow)
		if err != nil {
			return nil, fmt.Errorf("assistant %s: %w", a.ID, err)
		}
		now := b.Now
		if now == nil {
			now = time.Now
		}
		return &flowBrain{runner: f.NewRunner(now, b.Location), tools: tools}, nil
	}
	client, ok := b.Models[a.Model.Provider]
	if !ok {
		return nil, fmt.Errorf("assistant %s: model provider %q is not configured on this server", a.ID, a.Model.Provider)
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

// noteTaker is the brain of a flow assistant without a flow: it hears one
// caller turn, thanks them and ends the call.
type noteTaker struct{}

func (*noteTaker) Open(context.Context, func(string)) (Reply, error) { return Reply{}, nil }
func (*noteTaker) Respond(ctx context.Context, text string, emit func(string)) (Reply, error) {
	return Reply{Text: "Thank you, I have noted that. Goodbye.", End: true}, nil
}
func (*noteTaker) Said(string)         {}
func (*noteTaker) Result() call.Result { return call.Result{} }

// flowBrain runs a scripted flow, calling its tools as the flow asks.
type flowBrain struct {
	runner  *flow.Runner
	tools   ToolRunner
	ended   bool
	success bool
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

// run follows a step through its tool calls, saying each part as it comes.
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
		if st.Tool == nil {
			break
		}
		res, err := f.tools.Call(ctx, st.Tool.Name, st.Tool.Args)
		st = f.runner.ToolResult(res, err)
	}
	if st.End {
		f.ended, f.success = true, st.Success
	}
	return Reply{Text: strings.Join(said, " "), End: st.End}, nil
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

func (m *modelBrain) Respond(ctx context.Context, text string, emit func(string)) (rep Reply, err error) {
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
			m.history = append(m.history[:mark], llm.Message{Role: llm.RoleUser, Content: text})
			if said.Len() > 0 {
				m.history = append(m.history, llm.Message{Role: llm.RoleAssistant, Content: said.String()})
			}
		default:
			m.history = m.history[:mark]
		}
	}()
	m.history = append(m.history, llm.Message{Role: llm.RoleUser, Content: text})
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
			if tc.Name == EndCallTool.Name {
				end = true
				out = json.RawMessage(`{"ok":true}`)
			} else {
				r, err := m.tools.Call(ctx, tc.Name, tc.Arguments)
				if err != nil {
					b, _ := json.Marshal(map[string]string{"error": err.Error()})
					r = b
				}
				out = r
			}
			m.history = append(m.history, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: string(out)})
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
