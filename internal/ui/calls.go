package ui

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/routing"
	"switchboard/internal/store"
)

// callsPageSize is the calls listing's page size.
const callsPageSize = 25

// callFilters is the calls listing's filter form, as typed.
type callFilters struct {
	Type, Status, Outcome, Direction, From, To string
	// Q is the search: a call id or a phone number.
	Q string
}

// choice is an option of a filter's select.
type choice struct{ Value, Label string }

// callsPage is the calls listing's data.
type callsPage struct {
	Filters callFilters
	Errors  []string
	Calls   []callRow
	Total   int
	// CSVURL exports the filtered list.
	CSVURL string
	Page   int
	// PrevURL and NextURL are the neighbouring pages with the same
	// filters ("" at either end).
	PrevURL, NextURL string
	First, Last      int
	// Insert lets the live updates add new calls at the top: on the
	// first page of the unfiltered listing only.
	Insert          bool
	Types, Statuses []choice
	Outcomes, Dirs  []choice
}

// callRow is a call as the dashboard shows it, in a listing or on its page.
type callRow struct {
	call.Call
	StatusText string
	Duration   time.Duration
	// Assistant is the assistant's name ("" when it is gone).
	Assistant string
}

// callRows are the calls as shown, each with its assistant's name (one
// read for all).
func (s *Server) callRows(r *request, calls []call.Call) ([]callRow, error) {
	ids := make([]string, 0, len(calls))
	for _, c := range calls {
		ids = append(ids, c.AssistantID)
	}
	names, err := s.st.AssistantNames(r.Context(), r.op.OrgID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]callRow, 0, len(calls))
	for _, c := range calls {
		row := newCallRow(c)
		row.Assistant = names[c.AssistantID]
		out = append(out, row)
	}
	return out, nil
}

func newCallRow(c call.Call) callRow {
	return callRow{Call: c, StatusText: c.Status.Text(), Duration: time.Duration(c.DurationSeconds() * float64(time.Second))}
}

var (
	typeChoices   = []choice{{"", "Any type"}, {string(call.Web), "Web"}, {string(call.Phone), "Phone"}}
	statusChoices = []choice{{"", "Any status"}, {"queued", "Queued"}, {"ringing", "Ringing"}, {"in-progress", "In progress"}, {"ended", "Ended"}}
	dirChoices    = []choice{{"", "Any direction"}, {string(call.Outbound), "Outbound"}, {string(call.Inbound), "Inbound"}}
	outcomeChoice = []choice{{"", "Any outcome"}, {string(call.Completed), "Completed"}, {string(call.Busy), "Busy"},
		{string(call.NoAnswer), "No answer"}, {string(call.Voicemail), "Voicemail"}, {string(call.Failed), "Failed"}, {string(call.Canceled), "Canceled"}}
)

// parseCallFilters turns the listing's query into a store filter; a value
// it cannot use is named in errs and ignored, so the page still shows.
func parseCallFilters(q url.Values) (callFilters, store.CallFilter, []string) {
	in := callFilters{Type: q.Get("type"), Status: q.Get("status"), Outcome: q.Get("outcome"), Direction: q.Get("direction"),
		From: q.Get("from"), To: q.Get("to"), Q: strings.TrimSpace(q.Get("q"))}
	f := store.CallFilter{Page: store.Page{Page: 1, PageSize: callsPageSize}}
	var errs []string
	switch {
	case in.Q == "":
	case strings.HasPrefix(in.Q, id.Call+"_"):
		if !id.Valid(id.Call, in.Q) {
			errs = append(errs, "Search: "+in.Q+" is not a call id.")
			in.Q = ""
		}
		f.CallID = in.Q
	default:
		n, err := phone.NormalizeE164(in.Q)
		if err != nil {
			errs = append(errs, "Search takes a call id (call_…) or a phone number in E.164 (+14155550100): "+err.Error()+".")
			in.Q = ""
		}
		f.Number = n
	}
	switch in.Type {
	case "":
	case string(call.Web), string(call.Phone):
		f.Type = call.Type(in.Type)
	default:
		errs = append(errs, "Type must be web or phone.")
		in.Type = ""
	}
	if in.Status != "" {
		if st, ok := call.ParseStatus(in.Status); ok {
			f.Status = &st
		} else {
			errs = append(errs, "Status must be queued, ringing, in-progress or ended.")
			in.Status = ""
		}
	}
	if in.Outcome != "" {
		if call.ValidOutcome(call.Outcome(in.Outcome)) {
			f.Outcome = call.Outcome(in.Outcome)
		} else {
			errs = append(errs, "Outcome must be one of completed, busy, no-answer, voicemail, failed, canceled.")
			in.Outcome = ""
		}
	}
	switch in.Direction {
	case "":
	case string(call.Outbound), string(call.Inbound):
		f.Direction = call.Direction(in.Direction)
	default:
		errs = append(errs, "Direction must be outbound or inbound.")
		in.Direction = ""
	}
	// Dates are whole UTC days, both included: from its midnight to the
	// next midnight after "to".
	if in.From != "" {
		if d, err := time.Parse("2006-01-02", in.From); err == nil {
			f.CreatedAfter = d.Add(-time.Millisecond)
		} else {
			errs = append(errs, "From must be a date such as 2026-01-31.")
			in.From = ""
		}
	}
	if in.To != "" {
		if d, err := time.Parse("2006-01-02", in.To); err == nil {
			f.CreatedBefore = d.AddDate(0, 0, 1)
		} else {
			errs = append(errs, "To must be a date such as 2026-01-31.")
			in.To = ""
		}
	}
	if p := q.Get("page"); p != "" {
		if n, err := strconv.Atoi(p); err == nil && n >= 1 && n <= 1_000_000 {
			f.Page.Page = n
		} else {
			errs = append(errs, "Page must be a number from 1.")
		}
	}
	return in, f, errs
}

// query is the listing's URL with the filters, on page n.
func (in callFilters) query(n int) string {
	return in.url("/ui/calls", n)
}

// url is path with the filters as its query, on page n.
func (in callFilters) url(path string, n int) string {
	v := url.Values{}
	for k, s := range map[string]string{"type": in.Type, "status": in.Status, "outcome": in.Outcome, "direction": in.Direction, "from": in.From, "to": in.To, "q": in.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}

func (s *Server) listCalls(w http.ResponseWriter, r *request) error {
	in, f, errs := parseCallFilters(r.URL.Query())
	calls, total, err := s.st.ListCalls(r.Context(), r.op.OrgID, f)
	if err != nil {
		return err
	}
	p := callsPage{Filters: in, Errors: errs, Total: total, Page: f.Page.Page, CSVURL: in.url("/ui/calls.csv", 1),
		Types: typeChoices, Statuses: statusChoices, Outcomes: outcomeChoice, Dirs: dirChoices}
	if p.Calls, err = s.callRows(r, calls); err != nil {
		return err
	}
	p.Insert = f.Page.Page == 1 && in == (callFilters{})
	if len(calls) > 0 {
		p.First, p.Last = f.Offset()+1, f.Offset()+len(calls)
	}
	if f.Page.Page > 1 {
		p.PrevURL = in.query(f.Page.Page - 1)
	}
	if f.Offset()+len(calls) < total {
		p.NextURL = in.query(f.Page.Page + 1)
	}
	status := http.StatusOK
	if len(errs) > 0 {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, view{Name: "calls", Nav: "calls", Title: "Calls", Events: "/ui/events", Data: p})
	return nil
}

// ownCall reads the path's call of the operator's organization; another
// organization's call is not found, exactly like one that does not exist.
func (s *Server) ownCall(r *request) (call.Call, error) {
	return own(r, id.Call, "call", s.st.GetCall)
}

// callPage is a call's page data.
type callPage struct {
	Call      callRow
	Live      bool
	Timeline  []timelineEntry
	Turns     []turnRow
	Chart     *chart
	Analysis  analysisView
	Recording string // the recording's URL, when the call has one
	// Talk is the gateway URL the page's widget joins: the browser call
	// this session just started from "Place a test call" ("" otherwise).
	Talk string
	// Messages are the webhook messages about the call (each endpoint's
	// copy of each event), with how their delivery stands.
	Messages []store.CallMessage
	// Variables are the call's variables as indented JSON ("" for none);
	// Routing says how an inbound call's assistant was chosen.
	Variables string
	Routing   string
}

// maxCallMessages bounds the webhook messages a call's page lists (a call
// has a handful of events per endpoint).
const maxCallMessages = 200

// timelineEntry is a line of a call's timeline.
type timelineEntry struct {
	At   time.Time
	What string
}

// turnRow is a transcript line.
type turnRow struct {
	call.Turn
	// Offset is the time since the call started (or was created).
	Offset time.Duration
}

// analysisView is a call's analysis as shown.
type analysisView struct {
	State          string
	Error          string
	Summary        string
	Sentiment      string
	SentimentScore string
	Success        string
	Structured     string // indented JSON, "" when none
	Notes          []string
}

func (s *Server) showCall(w http.ResponseWriter, r *request) error {
	c, err := s.ownCall(r)
	if err != nil {
		return err
	}
	turns, err := s.st.ListTurns(r.Context(), r.op.OrgID, c.ID)
	if err != nil {
		return err
	}
	msgs, err := s.st.ListCallMessages(r.Context(), r.op.OrgID, c.ID, maxCallMessages)
	if err != nil {
		return err
	}
	rows, err := s.callRows(r, []call.Call{c})
	if err != nil {
		return err
	}
	p := callPage{Call: rows[0], Live: c.Status != call.Ended, Timeline: timeline(c), Chart: latencyChart(turns), Messages: msgs}
	origin := c.StartedAt
	if origin.IsZero() {
		origin = c.CreatedAt
	}
	for _, t := range turns {
		p.Turns = append(p.Turns, turnRow{Turn: t, Offset: max(t.StartedAt.Sub(origin), 0)})
	}
	if p.Analysis, err = s.analysis(r, c); err != nil {
		return err
	}
	if c.Recording != "" && s.cfg.Recordings != nil {
		p.Recording = "/ui/calls/" + c.ID + "/recording"
	}
	p.Talk = s.talkURL(r, c)
	if len(c.Variables) > 0 && string(c.Variables) != "{}" {
		p.Variables = indentJSON(c.Variables)
	}
	p.Routing = routingText(c.Routing)
	v := view{Name: "call", Nav: "calls", Title: "Call " + c.ID, Data: p}
	if p.Live {
		v.Events = "/ui/events?call=" + url.QueryEscape(c.ID)
	}
	s.render(w, r, http.StatusOK, v)
	return nil
}

// timeline lists what the call record says happened, in order. The store
// keeps the times of creation, start and end (not of ringing).
func timeline(c call.Call) []timelineEntry {
	ev := []timelineEntry{{c.CreatedAt, "Created (" + string(c.Type) + " call" + dirText(c) + ")"}}
	if !c.StartedAt.IsZero() {
		ev = append(ev, timelineEntry{c.StartedAt, "Conversation started"})
	}
	if !c.EndedAt.IsZero() {
		ev = append(ev, timelineEntry{c.EndedAt, "Ended: " + string(c.Outcome) + " (" + c.EndedReason + ")"})
	} else {
		ev = append(ev, timelineEntry{c.UpdatedAt, "Now " + c.Status.Text()})
	}
	return ev
}

func dirText(c call.Call) string {
	if c.Direction == "" {
		return ""
	}
	return ", " + string(c.Direction)
}

// analysis reads the call's analysis: pending until the call has ended
// and the worker has run.
func (s *Server) analysis(r *request, c call.Call) (analysisView, error) {
	a, err := s.st.GetAnalysis(r.Context(), r.op.OrgID, c.ID)
	if apperr.Is(err, apperr.NotFound) {
		return analysisView{State: store.AnalysisPending}, nil
	}
	if err != nil {
		return analysisView{}, err
	}
	v := analysisView{State: a.State, Error: a.Error}
	if a.State != store.AnalysisReady {
		return v, nil
	}
	var res struct {
		Summary   string `json:"summary"`
		Sentiment *struct {
			Label string  `json:"label"`
			Score float64 `json:"score"`
		} `json:"sentiment"`
		SuccessEvaluation *bool           `json:"successEvaluation"`
		StructuredData    json.RawMessage `json:"structuredData"`
		Notes             []string        `json:"notes"`
	}
	if err := json.Unmarshal(a.Result, &res); err != nil {
		return analysisView{}, err
	}
	v.Summary, v.Notes = res.Summary, res.Notes
	if res.Sentiment != nil {
		v.Sentiment, v.SentimentScore = res.Sentiment.Label, strconv.FormatFloat(res.Sentiment.Score, 'f', 2, 64)
	}
	switch {
	case res.SuccessEvaluation == nil:
		v.Success = "not evaluated"
	case *res.SuccessEvaluation:
		v.Success = "yes"
	default:
		v.Success = "no"
	}
	if len(res.StructuredData) > 0 && string(res.StructuredData) != "null" {
		var anyv any
		if json.Unmarshal(res.StructuredData, &anyv) == nil {
			b, _ := json.MarshalIndent(anyv, "", "  ")
			v.Structured = string(b)
		}
	}
	return v, nil
}

// callRecording plays the call's recording to the signed-in operator of
// its organization (ranges work, so the player can seek).
func (s *Server) callRecording(w http.ResponseWriter, r *request) error {
	c, err := s.ownCall(r)
	if err != nil {
		return err
	}
	if c.Recording == "" || s.cfg.Recordings == nil {
		return apperr.NotFoundf("this call has no recording")
	}
	f, fi, err := s.cfg.Recordings.Open(c.Recording)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	w.Header().Set("Content-Type", "audio/wav")
	w.Header().Set("Content-Disposition", `inline; filename="`+c.ID+`.wav"`)
	w.Header().Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r.Request, "", fi.ModTime(), f)
	return nil
}

// routingText says how an inbound call was routed: "by your endpoint",
// "fallback to the number's assistant: timeout", "the number's assistant".
func routingText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	r := routing.ParseRecord(raw)
	switch r.Source {
	case routing.SourceWebhook:
		if r.FirstMessage != "" {
			return "chosen by your assistantRequest endpoint, with its first message"
		}
		return "chosen by your assistantRequest endpoint"
	case routing.SourceFallback:
		return "the number's inbound assistant (your endpoint did not decide: " + r.Reason + ")"
	}
	return "the number's inbound assistant"
}
