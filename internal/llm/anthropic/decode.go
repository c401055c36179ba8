package anthropic

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

// event is any stream event; which fields are set depends on Type.
type event struct {
	Type    string `json:"type"`
	Message *struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage `json:"usage"`
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// input is every input token, cached or not: what the request cost in context.
func (u usage) input() int {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// stopReasons is the table from stop_reason to llm's finish reasons.
// Anything missing (refusal, pause_turn) is FinishStop.
var stopReasons = map[string]string{
	"end_turn":                      llm.FinishStop,
	"stop_sequence":                 llm.FinishStop,
	"tool_use":                      llm.FinishToolCalls,
	"max_tokens":                    llm.FinishLength,
	"model_context_window_exceeded": llm.FinishLength,
}

// toolBlock is a tool_use block being assembled.
type toolBlock struct {
	id, name string
	start    json.RawMessage // the input in content_block_start
	args     []byte          // the input_json_delta pieces
	deltas   bool
}

type decoder struct {
	ep      *vendorapi.Endpoint
	start   time.Time
	onDelta func(string)

	text   strings.Builder
	tools  []*toolBlock
	blocks map[int]*toolBlock
	stop   string
	in     int
	out    int
	first  time.Duration
	budget wire.Budget
}

func newDecoder(ep *vendorapi.Endpoint, start time.Time, onDelta func(string)) *decoder {
	return &decoder{ep: ep, start: start, onDelta: onDelta, blocks: map[int]*toolBlock{}}
}

// stream reads events to message_stop. It returns what arrived so far with
// every error.
func (d *decoder) stream(ctx context.Context, body io.Reader) (llm.Result, error) {
	rd := sse.NewReader(body, sse.DefaultMaxLen)
	for {
		ev, err := rd.Next()
		switch {
		case errors.Is(err, io.EOF):
			return d.result(), d.ep.Failure(ctx, llm.CodeTruncated, true, errors.New("stream ended before message_stop"))
		case errors.Is(err, sse.ErrTooLong):
			return d.result(), d.ep.Failure(ctx, llm.CodeTooLarge, false, err)
		case err != nil:
			return d.result(), d.ep.Failure(ctx, llm.CodeNetwork, true, err)
		}
		if strings.TrimSpace(ev.Data) == "" {
			continue
		}
		var e event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
			return d.result(), d.ep.Failure(ctx, llm.CodeBadResponse, false, fmt.Errorf("%s event is not JSON: %w", ev.Type, err))
		}
		if e.Type == "" {
			e.Type = ev.Type // the data's type is authoritative; the event name stands in
		}
		switch e.Type {
		case "message_stop":
			return d.result(), nil
		case "error":
			return d.result(), d.streamError([]byte(ev.Data))
		}
		if err := d.apply(e); err != nil {
			return d.result(), d.ep.Failure(ctx, llm.CodeTooLarge, false, err)
		}
	}
}

func (d *decoder) streamError(data []byte) error {
	code, msg, ok := parseError(data)
	if !ok {
		msg = "the server reported an error in the stream"
	}
	return d.ep.StreamError(errorStatus[code], code, msg)
}

// apply takes one event. Events it does not know (ping, thinking blocks,
// future additions) are skipped, as the API's versioning policy asks.
func (d *decoder) apply(e event) error {
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			d.in, d.out = e.Message.Usage.input(), e.Message.Usage.OutputTokens
		}
	case "content_block_start":
		cb := e.ContentBlock
		if cb == nil {
			return nil
		}
		switch cb.Type {
		case "text":
			return d.emit(cb.Text)
		case "tool_use":
			if len(d.tools) >= maxToolCalls {
				return fmt.Errorf("reply has more than %d tool calls", maxToolCalls)
			}
			tb := &toolBlock{id: cb.ID, name: cb.Name, start: cb.Input}
			d.tools = append(d.tools, tb)
			d.blocks[e.Index] = tb
			d.markFirst()
			return d.budget.Spend(len(cb.Input) + len(cb.Name))
		}
	case "content_block_delta":
		if e.Delta == nil {
			return nil
		}
		switch e.Delta.Type {
		case "text_delta":
			return d.emit(e.Delta.Text)
		case "input_json_delta":
			tb := d.blocks[e.Index]
			if tb == nil {
				return nil // a delta for a block that never started
			}
			tb.args = append(tb.args, e.Delta.PartialJSON...)
			tb.deltas = true
			d.markFirst()
			return d.budget.Spend(len(e.Delta.PartialJSON))
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			d.stop = e.Delta.StopReason
		}
		if u := e.Usage; u != nil {
			// output_tokens here is cumulative; input appears only in newer
			// versions of the API and, when it does, is the final count.
			if u.OutputTokens > 0 {
				d.out = u.OutputTokens
			}
			if u.input() > 0 {
				d.in = u.input()
			}
		}
	}
	return nil
}

const maxToolCalls = 128

func (d *decoder) emit(text string) error {
	if text == "" {
		return nil
	}
	if err := d.budget.Spend(len(text)); err != nil {
		return err
	}
	d.markFirst()
	d.text.WriteString(text)
	if d.onDelta != nil {
		d.onDelta(text)
	}
	return nil
}

func (d *decoder) markFirst() {
	if d.first == 0 {
		d.first = max(time.Since(d.start), time.Nanosecond)
	}
}

// result assembles what has arrived. A tool_use block's input is its
// input_json_delta pieces; a proxy that sends the whole input in
// content_block_start and no deltas is believed too.
func (d *decoder) result() llm.Result {
	res := llm.Result{
		Text:            d.text.String(),
		InputTokens:     d.in,
		OutputTokens:    d.out,
		FirstTokenAfter: d.first,
	}
	for _, tb := range d.tools {
		if tb.name == "" {
			continue
		}
		args := tb.args
		if !tb.deltas {
			args = tb.start
		}
		id := tb.id
		if id == "" {
			id = "toolu_" + strings.ToLower(rand.Text()[:16]) // a proxy that dropped it
		}
		res.ToolCalls = append(res.ToolCalls, llm.ToolCall{ID: id, Name: tb.name, Arguments: wire.Arguments(args)})
	}
	r, ok := stopReasons[d.stop]
	if !ok {
		r = llm.FinishStop
	}
	switch {
	case r == llm.FinishStop && len(res.ToolCalls) > 0:
		r = llm.FinishToolCalls
	case r == llm.FinishToolCalls && len(res.ToolCalls) == 0:
		r = llm.FinishStop
	}
	res.FinishReason = r
	return res
}
