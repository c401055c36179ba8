package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/routing"
	"switchboard/internal/routing/ask"
)

// routingForm is the organization's inbound routing endpoint on the
// numbers page (docs/api.md, "Inbound routing"): as set, or as filled in.
type routingForm struct {
	Set       bool
	URL       string
	TimeoutMs string
	UpdatedAt time.Time
	// Secret is the endpoint's signing secret, shown once after a save.
	Secret string
}

// routingFormOf reads the organization's endpoint into the form.
func (s *Server) routingFormOf(r *request) (routingForm, error) {
	ep, err := s.st.GetAssistantRequest(r.Context(), r.op.OrgID)
	switch {
	case apperr.Is(err, apperr.NotFound):
		return routingForm{TimeoutMs: strconv.FormatInt(routing.DefaultTimeout.Milliseconds(), 10)}, nil
	case err != nil:
		return routingForm{}, err
	}
	return routingForm{Set: true, URL: ep.URL, TimeoutMs: strconv.FormatInt(ep.Timeout.Milliseconds(), 10), UpdatedAt: ep.UpdatedAt}, nil
}

// saveRouting sets the endpoint (a new secret, shown once), as PATCH
// /v1/organization does; a bad field shows the page again with it.
func (s *Server) saveRouting(w http.ResponseWriter, r *request) error {
	f := routingForm{URL: strings.TrimSpace(r.PostForm.Get("url")), TimeoutMs: strings.TrimSpace(r.PostForm.Get("timeoutMs"))}
	var errs apperr.Fields
	ms := -1
	if f.TimeoutMs != "" {
		n, err := strconv.Atoi(f.TimeoutMs)
		if err != nil {
			errs.Add("timeoutMs", "must be a whole number of milliseconds")
		}
		ms = n
	}
	ep := ask.NewEndpoint(r.Context(), s.cfg.Webhooks, r.op.OrgID, f.URL, ms, s.cfg.Now(), "", &errs)
	if err := errs.Err(); err != nil {
		return s.refused(w, r, err, "routing", numbersPage{Routing: f}, nil)
	}
	if err := s.st.SetAssistantRequest(r.Context(), ep); err != nil {
		return err
	}
	t := s.reveals.put(r.ses.TokenHash, ep.Secret, s.cfg.Now())
	return seeOther(w, r, "/ui/numbers?created="+t+"&id=routing#routing")
}

// removeRouting removes the endpoint: inbound calls go to their numbers'
// assistants again.
func (s *Server) removeRouting(w http.ResponseWriter, r *request) error {
	if err := s.st.DeleteAssistantRequest(r.Context(), r.op.OrgID); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/numbers?done="+url.QueryEscape("Inbound routing removed: each number's inbound assistant answers.")+"#routing")
}
