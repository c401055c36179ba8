// Package wire holds what the model clients share above the vendor API
// Endpoint (internal/vendorapi) and below their wire formats: refusing an
// invalid request, bounding a reply, and making streamed tool arguments
// safe to hand on.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"switchboard/internal/llm"
	"switchboard/internal/vendorapi"
)

// MaxOutput bounds a whole reply (text and tool arguments): far above any
// spoken answer, low enough that a server streaming forever fails fast.
const MaxOutput = 4 << 20

// Endpoint returns the provider endpoint of a model client: its failures
// read as the model clients' always have ("request canceled"; a timed-out
// request is a retryable network error).
func Endpoint(name, apiKey string, h http.Header, hc *http.Client, parse vendorapi.ErrorParser) vendorapi.Endpoint {
	return vendorapi.Endpoint{
		Provider:        name,
		Header:          h,
		Secret:          apiKey,
		HTTP:            hc,
		ParseError:      parse,
		CanceledMessage: "request canceled",
	}
}

// Invalid wraps a Request.Validate failure (or a request that cannot be
// encoded): one line, every problem kept, each naming its field.
func Invalid(ep *vendorapi.Endpoint, err error) *llm.Error {
	return &llm.Error{Provider: ep.Provider, Code: llm.CodeInvalidRequest, Message: strings.ReplaceAll(err.Error(), "\n", "; ")}
}

// IsJSON reports whether the response is a JSON document rather than an
// event stream: a server that ignored "stream": true.
func IsJSON(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// Arguments turns streamed tool-call arguments into the valid JSON
// llm.ToolCall promises: "{}" for none, the compacted JSON when it parses,
// and otherwise the raw text as a JSON string.
func Arguments(raw []byte) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.Bytes()
	}
	quoted, _ := json.Marshal(string(raw))
	return quoted
}

// ObjectOrEmpty returns args when it is a JSON object and "{}" otherwise:
// Anthropic refuses a tool_use whose input is not an object.
func ObjectOrEmpty(args json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return args
}

// Budget counts reply bytes against MaxOutput.
type Budget struct{ used int }

// Spend adds n bytes and fails once the reply is over the bound.
func (b *Budget) Spend(n int) error {
	b.used += n
	if b.used > MaxOutput {
		return fmt.Errorf("reply exceeds %d bytes", MaxOutput)
	}
	return nil
}
