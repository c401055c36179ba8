package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"switchboard/internal/llm"
	"switchboard/internal/vendorapi"
)

// FuzzDecode feeds arbitrary bytes as a stream body. The decoder must not
// panic, must fail only with *llm.Error, and must keep its promises: the
// text is what onDelta saw, onDelta never sees empty text, every tool call
// has an id, a name and valid JSON arguments, the finish reason is normalized.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\"}}]}}]}\n\ndata: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":1}}]},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1,\"function\":{\"name\":\"g\",\"arguments\":{}}}]}}]}\n\ndata: [DONE]\n\n",
		"data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"g\"}},{\"id\":\"b\",\"index\":0,\"function\":{\"name\":\"h\",\"arguments\":\"[]\"}}]}}],\"usage\":{\"prompt_tokens\":3}}\n\ndata: [DONE]\n\n",
		"error: {\"code\":\"x\"}\n\n",
		"data: {\"error\":\"boom\"}\n\n",
	} {
		f.Add(seed)
	}
	ep := &vendorapi.Endpoint{Provider: Provider}
	f.Fuzz(func(t *testing.T, body string) {
		var text strings.Builder
		d := newDecoder(ep, time.Now(), func(s string) {
			if s == "" {
				t.Errorf("onDelta called with empty text")
			}
			text.WriteString(s)
		})
		res, err := d.stream(context.Background(), strings.NewReader(body))
		checkResult(t, body, res, err, text.String())
	})
}

func checkResult(t *testing.T, body string, res llm.Result, err error, deltas string) {
	t.Helper()
	var le *llm.Error
	if err != nil && !errors.As(err, &le) {
		t.Fatalf("stream(%q) error %v (%T) is not *llm.Error", body, err, err)
	}
	if res.Text != deltas {
		t.Fatalf("stream(%q): Result.Text %q, deltas %q", body, res.Text, deltas)
	}
	for _, tc := range res.ToolCalls {
		if !json.Valid(tc.Arguments) || tc.ID == "" || tc.Name == "" {
			t.Fatalf("stream(%q): tool call %+v lacks valid arguments, an id or a name", body, tc)
		}
	}
	switch res.FinishReason {
	case llm.FinishStop, llm.FinishToolCalls, llm.FinishLength:
	default:
		t.Fatalf("stream(%q): FinishReason %q is not normalized", body, res.FinishReason)
	}
}
