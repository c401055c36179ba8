package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"switchboard/internal/assistant"
	"switchboard/internal/phone"
	"time"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/call"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// jsonMarshal encodes v without escaping <, > and & (these are JSON
// responses, not HTML; URLs stay readable).
func jsonMarshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ts renders a time as RFC 3339 UTC with milliseconds, or null.
type ts time.Time

func (t ts) MarshalJSON() ([]byte, error) { return t.appendJSON(make([]byte, 0, 26)), nil }

func (t ts) appendJSON(b []byte) []byte {
	if time.Time(t).IsZero() {
		return append(b, "null"...)
	}
	return append(appendTimestamp(append(b, '"'), time.Time(t)), '"')
}

// appendTimestamp appends t as 2006-01-02T15:04:05.000Z (UTC, milliseconds);
// written out by hand because time.AppendFormat was the listing's largest
// rendering cost.
func appendTimestamp(b []byte, t time.Time) []byte {
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

// callView is a call as the API shows it.
type callView struct {
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
	AttemptID       string  `json:"scheduleAttemptId,omitempty"`
	CreatedAt       ts      `json:"createdAt"`
	UpdatedAt       ts      `json:"updatedAt"`
	StartedAt       ts      `json:"startedAt"`
	EndedAt         ts      `json:"endedAt"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// MarshalJSON writes the call by hand: listings render thousands of calls a
// second and reflection-based encoding was a tenth of the listing's CPU.
// A test checks it against the reflective encoding of the same struct.
func (v callView) MarshalJSON() ([]byte, error) { return v.appendJSON(make([]byte, 0, 640)), nil }

func (v callView) appendJSON(b []byte) []byte {
	str := func(b []byte, key, val string) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return appendString(b, val)
	}
	optStr := func(b []byte, key string, val *string) []byte {
		if val == nil {
			b = append(b, ',', '"')
			b = append(b, key...)
			return append(b, `":null`...)
		}
		return str(b, key, *val)
	}
	when := func(b []byte, key string, t ts) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return t.appendJSON(b)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, v.ID)
	b = str(b, "type", v.Type)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(v.Status), 10)
	b = str(b, "statusText", v.StatusText)
	b = optStr(b, "outcome", v.Outcome)
	b = optStr(b, "endedReason", v.EndedReason)
	b = str(b, "assistantId", v.AssistantID)
	for _, f := range [...]struct{ k, v string }{{"phonePurchaseId", v.PhonePurchaseID}, {"from", v.From}, {"to", v.To}, {"provider", v.Provider}, {"scheduleAttemptId", v.AttemptID}} {
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
	return append(b, '}')
}

func viewCall(c call.Call) callView {
	v := callView{
		ID: c.ID, Type: string(c.Type), Status: int(c.Status), StatusText: c.Status.Text(), AssistantID: c.AssistantID,
		PhonePurchaseID: c.PurchaseID, From: c.From, To: c.To, Provider: c.Provider, AttemptID: c.AttemptID,
		CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt), StartedAt: ts(c.StartedAt), EndedAt: ts(c.EndedAt),
		DurationSeconds: c.DurationSeconds(),
	}
	if c.Status == call.Ended {
		o, r := string(c.Outcome), c.EndedReason
		v.Outcome, v.EndedReason = &o, &r
	}
	return v
}

type keyView struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	Last4      string   `json:"last4"`
	CreatedAt  ts       `json:"createdAt"`
	LastUsedAt ts       `json:"lastUsedAt"`
	RevokedAt  ts       `json:"revokedAt"`
}

// KeyView is how a key is shown in listings: never its secret or hash.
func KeyView(k auth.Key) any {
	return keyView{ID: k.ID, Name: k.Name, Scopes: k.Scopes, Last4: k.Last4, CreatedAt: ts(k.CreatedAt), LastUsedAt: ts(k.LastUsedAt), RevokedAt: ts(k.RevokedAt)}
}

type attemptView struct {
	ID        string  `json:"id"`
	ContactID string  `json:"contactId"`
	DueAt     ts      `json:"dueAt"`
	State     string  `json:"state"`
	CallID    *string `json:"callId"`
	Outcome   *string `json:"outcome"`
	Error     string  `json:"error,omitempty"`
	UpdatedAt ts      `json:"updatedAt"`
}

// attemptState is the attempt's state as shown: dialed attempts show the
// progress of their call (in-progress until it ends, then completed).
func viewAttempt(a schedule.Attempt) attemptView {
	v := attemptView{ID: a.ID, ContactID: a.ContactID, DueAt: ts(a.DueAt), State: string(a.State), Error: a.Error, UpdatedAt: ts(a.UpdatedAt)}
	ended := a.CallStatus == int(call.Ended)
	v.State = schedule.Progress(a.State, ended)
	if a.CallID != "" {
		cid := a.CallID
		v.CallID = &cid
	}
	if ended {
		o := a.CallOutcome
		v.Outcome = &o
	}
	return v
}

type scheduleView struct {
	ID            string         `json:"id"`
	Name          string         `json:"name"`
	PhoneID       string         `json:"phone_id"`
	Message       string         `json:"message"`
	Timezone      string         `json:"timezone"`
	Dates         []string       `json:"dates"`
	ContactsID    []string       `json:"contacts_id"`
	State         string         `json:"state"`
	CreatedAt     ts             `json:"createdAt"`
	CanceledAt    ts             `json:"canceledAt"`
	AttemptCounts map[string]int `json:"attemptCounts,omitempty"`
	Attempts      []attemptView  `json:"attempts,omitempty"`
}

func viewSchedule(s schedule.Schedule) scheduleView {
	v := scheduleView{ID: s.ID, Name: s.Name, PhoneID: s.PurchaseID, Message: s.Message, Timezone: s.Timezone,
		ContactsID: s.ContactIDs, CreatedAt: ts(s.CreatedAt), CanceledAt: ts(s.CanceledAt), Dates: []string{}}
	for _, d := range s.Dates {
		v.Dates = append(v.Dates, d.UTC().Format(schedule.DateLayout))
	}
	return v
}

// scheduleState summarizes a schedule: canceled, active (attempts still to
// run or in flight) or finished.
func scheduleState(s schedule.Schedule, live int) string {
	switch {
	case live > 0:
		return "active"
	case !s.CanceledAt.IsZero():
		return "canceled"
	}
	return "finished"
}

func viewScheduleSummary(s store.ScheduleSummary) scheduleView {
	v := viewSchedule(s.Schedule)
	v.AttemptCounts = s.Attempts
	live := 0
	for k, n := range s.Attempts {
		if schedule.Live(k) {
			live += n
		}
	}
	v.State = scheduleState(s.Schedule, live)
	return v
}

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced, as encoding/json does.
func appendString(b []byte, s string) []byte {
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

// The domain types render their times with encoding/json's default layout;
// these views shadow them with ts, so every time in the API has the same
// form (RFC 3339, UTC, milliseconds).

type assistantView struct {
	assistant.Assistant
	CreatedAt ts `json:"createdAt"`
	UpdatedAt ts `json:"updatedAt"`
}

func viewAssistant(a assistant.Assistant) assistantView {
	return assistantView{Assistant: a, CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt)}
}

type purchaseView struct {
	phone.Purchase
	CreatedAt ts `json:"createdAt"`
	UpdatedAt ts `json:"updatedAt"`
}

func viewPurchase(p phone.Purchase) purchaseView {
	return purchaseView{Purchase: p, CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
}

type contactView struct {
	phone.Contact
	CreatedAt ts `json:"createdAt"`
}

func viewContact(c phone.Contact) contactView {
	return contactView{Contact: c, CreatedAt: ts(c.CreatedAt)}
}

// viewAll maps a slice through a view function.
func viewAll[T, V any](xs []T, view func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = view(x)
	}
	return out
}
