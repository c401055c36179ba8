package conversation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/id"
	"switchboard/internal/webhook"
)

// HTTPTools calls an assistant's HTTP tools: it POSTs
// {"name", "arguments", "callId"} to the tool's URL, signed with the
// assistant's tool secret like a webhook (webhook-id, webhook-timestamp,
// webhook-signature), and returns the JSON answer.
type HTTPTools struct {
	Tools  []assistant.Tool
	Secret string
	CallID string
	// Client sends the requests; it should carry the SSRF guard's transport.
	Client *http.Client
}

// maxToolAnswer bounds what a tool may answer.
const maxToolAnswer = 64 << 10

// Call runs one tool.
func (h *HTTPTools) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	var tool *assistant.Tool
	for i := range h.Tools {
		if h.Tools[i].Name == name {
			tool = &h.Tools[i]
		}
	}
	if tool == nil {
		return nil, fmt.Errorf("tool %q is not declared on this assistant", name)
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		CallID    string          `json:"callId"`
	}{name, args, h.CallID})
	if err != nil {
		return nil, fmt.Errorf("tool %s: arguments are not JSON: %w", name, err)
	}
	timeout := time.Duration(tool.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tool.URL, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard-Tools/1")
	if h.Secret != "" {
		msgID, now := id.New("tool"), time.Now()
		sig, err := webhook.Sign(h.Secret, msgID, now, body)
		if err != nil {
			return nil, fmt.Errorf("tool %s: signing: %w", name, err)
		}
		req.Header.Set(webhook.HeaderID, msgID)
		req.Header.Set(webhook.HeaderTimestamp, fmt.Sprint(now.Unix()))
		req.Header.Set(webhook.HeaderSignature, sig)
	}
	client := h.Client
	if client == nil {
		client = &http.Client{Transport: webhook.Guard{}.Transport()}
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", name, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxToolAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("tool %s: reading the answer: %w", name, err)
	}
	if res.StatusCode/100 != 2 {
		return nil, fmt.Errorf("tool %s answered HTTP %d", name, res.StatusCode)
	}
	if len(answer) > maxToolAnswer {
		return nil, fmt.Errorf("tool %s answered more than %d bytes", name, maxToolAnswer)
	}
	if len(bytes.TrimSpace(answer)) == 0 {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid(answer) {
		b, _ := json.Marshal(map[string]string{"text": string(answer)})
		return b, nil
	}
	return answer, nil
}
