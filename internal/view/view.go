// Package view is the API's JSON form of calls, times and voice latency,
// shared by the REST API and webhook payloads so that a call reads the same
// everywhere.
// Hot paths render by hand (no reflection); tests compare with encoding/json.
package view

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/call"
	"switchboard/internal/vars"
)

// Marshal encodes v without escaping <, > and & (these are JSON
// responses, not HTML; URLs stay readable).
func Marshal(v any) ([]byte, error) { return vars.Marshal(v) }

// Time renders a time as RFC 3339 UTC with milliseconds, or null.
type Time time.Time

// MarshalJSON renders the time or null.
func (t Time) MarshalJSON() ([]byte, error) { return t.AppendJSON(make([]byte, 0, 26)), nil }

// AppendJSON appends the time as a JSON string, or null for the zero time.
func (t Time) AppendJSON(b []byte) []byte {
	if time.Time(t).IsZero() {
		return append(b, "null"...)
	}
	return append(AppendTimestamp(append(b, '"'), time.Time(t)), '"')
}

// AppendTimestamp appends t as 2006-01-02T15:04:05.000Z (UTC, milliseconds);
// written out by hand because time.AppendFormat was the listing's largest
// rendering cost.
func AppendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
	}
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':', byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
	return b
}

// Call is a call as the API shows it.
type Call struct {
	ID              string  `json:"id"`
	Type            string  `json:"type"`
	Status          int     `json:"status"`
	StatusText      string  `json:"statusText"`
	Outcome         *string `json:"outcome"`
	EndedReason     *string `json:"endedReason"`
	AssistantID     string  `json:"assistantId"`
	PhonePurchaseID string  `json:"phonePurchaseId,omitempty"`
	From            string  `json:"from,omitempty"`
	To              string  `json:"to,omitempty"`
	Provider        string  `json:"provider,omitempty"`
	Direction       string  `json:"direction,omitempty"`
	ProviderCallID  string  `json:"providerCallId,omitempty"`
	AttemptID       string  `json:"scheduleAttemptId,omitempty"`
	CreatedAt       Time    `json:"createdAt"`
	UpdatedAt       Time    `json:"updatedAt"`
	StartedAt       Time    `json:"startedAt"`
	EndedAt         Time    `json:"endedAt"`
	DurationSeconds float64 `json:"durationSeconds"`
	// RecordingURL is where the call's recording is served (GET
	// /v1/calls/{id}/recording), absolute; only when it has one.
	RecordingURL string `json:"recordingUrl,omitempty"`
	// Variables are the call's variables (docs/api.md, "Variables"), as
	// stored; {} for a call created before them.
	Variables json.RawMessage `json:"variables"`
	// Routing is how an inbound call's assistant was chosen; absent on
	// other calls.
	Routing json.RawMessage `json:"routing,omitempty"`
}

// MarshalJSON writes the call by hand: listings render thousands of calls a
// second and reflection-based encoding was a tenth of the listing's CPU.
// A test checks it against the reflective encoding of the same struct.
func (v Call) MarshalJSON() ([]byte, error) { return v.AppendJSON(make([]byte, 0, 640)), nil }

// AppendJSON appends the call's JSON.
func (v Call) AppendJSON(b []byte) []byte {
	str := func(b []byte, key, val string) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return AppendString(b, val)
	}
	optStr := func(b []byte, key string, val *string) []byte {
		if val == nil {
			b = append(b, ',', '"')
			b = append(b, key...)
			return append(b, `":null`...)
		}
		return str(b, key, *val)
	}
	when := func(b []byte, key string, t Time) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return t.AppendJSON(b)
	}
	b = append(b, `{"id":`...)
	b = AppendString(b, v.ID)
	b = str(b, "type", v.Type)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(v.Status), 10)
	b = str(b, "statusText", v.StatusText)
	b = optStr(b, "outcome", v.Outcome)
	b = optStr(b, "endedReason", v.EndedReason)
	b = str(b, "assistantId", v.AssistantID)
	for _, f := range [...]struct{ k, v string }{{"phonePurchaseId", v.PhonePurchaseID}, {"from", v.From}, {"to", v.To}, {"provider", v.Provider},
		{"direction", v.Direction}, {"providerCallId", v.ProviderCallID}, {"scheduleAttemptId", v.AttemptID}} {
		if f.v != "" {
			b = str(b, f.k, f.v)
		}
	}
	b = when(b, "createdAt", v.CreatedAt)
	b = when(b, "updatedAt", v.UpdatedAt)
	b = when(b, "startedAt", v.StartedAt)
	b = when(b, "endedAt", v.EndedAt)
	b = append(b, `,"durationSeconds":`...)
	b = strconv.AppendFloat(b, v.DurationSeconds, 'f', -1, 64)
	if v.RecordingURL != "" {
		b = str(b, "recordingUrl", v.RecordingURL)
	}
	b = append(b, `,"variables":`...)
	if len(v.Variables) == 0 {
		b = append(b, noVariables...)
	} else {
		b = append(b, v.Variables...)
	}
	if len(v.Routing) > 0 {
		b = append(b, `,"routing":`...)
		b = append(b, v.Routing...)
	}
	return append(b, '}')
}

// noVariables is the variables of a call that has none.
var noVariables = json.RawMessage(`{}`)

// NewCall is the view of c.
func NewCall(c call.Call) Call {
	v := Call{
		ID: c.ID, Type: string(c.Type), Status: int(c.Status), StatusText: c.Status.Text(), AssistantID: c.AssistantID,
		PhonePurchaseID: c.PurchaseID, From: c.From, To: c.To, Provider: c.Provider, AttemptID: c.AttemptID,
		Direction: string(c.Direction), ProviderCallID: c.ProviderCallID,
		CreatedAt: Time(c.CreatedAt), UpdatedAt: Time(c.UpdatedAt), StartedAt: Time(c.StartedAt), EndedAt: Time(c.EndedAt),
		DurationSeconds: c.DurationSeconds(), Variables: c.Variables, Routing: c.Routing,
	}
	if len(v.Variables) == 0 {
		v.Variables = noVariables
	}
	if c.Status == call.Ended {
		o, r := string(c.Outcome), c.EndedReason
		v.Outcome, v.EndedReason = &o, &r
	}
	return v
}

// GatewayPath is the websocket path of web calls.
const GatewayPath = "/new-web-call/connection"

// GatewayURL is where a client joins web call c: the websocket form of the
// server's public URL base (http → ws, https → wss), then
// GatewayPath?assistant_id=…&call_id=… (the call id is the credential).
func GatewayURL(base string, c call.Call) string {
	base = strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + GatewayPath + "?assistant_id=" + url.QueryEscape(c.AssistantID) + "&call_id=" + url.QueryEscape(c.ID)
}

// NewCallAt is NewCall with the absolute URL of the call's recording, when
// it has one, under base (the server's public URL): what the API and the
// webhooks show.
func NewCallAt(c call.Call, base string) Call {
	v := NewCall(c)
	if c.Recording != "" {
		v.RecordingURL = strings.TrimRight(base, "/") + "/v1/calls/" + url.PathEscape(c.ID) + "/recording"
	}
	return v
}

// AppendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced, as encoding/json does.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\'
	}
	if plain { // ids, numbers, names: nothing to escape
		b = append(b, s...)
		return append(b, '"')
	}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			b = append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
		default:
			b = utf8.AppendRune(b, r) // invalid bytes arrive as RuneError and are written as U+FFFD
		}
	}
	return append(b, '"')
}
