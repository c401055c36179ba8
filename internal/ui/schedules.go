package ui

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/schedule"
	"switchboard/internal/store"
)

const schedulesPageSize = 50

// progressOrder is the order attempts' progress is counted in.
var progressOrder = []string{string(schedule.Pending), "calling", "completed", string(schedule.Canceled), string(schedule.Failed)}

type schedulesPage struct {
	Schedules        []scheduleRow
	Total            int
	PrevURL, NextURL string
}

type scheduleRow struct {
	store.ScheduleSummary
	Counts []progressCount
	Live   bool
}

type progressCount struct {
	Progress string
	N        int
}

func countsOf(m map[string]int) []progressCount {
	var out []progressCount
	for _, p := range progressOrder {
		if m[p] > 0 {
			out = append(out, progressCount{p, m[p]})
		}
	}
	return out
}

func (s *Server) listSchedules(w http.ResponseWriter, r *request) error {
	n := pageParam(r)
	list, total, err := s.st.ListSchedules(r.Context(), r.op.OrgID, store.Page{Page: n, PageSize: schedulesPageSize})
	if err != nil {
		return err
	}
	p := schedulesPage{Total: total}
	for _, sc := range list {
		p.Schedules = append(p.Schedules, scheduleRow{ScheduleSummary: sc, Counts: countsOf(sc.Attempts),
			Live: sc.Attempts[string(schedule.Pending)] > 0 || sc.Attempts["calling"] > 0})
	}
	p.PrevURL, p.NextURL = pager("/ui/schedules", n, schedulesPageSize, len(list), total)
	s.render(w, r, http.StatusOK, view{Name: "schedules", Nav: "schedules", Title: "Schedules", Data: p})
	return nil
}

type schedulePage struct {
	Schedule schedule.Schedule
	Attempts []attemptRow
	Counts   []progressCount
	Cancel   *confirmForm
	Canceled string // the notice after a cancel
}

// attemptRow is an attempt as the REST API shows it: its progress
// (pending, calling, completed, canceled, failed) and, once its call has
// ended, the call's outcome.
type attemptRow struct {
	schedule.Attempt
	Progress string
	Outcome  string
}

func (s *Server) showSchedule(w http.ResponseWriter, r *request) error {
	var attempts []schedule.Attempt
	sc, err := own(r, id.Schedule, "schedule", func(ctx context.Context, org, sid string) (sc schedule.Schedule, err error) {
		sc, attempts, err = s.st.GetSchedule(ctx, org, sid)
		return sc, err
	})
	if err != nil {
		return err
	}
	p := schedulePage{Schedule: sc}
	counts := map[string]int{}
	for _, a := range attempts {
		ended := a.CallStatus == int(call.Ended)
		row := attemptRow{Attempt: a, Progress: schedule.Progress(a.State, ended)}
		if ended {
			row.Outcome = a.CallOutcome
		}
		counts[row.Progress]++
		p.Attempts = append(p.Attempts, row)
	}
	slices.SortStableFunc(p.Attempts, func(a, b attemptRow) int { return a.DueAt.Compare(b.DueAt) })
	p.Counts = countsOf(counts)
	if counts[string(schedule.Pending)] > 0 {
		p.Cancel = &confirmForm{Label: "Cancel schedule", Action: "/ui/schedules/" + sc.ID + "/cancel",
			Question: strconv.Itoa(counts[string(schedule.Pending)]) + " pending call(s) will not be dialed. Calls under way go on."}
	}
	if n := r.URL.Query().Get("canceled"); n != "" {
		p.Canceled = n + " pending call(s) canceled."
	}
	s.render(w, r, http.StatusOK, view{Name: "schedule", Nav: "schedules", Title: "Schedule " + sc.Name, Data: p})
	return nil
}

// cancelSchedule cancels the schedule's pending attempts (as the REST
// API's cancel does: the store's CancelSchedule).
func (s *Server) cancelSchedule(w http.ResponseWriter, r *request) error {
	sid := r.PathValue("id")
	if !id.Valid(id.Schedule, sid) {
		return apperr.NotFoundf("no such schedule")
	}
	ch, err := s.st.CancelSchedule(r.Context(), r.op.OrgID, sid, s.cfg.Now())
	if apperr.Is(err, apperr.NotFound) {
		return apperr.NotFoundf("no such schedule")
	}
	if err != nil {
		return err
	}
	return seeOther(w, r, "/ui/schedules/"+sid+"?canceled="+strconv.Itoa(ch.CanceledAttempts))
}
