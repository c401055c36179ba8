// Package routing owns inbound routing (docs/ARCHITECTURE.md, "Inbound
// routing"): an organization's assistantRequest endpoint (Endpoint), the
// signed question the server asks it about each inbound call (Request,
// Client.Ask) and the answer it may give (Answer: an assistant, overrides,
// a refusal), and what the call records of the decision (Record). Its
// subpackage ask puts the question over HTTP.
package routing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/jsontext"
	"switchboard/internal/phone"
	"switchboard/internal/vars"
)

// Endpoint is an organization's assistantRequest setting.
type Endpoint struct {
	OrgID string
	URL   string
	// Timeout is the deadline of one question (DefaultTimeout when zero).
	Timeout time.Duration
	// Secret signs the questions (whsec_…).
	Secret    string
	UpdatedAt time.Time
}

// Bounds of an endpoint's deadline, and of an answer.
const (
	DefaultTimeout = 1500 * time.Millisecond
	MinTimeout     = 200 * time.Millisecond
	MaxTimeout     = 5 * time.Second
	MaxAnswer      = 64 << 10
	// EventType is the question's type.
	EventType = "assistant.request"
	// MaxFirstMessage bounds an override's first message, as an assistant's.
	MaxFirstMessage = 4000
)

// Request is what the endpoint is told of an inbound call.
type Request struct {
	CallID      string `json:"callId"`
	From        string `json:"from"`
	To          string `json:"to"`
	PurchaseID  string `json:"phonePurchaseId"`
	Provider    string `json:"provider"`
	AssistantID string `json:"assistantId"` // the number's allocated inbound assistant
	DoNotCall   bool   `json:"doNotCall"`   // the caller id is on the organization's list
}

// Answer is what the endpoint decided.
type Answer struct {
	// AssistantID is the assistant to answer with ("" keeps the allocated one).
	AssistantID string
	// FirstMessage overrides the assistant's for this call ("": none).
	FirstMessage string
	// Variables join the call's (checked as a request's are).
	Variables vars.Values
	// Refuse is "busy": the call is not answered.
	Refuse string
	// Forward is a number (E.164) the call is redirected to, unanswered.
	Forward string
}

// ParseAnswer reads an endpoint's answer; its error says what is wrong,
// for the call's record.
func ParseAnswer(body []byte) (Answer, error) {
	var a Answer
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return a, errors.New("the answer is not a JSON object")
	}
	if ps := jsontext.Check(body, jsontext.Limits{}); len(ps) > 0 {
		return a, fmt.Errorf("the answer breaks the text rules at %q", ps[0].Path)
	}
	var raw struct {
		AssistantID string          `json:"assistantId"`
		Overrides   json.RawMessage `json:"assistantOverrides"`
		Variables   json.RawMessage `json:"variables"`
		Refuse      string          `json:"refuse"`
		Forward     string          `json:"forward"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return a, fmt.Errorf("the answer is not the documented JSON: %v", err)
	}
	if raw.AssistantID != "" && !id.Valid(id.Assistant, raw.AssistantID) {
		return a, fmt.Errorf("assistantId %q is not an assistant id", trim(raw.AssistantID))
	}
	a.AssistantID = raw.AssistantID
	if len(raw.Overrides) > 0 && string(raw.Overrides) != "null" {
		var ov struct {
			FirstMessage *string `json:"firstMessage"`
		}
		d := json.NewDecoder(bytes.NewReader(raw.Overrides))
		d.DisallowUnknownFields()
		if err := d.Decode(&ov); err != nil {
			return Answer{}, fmt.Errorf("assistantOverrides: %v (it takes firstMessage)", err)
		}
		if ov.FirstMessage != nil {
			if len(*ov.FirstMessage) > MaxFirstMessage {
				return Answer{}, fmt.Errorf("assistantOverrides.firstMessage is over %d bytes", MaxFirstMessage)
			}
			if err := vars.Check(*ov.FirstMessage); err != nil {
				return Answer{}, fmt.Errorf("assistantOverrides.firstMessage: template %v", err)
			}
			a.FirstMessage = *ov.FirstMessage
		}
	}
	v, problems := vars.Request("variables", raw.Variables)
	if len(problems) > 0 {
		return Answer{}, fmt.Errorf("%s %s", problems[0].Field, problems[0].Message)
	}
	a.Variables = v
	switch raw.Refuse {
	case "":
	case "busy":
		a.Refuse = raw.Refuse
	default:
		return Answer{}, fmt.Errorf(`refuse %q: the only refusal is "busy"`, trim(raw.Refuse))
	}
	if raw.Forward != "" {
		n, err := phone.NormalizeE164(raw.Forward)
		if err != nil {
			return Answer{}, fmt.Errorf("forward: %v", err)
		}
		a.Forward = n
	}
	if a.Refuse != "" && a.Forward != "" {
		return Answer{}, errors.New("the answer both refuses and forwards the call")
	}
	return a, nil
}

func trim(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "")
}

// Record is what a call keeps of how it was routed (its routing member).
type Record struct {
	// Source is "webhook" (the endpoint chose), "fallback" (it was asked
	// and did not, Reason says why) or "allocation" (no endpoint).
	Source string `json:"source"`
	Reason string `json:"reason,omitempty"`
	// FirstMessage is the endpoint's override, said instead of the
	// assistant's.
	FirstMessage string `json:"firstMessage,omitempty"`
}

// Record sources.
const (
	SourceWebhook    = "webhook"
	SourceFallback   = "fallback"
	SourceAllocation = "allocation"
)

// JSON is r as the call stores it.
func (r Record) JSON() json.RawMessage {
	b, err := vars.Marshal(r)
	if err != nil {
		return nil
	}
	return b
}

// ParseRecord reads a stored record; none is the zero Record.
func ParseRecord(raw json.RawMessage) Record {
	var r Record
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &r)
	}
	return r
}
