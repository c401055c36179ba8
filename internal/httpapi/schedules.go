package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/campaign"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/routing"
	"switchboard/internal/routing/ask"
	"switchboard/internal/schedule"
)

func (s *Server) scheduleCall(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	req := campaign.Request{
		OrgID:      r.orgID,
		Name:       o.Str("name", true),
		ContactIDs: o.Strings("contacts_id", true),
		PurchaseID: o.Str("phone_id", true),
		Message:    o.Str("message", false),
		Timezone:   o.Str("timezone", true),
	}
	dates := o.Strings("dates", true)
	req.Hours = parseHours(o)
	req.Retry = parseRetry(o)
	req.MaxConcurrentCalls = o.Int("maxConcurrentCalls", false, 0)
	if req.MaxConcurrentCalls < 0 || req.MaxConcurrentCalls > maxCap {
		o.Errs.Add("maxConcurrentCalls", "must be an integer from 0 (no cap of the schedule's own) to %d", maxCap)
	}
	o.Done()
	if len(req.Name) > 200 {
		o.Errs.Add("name", "must be at most 200 bytes")
	}
	if len(req.Message) > 2000 {
		o.Errs.Add("message", "must be at most 2000 bytes")
	}
	if req.Timezone != "" {
		if err := phone.CheckTimezone(req.Timezone); err != nil {
			o.Errs.Add("timezone", "%s", err.Error())
		}
	}
	if len(req.ContactIDs) > schedule.MaxContacts {
		o.Errs.Add("contacts_id", "must hold at most %d contacts", schedule.MaxContacts)
	}
	seen := map[string]bool{}
	for i, cid := range req.ContactIDs {
		if seen[cid] {
			o.Errs.Add(fmt.Sprintf("contacts_id[%d]", i), "repeats contact %s", cid)
		}
		seen[cid] = true
	}
	if len(dates) > schedule.MaxDates {
		o.Errs.Add("dates", "must hold at most %d dates", schedule.MaxDates)
	}
	earliest := s.now().Add(-schedule.Skew)
	seenDate := map[int64]bool{}
	for i, d := range dates {
		field := fmt.Sprintf("dates[%d]", i)
		t, ok := schedule.ParseDate(d)
		switch {
		case !ok:
			o.Errs.Add(field, "must be an ISO 8601 UTC timestamp with milliseconds, e.g. 2026-12-01T15:04:05.000Z")
		case t.Before(earliest):
			o.Errs.Add(field, "is in the past")
		case seenDate[t.UnixMilli()]:
			o.Errs.Add(field, "repeats an earlier date")
		default:
			seenDate[t.UnixMilli()] = true
			req.Dates = append(req.Dates, t)
		}
	}
	if n := len(dates) * len(req.ContactIDs); n > schedule.MaxAttempts {
		o.Errs.Add("dates", "contacts × dates is %d calls; at most %d per schedule", n, schedule.MaxAttempts)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	var unknown unknownIDs
	unknown.check("phone_id", req.PurchaseID, id.Purchase, "phone purchase")
	for i, cid := range req.ContactIDs {
		unknown.check(fmt.Sprintf("contacts_id[%d]", i), cid, id.Contact, "contact")
	}
	if err := unknown.err(); err != nil {
		return response{}, err
	}
	slices.SortFunc(req.Dates, time.Time.Compare)
	sc, err := s.sched.Create(ctx, req)
	if err != nil {
		return response{}, onField(err, "phone_id")
	}
	// id is the contract's; data.id the rule of every create.
	resp := ok(http.StatusCreated, fmt.Sprintf("%d call(s) scheduled", len(req.Dates)*len(req.ContactIDs)), createdID{ID: sc.ID})
	resp.body.ID = sc.ID
	return resp, nil
}

func (s *Server) listSchedules(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	list, total, err := s.store.ListSchedules(ctx, r.orgID, pg)
	if err != nil {
		return response{}, err
	}
	views := make([]scheduleResource, len(list))
	for i, sc := range list {
		views[i] = viewScheduleSummary(sc)
	}
	resp := ok(http.StatusOK, "schedules", views)
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) getSchedule(ctx context.Context, r *request) (response, error) {
	sid, err := pathID(r, "id", id.Schedule, "schedule")
	if err != nil {
		return response{}, err
	}
	sc, attempts, err := s.store.GetSchedule(ctx, r.orgID, sid)
	if err != nil {
		return response{}, err
	}
	v := viewSchedule(sc)
	v.AttemptCounts = map[string]int{}
	v.Attempts = make([]attemptResource, len(attempts))
	live := 0
	for i, a := range attempts {
		v.Attempts[i] = viewAttempt(a)
		v.AttemptCounts[v.Attempts[i].State]++
		if schedule.Live(v.Attempts[i].State) {
			live++
		}
	}
	progress := schedule.Count(attempts, s.now())
	v.Progress = &progress
	v.State = sc.State(live)
	return ok(http.StatusOK, "schedule", v), nil
}

func (s *Server) cancelSchedule(ctx context.Context, r *request) (response, error) {
	if err := emptyBody(r); err != nil {
		return response{}, err
	}
	sid, err := pathID(r, "id", id.Schedule, "schedule")
	if err != nil {
		return response{}, err
	}
	ch, err := s.sched.Cancel(ctx, r.orgID, sid)
	if err != nil {
		return response{}, err
	}
	var msg string
	switch {
	case ch.Changed && ch.CanceledAttempts > 0:
		msg = fmt.Sprintf("schedule canceled; %d pending call(s) will not be dialed", ch.CanceledAttempts)
	case ch.Changed:
		msg = "schedule canceled; nothing was pending, and the calls under way go on"
	case ch.Canceled:
		msg = "schedule was already canceled; nothing changed"
	default:
		msg = "schedule has finished: nothing to cancel; nothing changed"
	}
	resp := ok(http.StatusOK, msg, scheduleChangeView{CanceledAttempts: &ch.CanceledAttempts, Changed: ch.Changed, State: ch.State})
	resp.body.ID = sid
	return resp, nil
}

// scheduleChangeView is what a cancel (canceledAttempts) or a pause or
// resume (paused) did, and the schedule's state after it.
type scheduleChangeView struct {
	CanceledAttempts *int   `json:"canceledAttempts,omitempty"`
	Paused           *bool  `json:"paused,omitempty"`
	Changed          bool   `json:"changed"`
	State            string `json:"state"`
}

// maxCap bounds every cap on live calls the API accepts.
const maxCap = 100000

// parseHours reads callingHours: absent is nil (the defaults); each
// field left out takes its default (08:00, 21:00, every day).
func parseHours(o *object) *schedule.CallingHours {
	c := o.Child("callingHours")
	if c == nil {
		return nil
	}
	h := schedule.DefaultHours()
	// Validate names what is wrong with each value; the getters only
	// the wrong types.
	if c.Present("start") {
		h.Start = c.Str("start", false)
	}
	if c.Present("end") {
		h.End = c.Str("end", false)
	}
	if c.Present("days") {
		h.Days = c.Strings("days", false)
	}
	c.Done()
	for _, e := range h.Validate("callingHours.") {
		o.Errs.Add(e.Field, "%s", e.Message)
	}
	return &h
}

// parseRetry reads retry: absent is nil (the defaults); each outcome and
// field left out takes its default.
func parseRetry(o *object) *schedule.RetryPolicy {
	c := o.Child("retry")
	if c == nil {
		return nil
	}
	p := schedule.DefaultRetry()
	for _, k := range schedule.RetryOutcomes {
		r := c.Child(k.Key)
		if r == nil {
			continue
		}
		ref := p.Ref(k.Key)
		if v := r.Number("afterMinutes"); v != nil {
			ref.AfterMinutes = *v
		}
		ref.MaxAttempts = r.Int("maxAttempts", false, ref.MaxAttempts)
		r.Done()
	}
	c.Done()
	for _, e := range p.Validate("retry.") {
		o.Errs.Add(e.Field, "%s", e.Message)
	}
	return &p
}

// pauseSchedule and resumeSchedule take no body, or an empty object.
func (s *Server) pauseSchedule(ctx context.Context, r *request) (response, error) {
	return s.setSchedulePaused(ctx, r, true)
}

func (s *Server) resumeSchedule(ctx context.Context, r *request) (response, error) {
	return s.setSchedulePaused(ctx, r, false)
}

func (s *Server) setSchedulePaused(ctx context.Context, r *request, paused bool) (response, error) {
	if err := emptyBody(r); err != nil {
		return response{}, err
	}
	sid, err := pathID(r, "id", id.Schedule, "schedule")
	if err != nil {
		return response{}, err
	}
	change, verb := s.sched.Resume, "resume"
	if paused {
		change, verb = s.sched.Pause, "pause"
	}
	ch, err := change(ctx, r.orgID, sid)
	if err != nil {
		return response{}, err
	}
	var msg string
	switch {
	case ch.Changed && paused:
		msg = "schedule paused; its attempts wait until it is resumed"
	case ch.Changed:
		msg = "schedule resumed; its due attempts are dialed in their calling hours"
	case ch.Canceled:
		msg = "schedule is canceled: nothing to " + verb + "; nothing changed"
	case ch.State == schedule.StateFinished:
		msg = "schedule has finished: nothing to " + verb + "; nothing changed"
	case paused:
		msg = "schedule was already paused; nothing changed"
	default:
		msg = "schedule was not paused; nothing changed"
	}
	resp := ok(http.StatusOK, msg, scheduleChangeView{Paused: &ch.Paused, Changed: ch.Changed, State: ch.State})
	resp.body.ID = sid
	return resp, nil
}

// orgView is the organization's settings: its own caps on live phone
// calls, the server's, and the effective ones (the lower of each).
type orgView struct {
	ID                          string        `json:"id"`
	Name                        string        `json:"name"`
	MaxConcurrentCalls          int           `json:"maxConcurrentCalls"`
	MaxConcurrentCallsPerNumber int           `json:"maxConcurrentCallsPerNumber"`
	ServerCaps                  schedule.Caps `json:"serverCaps"`
	EffectiveCaps               schedule.Caps `json:"effectiveCaps"`
	// AssistantRequest is the inbound routing endpoint; null when none.
	AssistantRequest *assistantRequestView `json:"assistantRequest"`
}

// assistantRequestView is the routing endpoint as the API shows it: its
// secret only in the answer that made it.
type assistantRequestView struct {
	URL       string `json:"url"`
	TimeoutMs int64  `json:"timeoutMs"`
	UpdatedAt ts     `json:"updatedAt"`
	Secret    string `json:"secret,omitempty"`
}

func (s *Server) orgView(ctx context.Context, orgID string) (orgView, error) {
	org, err := s.store.GetOrg(ctx, orgID)
	if err != nil {
		return orgView{}, err
	}
	server, own, eff, err := s.sched.Caps(ctx, orgID)
	if err != nil {
		return orgView{}, err
	}
	v := orgView{ID: org.ID, Name: org.Name, MaxConcurrentCalls: own.PerOrg, MaxConcurrentCallsPerNumber: own.PerNumber,
		ServerCaps: server, EffectiveCaps: eff}
	ep, err := s.store.GetAssistantRequest(ctx, orgID)
	switch {
	case err == nil:
		v.AssistantRequest = &assistantRequestView{URL: ep.URL, TimeoutMs: ep.Timeout.Milliseconds(), UpdatedAt: ts(ep.UpdatedAt)}
	case !apperr.Is(err, apperr.NotFound):
		return orgView{}, err
	}
	return v, nil
}

func (s *Server) getOrganization(ctx context.Context, r *request) (response, error) {
	v, err := s.orgView(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "organization", v), nil
}

// updateOrganization sets the organization's own caps: each field sent
// replaces its value (0: none of its own); a field left out keeps it.
func (s *Server) updateOrganization(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	_, own, _, err := s.sched.Caps(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	own.PerOrg = o.Int("maxConcurrentCalls", false, own.PerOrg)
	own.PerNumber = o.Int("maxConcurrentCallsPerNumber", false, own.PerNumber)
	removeRouting := o.Present("assistantRequest") && o.Child("assistantRequest") == nil
	var ep *routing.Endpoint
	if ar := o.Child("assistantRequest"); ar != nil {
		url, ms := ar.Str("url", true), ar.Int("timeoutMs", false, -1)
		ar.Done()
		if !o.Errs.Has("assistantRequest.url") {
			e := ask.NewEndpoint(ctx, s.cfg.Webhooks, r.orgID, url, ms, s.now(), "assistantRequest.", o.Errs)
			ep = &e
		}
	}
	o.Done()
	if own.PerOrg < 0 || own.PerOrg > maxCap {
		o.Errs.Add("maxConcurrentCalls", "must be an integer from 0 (none of its own) to %d", maxCap)
	}
	if own.PerNumber < 0 || own.PerNumber > maxCap {
		o.Errs.Add("maxConcurrentCallsPerNumber", "must be an integer from 0 (none of its own) to %d", maxCap)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	if err := s.sched.SetCaps(ctx, r.orgID, own); err != nil {
		return response{}, err
	}
	switch {
	case ep != nil:
		if err := s.store.SetAssistantRequest(ctx, *ep); err != nil {
			return response{}, err
		}
	case removeRouting:
		if err := s.store.DeleteAssistantRequest(ctx, r.orgID); err != nil {
			return response{}, err
		}
	}
	v, err := s.orgView(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	msg := "organization updated"
	if ep != nil && v.AssistantRequest != nil {
		v.AssistantRequest.Secret = ep.Secret
		msg = "organization updated; store the assistantRequest secret now, it is not shown again"
	}
	return ok(http.StatusOK, msg, v), nil
}

// emptyBody checks the optional body of an action (cancel, pause, resume,
// rotate): none, or an empty JSON object; any member is an unknown field.
func emptyBody(r *request) error {
	if len(r.body) == 0 {
		return nil
	}
	o, err := parseObject(r.body)
	if err != nil {
		return err
	}
	o.Done()
	return o.Errs.Err()
}
