package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// defaultOverviewDays is the overview's period when none is asked: the
// last 30 UTC days, today included.
const defaultOverviewDays = 30

// maxAssistantChoices bounds the assistants offered in the overview's
// filter (the first, by creation; another is still reachable by its id).
const maxAssistantChoices = 200

// topReasons is how many ended reasons the overview ranks.
const topReasons = 8

// overviewFilters is the overview's filter form, as typed.
type overviewFilters struct {
	From, To, Assistant string
}

// overviewPage is the overview's data.
type overviewPage struct {
	Filters    overviewFilters
	Errors     []string
	Assistants []choice
	// Period is the days shown, for the headings.
	Period string
	// The period's totals.
	Calls, Evaluated int64
	Minutes          string
	SuccessRate      string
	P95              string
	// The charts; nil when there is nothing to draw.
	ByOutcome, MinutesChart, Success *vchart
	Latency, Reasons                 *hchart
	// CallsURL lists the period's calls.
	CallsURL string
}

// parseOverviewFilters reads the period and assistant; a value it cannot
// use is named in errs and the default is used instead.
func parseOverviewFilters(q url.Values, now time.Time) (overviewFilters, store.OverviewFilter, []string) {
	in := overviewFilters{From: q.Get("from"), To: q.Get("to"), Assistant: q.Get("assistant")}
	today := now.UTC().Truncate(24 * time.Hour)
	f := store.OverviewFilter{From: today.AddDate(0, 0, 1-defaultOverviewDays), To: today}
	var errs []string
	if in.To != "" {
		if d, err := time.Parse(time.DateOnly, in.To); err == nil {
			f.To = d
		} else {
			errs = append(errs, "To must be a date such as 2026-01-31.")
			in.To = ""
		}
	}
	if in.From != "" {
		if d, err := time.Parse(time.DateOnly, in.From); err == nil {
			f.From = d
		} else {
			errs = append(errs, "From must be a date such as 2026-01-31.")
			in.From = ""
		}
	} else {
		f.From = f.To.AddDate(0, 0, 1-defaultOverviewDays)
	}
	switch {
	case f.From.After(f.To):
		errs = append(errs, "From must not be after To.")
		f.From, in.From = f.To.AddDate(0, 0, 1-defaultOverviewDays), ""
	case f.To.Sub(f.From) >= store.MaxOverviewDays*24*time.Hour:
		errs = append(errs, fmt.Sprintf("The period may span at most %d days.", store.MaxOverviewDays))
		f.From, in.From = f.To.AddDate(0, 0, 1-store.MaxOverviewDays), ""
	}
	if in.Assistant != "" {
		if id.Valid(id.Assistant, in.Assistant) {
			f.AssistantID = in.Assistant
		} else {
			errs = append(errs, "Assistant must be one of the organization's assistants.")
			in.Assistant = ""
		}
	}
	return in, f, errs
}

func (s *Server) overview(w http.ResponseWriter, r *request) error {
	in, f, errs := parseOverviewFilters(r.URL.Query(), s.cfg.Now())
	ctx := r.Context()
	as, _, err := s.st.ListAssistants(ctx, r.op.OrgID, store.Page{Page: 1, PageSize: maxAssistantChoices})
	if err != nil {
		return err
	}
	p := overviewPage{Filters: in, Errors: errs, Assistants: []choice{{"", "All assistants"}},
		Period: f.From.Format("2 Jan 2006") + " – " + f.To.Format("2 Jan 2006") + " (UTC)"}
	for _, a := range as {
		p.Assistants = append(p.Assistants, choice{a.ID, cmp.Or(a.Name, a.ID)})
	}
	if f.AssistantID != "" && !slices.ContainsFunc(p.Assistants, func(c choice) bool { return c.Value == f.AssistantID }) {
		names, err := s.st.AssistantNames(ctx, r.op.OrgID, []string{f.AssistantID})
		if err != nil {
			return err
		}
		name, ok := names[f.AssistantID]
		if !ok {
			// Another organization's assistant is no assistant here.
			p.Errors = append(p.Errors, "Assistant must be one of the organization's assistants.")
			f.AssistantID, p.Filters.Assistant = "", ""
		} else {
			p.Assistants = append(p.Assistants, choice{f.AssistantID, cmp.Or(name, f.AssistantID)})
		}
	}
	o, err := s.st.Overview(ctx, r.op.OrgID, f)
	if err != nil {
		return err
	}
	p.fill(o, f)
	p.CallsURL = callFilters{From: f.From.Format(time.DateOnly), To: f.To.Format(time.DateOnly)}.query(1)
	status := http.StatusOK
	if len(p.Errors) > 0 {
		status = http.StatusBadRequest
	}
	s.render(w, r, status, view{Name: "overview", Nav: "overview", Title: "Overview", Data: p})
	return nil
}

// outcomeOrder is the outcomes bottom to top in the calls chart, with
// their CSS classes and labels.
var outcomeOrder = []stage{
	{"out-completed", string(call.Completed)}, {"out-voicemail", string(call.Voicemail)}, {"out-no-answer", string(call.NoAnswer)},
	{"out-busy", string(call.Busy)}, {"out-canceled", string(call.Canceled)}, {"out-failed", string(call.Failed)},
}

// fill computes the totals and draws the charts from the store's sums.
func (p *overviewPage) fill(o store.Overview, f store.OverviewFilter) {
	nDays := int(f.To.Sub(f.From)/(24*time.Hour)) + 1
	type dayTotals struct {
		byOutcome           map[string]int64
		ms                  time.Duration
		evaluated, succeded int64
	}
	days := make([]dayTotals, nDays)
	for i := range days {
		days[i].byOutcome = map[string]int64{}
	}
	reasons := map[string]int64{}
	var dur time.Duration
	var succeeded int64
	for _, d := range o.Days {
		i := int(d.Day.Sub(f.From) / (24 * time.Hour))
		if i < 0 || i >= nDays {
			continue
		}
		days[i].byOutcome[string(d.Outcome)] += d.Calls
		days[i].ms += d.Duration
		days[i].evaluated += d.Evaluated
		days[i].succeded += d.Succeeded
		reasons[cmp.Or(d.EndedReason, "(none)")] += d.Calls
		p.Calls += d.Calls
		p.Evaluated += d.Evaluated
		succeeded += d.Succeeded
		dur += d.Duration
	}
	p.Minutes = strconv.FormatFloat(dur.Minutes(), 'f', 1, 64)
	p.SuccessRate = "—"
	if p.Evaluated > 0 {
		p.SuccessRate = fmt.Sprintf("%.0f%%", 100*float64(succeeded)/float64(p.Evaluated))
	}
	p.P95 = "—"
	if q, ok := o.Latency["total"].Quantile(0.95); ok {
		p.P95 = msLabel(q)
	}
	if p.Calls == 0 && len(o.Latency) == 0 {
		return
	}

	label := func(i int) string { return f.From.AddDate(0, 0, i).Format("2 Jan") }
	href := func(i int) string {
		d := f.From.AddDate(0, 0, i).Format(time.DateOnly)
		return callFilters{From: d, To: d}.query(1)
	}
	if p.Calls > 0 {
		byOutcome := make([][]float64, nDays)
		minutes := make([][]float64, nDays)
		for i, d := range days {
			for _, st := range outcomeOrder {
				byOutcome[i] = append(byOutcome[i], float64(d.byOutcome[st.Label]))
			}
			minutes[i] = []float64{d.ms.Minutes()}
		}
		p.ByOutcome = dayChart("chart-outcomes", "Ended calls per day, by outcome", byOutcome, outcomeOrder, label, href,
			func(i int, v []float64) string {
				t := fmt.Sprintf("%s: %d calls", label(i), int64(sum(v)))
				for j, st := range outcomeOrder {
					if v[j] > 0 {
						t += fmt.Sprintf(", %s %d", st.Label, int64(v[j]))
					}
				}
				return t
			}, countTick)
		p.MinutesChart = dayChart("chart-minutes", "Minutes of conversation per day", minutes, []stage{{"seg-total", "minutes"}}, label, href,
			func(i int, v []float64) string { return fmt.Sprintf("%s: %.1f minutes", label(i), v[0]) }, countTick)
	}
	if p.Evaluated > 0 {
		rates := make([][]float64, nDays)
		for i, d := range days {
			rates[i] = []float64{0}
			if d.evaluated > 0 {
				rates[i][0] = 100 * float64(d.succeded) / float64(d.evaluated)
			}
		}
		p.Success = dayChart("chart-success", "Success rate per day (analysed calls)", rates, []stage{{"out-completed", "success"}}, label, href,
			func(i int, v []float64) string {
				if days[i].evaluated == 0 {
					return label(i) + ": no analysed call"
				}
				return fmt.Sprintf("%s: %.0f%% of %d analysed calls", label(i), v[0], days[i].evaluated)
			}, percentTick)
	}
	var lat []hrow
	for _, st := range store.LatencyStages {
		h := o.Latency[st]
		p50, ok := h.Quantile(0.5)
		if !ok {
			continue
		}
		p95, _ := h.Quantile(0.95)
		lat = append(lat, hrow{Label: st, Values: []float64{p50.Seconds(), p95.Seconds()},
			Texts: []string{"p50 " + msLabel(p50), "p95 " + msLabel(p95)}, Title: fmt.Sprintf("%s over %d turns: p50 %s, p95 %s", st, h.Count(), msLabel(p50), msLabel(p95))})
	}
	p.Latency = barChart("chart-latency", "Turn latency by stage (p50, p95)", lat, []string{"bar-p50", "bar-p95"})
	var rs []hrow
	for reason, n := range reasons {
		rs = append(rs, hrow{Label: reason, Values: []float64{float64(n)}, Texts: []string{strconv.FormatInt(n, 10)},
			Title: fmt.Sprintf("%s: %d calls (%.0f%%)", reason, n, 100*float64(n)/float64(p.Calls))})
	}
	slices.SortFunc(rs, func(a, b hrow) int {
		return cmp.Or(cmp.Compare(b.Values[0], a.Values[0]), cmp.Compare(a.Label, b.Label))
	})
	p.Reasons = barChart("chart-reasons", "Top ended reasons", rs[:min(len(rs), topReasons)], []string{"bar-reason"})
}

func sum(v []float64) float64 {
	var t float64
	for _, x := range v {
		t += x
	}
	return t
}
