package ui

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
)

// Bounds of the calls export: the newest maxExport calls that match, read
// exportPage at a time.
const (
	maxExport  = 10_000
	exportPage = 500
)

// exportHeader is the export's first row.
var exportHeader = []string{"id", "createdAt", "type", "direction", "from", "to", "assistantId", "assistant",
	"status", "outcome", "endedReason", "startedAt", "endedAt", "durationSeconds"}

// exportCalls writes the filtered calls list as CSV, newest first, as the
// listing filters it (the page number is ignored).
func (s *Server) exportCalls(w http.ResponseWriter, r *request) error {
	_, f, errs := parseCallFilters(r.URL.Query())
	if len(errs) > 0 {
		return apperr.Invalidf("filters", "%s", strings.Join(errs, " "))
	}
	f.PageSize = exportPage
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="calls-`+s.cfg.Now().UTC().Format("20060102-150405")+`.csv"`)
	h.Set("Cache-Control", "no-store")
	out := csv.NewWriter(w)
	if err := out.Write(exportHeader); err != nil {
		return nil // the client went away
	}
	for n, page := 0, 1; n < maxExport; page++ {
		f.Page.Page = page
		calls, _, err := s.st.ListCalls(r.Context(), r.op.OrgID, f)
		if err != nil {
			// The header is sent: end the file short, and say so in the log.
			s.log.Warn("dashboard: calls export cut short", "org_id", r.op.OrgID, "err", err)
			break
		}
		rows, err := s.callRows(r, calls[:min(len(calls), maxExport-n)])
		if err != nil {
			s.log.Warn("dashboard: calls export cut short", "org_id", r.op.OrgID, "err", err)
			break
		}
		for _, c := range rows {
			if err := out.Write(exportRow(c)); err != nil {
				return nil
			}
		}
		n += len(rows)
		if len(calls) < exportPage {
			break
		}
	}
	out.Flush()
	return nil
}

func exportRow(c callRow) []string {
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	dur := ""
	if c.Status == call.Ended {
		dur = strconv.FormatFloat(c.DurationSeconds(), 'f', -1, 64)
	}
	return []string{c.ID, at(c.CreatedAt), string(c.Type), string(c.Direction), c.From, c.To, c.AssistantID, cell(c.Assistant),
		c.StatusText, string(c.Outcome), cell(c.EndedReason), at(c.StartedAt), at(c.EndedAt), dur}
}

// cell keeps a text a person typed (an assistant's name) from being read
// as a formula by a spreadsheet: one that starts with = + - @ or a
// control character gets a leading apostrophe (OWASP's advice).
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
