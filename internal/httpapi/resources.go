// The REST API's JSON forms of its resources other than calls: schedules
// and their attempts, assistants, phone numbers, contacts, and the id of
// what a create made. The forms the API shares with webhook payloads (calls,
// times) are package view's; each viewX here renders a domain value in the
// API's names and time form.

package httpapi

import (
	"switchboard/internal/assistant"
	"switchboard/internal/phone"
	"switchboard/internal/view"

	"switchboard/internal/call"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

// The API's JSON forms shared with webhook payloads live in package view.
type (
	ts       = view.Time
	callView = view.Call
)

// viewCall is the call as shown, with the absolute URL of its recording
// when it has one.
func (s *Server) viewCall(c call.Call) callView { return view.NewCallAt(c, s.cfg.PublicURL) }

var (
	appendString = view.AppendString
	jsonMarshal  = view.Marshal
)

type attemptResource struct {
	ID          string  `json:"id"`
	ContactID   string  `json:"contactId"`
	RequestedAt ts      `json:"requestedAt"`
	DueAt       ts      `json:"dueAt"`
	State       string  `json:"state"`
	CallID      *string `json:"callId"`
	Outcome     *string `json:"outcome"`
	Error       string  `json:"error,omitempty"`
	UpdatedAt   ts      `json:"updatedAt"`
	// Tries are every dial of the attempt, oldest first, the current
	// call's last (outcome and endedReason null while it runs).
	Tries []tryResource `json:"tries"`
}

type tryResource struct {
	Due         ts      `json:"due"`
	DialedAt    ts      `json:"dialedAt"`
	CallID      string  `json:"callId"`
	Outcome     *string `json:"outcome"`
	EndedReason *string `json:"endedReason"`
}

// viewAttempt is the attempt as shown: dialed attempts show the progress of
// their call (in-progress until it ends, then completed).
func viewAttempt(a schedule.Attempt) attemptResource {
	v := attemptResource{ID: a.ID, ContactID: a.ContactID, RequestedAt: ts(a.RequestedAt), DueAt: ts(a.DueAt), State: string(a.State), Error: a.Error,
		UpdatedAt: ts(a.UpdatedAt), Tries: []tryResource{}}
	for _, t := range a.AllTries() {
		tv := tryResource{Due: ts(t.Due), DialedAt: ts(t.DialedAt), CallID: t.CallID}
		if t.Outcome != "" {
			o, r := t.Outcome, t.EndedReason
			tv.Outcome, tv.EndedReason = &o, &r
		}
		v.Tries = append(v.Tries, tv)
	}
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

// createdID is the data of a create whose contract answer carries the
// new id elsewhere (callId, id): data.id holds it too, so that the new
// resource's id is data.id on every create.
type createdID struct {
	ID string `json:"id"`
}

type scheduleResource struct {
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
	// Campaign settings: callingHours null is any time (schedules made
	// before they existed).
	CallingHours       *schedule.CallingHours `json:"callingHours"`
	Retry              schedule.RetryPolicy   `json:"retry"`
	MaxConcurrentCalls int                    `json:"maxConcurrentCalls"`
	PausedAt           ts                     `json:"pausedAt"`
	Progress           *schedule.Counters     `json:"progress,omitempty"`
	Attempts           []attemptResource      `json:"attempts,omitempty"`
}

func viewSchedule(s schedule.Schedule) scheduleResource {
	v := scheduleResource{ID: s.ID, Name: s.Name, PhoneID: s.PurchaseID, Message: s.Message, Timezone: s.Timezone,
		ContactsID: s.ContactIDs, CreatedAt: ts(s.CreatedAt), CanceledAt: ts(s.CanceledAt), Dates: []string{},
		Retry: s.Retry, MaxConcurrentCalls: s.MaxConcurrentCalls, PausedAt: ts(s.PausedAt)}
	if !s.Hours.AnyTime() {
		h := s.Hours
		v.CallingHours = &h
	}
	for _, d := range s.Dates {
		v.Dates = append(v.Dates, d.UTC().Format(schedule.DateLayout))
	}
	return v
}

func viewScheduleSummary(s store.ScheduleSummary) scheduleResource {
	v := viewSchedule(s.Schedule)
	v.AttemptCounts = s.Attempts
	progress := s.Progress
	v.Progress = &progress
	live := 0
	for k, n := range s.Attempts {
		if schedule.Live(k) {
			live += n
		}
	}
	v.State = s.Schedule.State(live)
	return v
}

// The domain types render their times with encoding/json's default layout;
// these resources shadow them with ts, so every time in the API has the same
// form (RFC 3339, UTC, milliseconds).

type assistantResource struct {
	assistant.Assistant
	CreatedAt ts `json:"createdAt"`
	UpdatedAt ts `json:"updatedAt"`
}

func viewAssistant(a assistant.Assistant) assistantResource {
	return assistantResource{Assistant: a, CreatedAt: ts(a.CreatedAt), UpdatedAt: ts(a.UpdatedAt)}
}

type purchaseResource struct {
	phone.Purchase
	CreatedAt ts `json:"createdAt"`
	UpdatedAt ts `json:"updatedAt"`
}

func viewPurchase(p phone.Purchase) purchaseResource {
	return purchaseResource{Purchase: p, CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
}

type contactResource struct {
	phone.Contact
	CreatedAt ts `json:"createdAt"`
}

func viewContact(c phone.Contact) contactResource {
	return contactResource{Contact: c, CreatedAt: ts(c.CreatedAt)}
}

// viewAll maps a slice through a view function.
func viewAll[T, V any](xs []T, view func(T) V) []V {
	out := make([]V, len(xs))
	for i, x := range xs {
		out[i] = view(x)
	}
	return out
}
