package openai

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/llm/internal/wire"
	"switchboard/internal/llm/sse"
	"switchboard/internal/vendorapi"
)

// chunk is one streamed "chat.completion.chunk", or (with message instead of
// delta) a whole non-streamed completion.
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *usage          `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	Message      delta   `json:"message"`
	FinishReason *string `json:"finish_reason"`
}

type delta struct {
	// Content is read leniently: a string is text, anything else is ignored.
	Content   json.RawMessage `json:"content"`
	ToolCalls []toolDelta     `json:"tool_calls"`
}

type toolDelta struct {
	// Index is nil when a server leaves it out; the position in the list
	// stands in for it.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name string `json:"name"`
		// Arguments is a JSON string piece (OpenAI), the whole string
		// (Ollama, llama.cpp), or a JSON object (some servers).
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// finishReasons is the table from the server's finish_reason to llm's.
// Anything missing (content_filter, a server's own reason) is FinishStop.
var finishReasons = map[string]string{
	"stop":          llm.FinishStop,
	"tool_calls":    llm.FinishToolCalls,
	"function_call": llm.FinishToolCalls,
	"length":        llm.FinishLength,
}

// pendingCall is a tool call being assembled from its fragments.
type pendingCall struct {
	id, name string
	args     []byte
}

// complete reports whether the arguments so far are a whole JSON value, the
// sign that a later fragment naming a tool starts another call.
func (p *pendingCall) complete() bool { return len(p.args) > 0 && json.Valid(p.args) }

// decoder turns chunks into a Result, calling onDelta as text arrives.
type decoder struct {
	ep      *vendorapi.Endpoint
	start   time.Time
	onDelta func(string)

	text    strings.Builder
	calls   []*pendingCall
	byIndex map[int]*pendingCall
	finish  string
	usage   usage
	first   time.Duration
	budget  wire.Budget
}

func newDecoder(ep *vendorapi.Endpoint, start time.Time, onDelta func(string)) *decoder {
	return &decoder{ep: ep, start: start, onDelta: onDelta, byIndex: map[int]*pendingCall{}}
}

// stream reads an event stream to its "data: [DONE]". It returns what
// arrived so far with every error.
func (d *decoder) stream(ctx context.Context, body io.Reader) (llm.Result, error) {
	rd := sse.NewReader(body, sse.DefaultMaxLen)
	for {
		ev, err := rd.Next()
		switch {
		case errors.Is(err, io.EOF):
			return d.result(), d.ep.Failure(ctx, llm.CodeTruncated, true, errors.New("stream ended before data: [DONE]"))
		case errors.Is(err, sse.ErrTooLong):
			return d.result(), d.ep.Failure(ctx, llm.CodeTooLarge, false, err)
		case err != nil:
			return d.result(), d.ep.Failure(ctx, llm.CodeNetwork, true, err)
		}
		data := strings.TrimSpace(ev.Data)
		if ev.Type == "error" {
			return d.result(), d.streamError([]byte(data))
		}
		if data == "[DONE]" {
			return d.result(), nil
		}
		if data == "" {
			continue
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return d.result(), d.ep.Failure(ctx, llm.CodeBadResponse, false, fmt.Errorf("chunk is not JSON: %w", err))
		}
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return d.result(), d.streamError([]byte(data))
		}
		if err := d.apply(ch); err != nil {
			return d.result(), d.ep.Failure(ctx, llm.CodeTooLarge, false, err)
		}
	}
}

// whole reads a complete JSON completion: the reply of a server that
// ignored "stream": true. The text is passed to onDelta in one piece.
func (d *decoder) whole(ctx context.Context, body io.Reader) (llm.Result, error) {
	raw, err := io.ReadAll(io.LimitReader(body, wire.MaxOutput+1))
	if err != nil {
		return llm.Result{}, d.ep.Failure(ctx, llm.CodeNetwork, true, err)
	}
	if len(raw) > wire.MaxOutput {
		return llm.Result{}, d.ep.Failure(ctx, llm.CodeTooLarge, false, fmt.Errorf("reply exceeds %d bytes", wire.MaxOutput))
	}
	var ch chunk
	if err := json.Unmarshal(raw, &ch); err != nil {
		return llm.Result{}, d.ep.Failure(ctx, llm.CodeBadResponse, false, fmt.Errorf("reply is not JSON: %w", err))
	}
	if len(ch.Error) > 0 && string(ch.Error) != "null" {
		return llm.Result{}, d.streamError(raw)
	}
	if len(ch.Choices) == 0 {
		return llm.Result{}, d.ep.Failure(ctx, llm.CodeBadResponse, false, errors.New("reply has no choices"))
	}
	for i := range ch.Choices {
		ch.Choices[i].Delta = ch.Choices[i].Message
	}
	if err := d.apply(ch); err != nil {
		return d.result(), d.ep.Failure(ctx, llm.CodeTooLarge, false, err)
	}
	return d.result(), nil
}

// streamError classifies an error the server sent instead of a chunk.
func (d *decoder) streamError(data []byte) error {
	e, ok := decodeAPIError(data)
	if !ok {
		e.Message = "the server reported an error in the stream"
	}
	return d.ep.StreamError(e.status(), e.code(), e.Message)
}

func (d *decoder) apply(ch chunk) error {
	if u := ch.Usage; u != nil && (u.PromptTokens > 0 || u.CompletionTokens > 0) {
		d.usage = *u
	}
	for _, c := range ch.Choices {
		if c.Index != 0 {
			continue // only one choice is asked for
		}
		var text string
		if json.Unmarshal(c.Delta.Content, &text) == nil && text != "" {
			if err := d.budget.Spend(len(text)); err != nil {
				return err
			}
			d.markFirst()
			d.text.WriteString(text)
			if d.onDelta != nil {
				d.onDelta(text)
			}
		}
		for i, tc := range c.Delta.ToolCalls {
			if err := d.toolDelta(i, tc); err != nil {
				return err
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			d.finish = *c.FinishReason
		}
	}
	return nil
}

// toolDelta adds one fragment to the call it belongs to. A fragment starts a
// new call when its slot is empty, when it carries an id other than the
// slot's (Ollama sends parallel calls all at index 0), or when it names a
// tool while the slot already holds a named call with complete arguments.
func (d *decoder) toolDelta(pos int, tc toolDelta) error {
	idx := pos
	if tc.Index != nil {
		idx = *tc.Index
	}
	cur := d.byIndex[idx]
	newID := tc.ID != "" && cur != nil && cur.id != "" && tc.ID != cur.id
	newName := tc.ID == "" && tc.Function.Name != "" && cur != nil && cur.name != "" && cur.complete()
	if cur == nil || newID || newName {
		if len(d.calls) >= maxToolCalls {
			return fmt.Errorf("reply has more than %d tool calls", maxToolCalls)
		}
		cur = &pendingCall{}
		d.calls = append(d.calls, cur)
		d.byIndex[idx] = cur
	}
	if cur.id == "" {
		cur.id = tc.ID
	}
	if cur.name == "" {
		cur.name = tc.Function.Name
	}
	args := tc.Function.Arguments
	if err := d.budget.Spend(len(args) + len(tc.Function.Name)); err != nil {
		return err
	}
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		var piece string
		if json.Unmarshal(args, &piece) == nil {
			cur.args = append(cur.args, piece...)
		}
	default:
		cur.args = append(cur.args[:0], args...) // a whole JSON object
	}
	d.markFirst()
	return nil
}

// maxToolCalls bounds the calls in one reply; models make a handful.
const maxToolCalls = 128

func (d *decoder) markFirst() {
	if d.first == 0 {
		d.first = max(time.Since(d.start), time.Nanosecond)
	}
}

// result assembles what has arrived. Calls without a name cannot be run and
// are dropped; calls without an id get one.
func (d *decoder) result() llm.Result {
	res := llm.Result{
		Text:            d.text.String(),
		InputTokens:     d.usage.PromptTokens,
		OutputTokens:    d.usage.CompletionTokens,
		FirstTokenAfter: d.first,
	}
	for _, p := range d.calls {
		if p.name == "" {
			continue
		}
		id := p.id
		if id == "" {
			id = newCallID()
		}
		res.ToolCalls = append(res.ToolCalls, llm.ToolCall{ID: id, Name: p.name, Arguments: wire.Arguments(p.args)})
	}
	res.FinishReason = normalizeFinish(d.finish, len(res.ToolCalls) > 0)
	return res
}

// normalizeFinish maps the server's reason through finishReasons and then
// trusts the calls over the reason: llama.cpp and older Ollama say "stop"
// after calling tools, and "tool_calls" without a usable call means there is
// nothing to run.
func normalizeFinish(raw string, hasCalls bool) string {
	r, ok := finishReasons[raw]
	if !ok {
		r = llm.FinishStop
	}
	switch {
	case r == llm.FinishStop && hasCalls:
		return llm.FinishToolCalls
	case r == llm.FinishToolCalls && !hasCalls:
		return llm.FinishStop
	}
	return r
}

// newCallID makes an id for a call the server sent without one. It is
// random, not a counter, so ids stay unique across the turns of a history
// (Anthropic refuses duplicates if the call moves there).
func newCallID() string {
	return "call_" + strings.ToLower(rand.Text()[:16])
}

// decodeAPIError reads an error envelope in any of the shapes servers send.
func decodeAPIError(data []byte) (apiError, bool) {
	var b errorBody
	if json.Unmarshal(data, &b) != nil {
		return apiError{}, false
	}
	var e apiError
	switch {
	case json.Unmarshal(b.Error, &e) == nil && e.Message != "":
	case json.Unmarshal(b.Error, &e.Message) == nil && e.Message != "":
	case b.Message != "":
		e = apiError{Message: b.Message, Type: b.Type, Code: b.Code}
	default:
		return apiError{}, false
	}
	return e, true
}
