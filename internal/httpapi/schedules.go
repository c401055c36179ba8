package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
	"switchboard/internal/scheduling"
)

func (s *Server) scheduleCall(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	req := scheduling.Request{
		OrgID:      r.orgID,
		Name:       o.Str("name", true),
		ContactIDs: o.Strings("contacts_id", true),
		PurchaseID: o.Str("phone_id", true),
		Message:    o.Str("message", false),
		Timezone:   o.Str("timezone", true),
	}
	dates := o.Strings("dates", true)
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
	resp := ok(http.StatusCreated, fmt.Sprintf("%d call(s) scheduled", len(req.Dates)*len(req.ContactIDs)), nil)
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
	views := make([]scheduleView, len(list))
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
	v.Attempts = make([]attemptView, len(attempts))
	live := 0
	for i, a := range attempts {
		v.Attempts[i] = viewAttempt(a)
		v.AttemptCounts[v.Attempts[i].State]++
		if schedule.Live(v.Attempts[i].State) {
			live++
		}
	}
	v.State = scheduleState(sc, live)
	return ok(http.StatusOK, "schedule", v), nil
}

func (s *Server) cancelSchedule(ctx context.Context, r *request) (response, error) {
	if len(r.body) > 0 {
		o, err := parseObject(r.body)
		if err != nil {
			return response{}, err
		}
		o.Done()
		if err := o.Errs.Err(); err != nil {
			return response{}, err
		}
	}
	sid, err := pathID(r, "id", id.Schedule, "schedule")
	if err != nil {
		return response{}, err
	}
	n, err := s.sched.Cancel(ctx, r.orgID, sid)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, fmt.Sprintf("schedule canceled; %d pending call(s) will not be dialed", n), map[string]int{"canceledAttempts": n})
	resp.body.ID = sid
	return resp, nil
}
