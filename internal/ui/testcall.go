package ui

import (
	"cmp"
	"net/http"
	"net/url"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	callview "switchboard/internal/view"
)

// defaultTestNumber is the test call form's destination: a sandbox number
// whose persona answers and talks.
const defaultTestNumber = "+14155550123"

// testCallPage is "Place a test call": a sandbox phone call from one of
// the organization's numbers, or a browser call of one of its assistants.
type testCallPage struct {
	Numbers    []choice
	Assistants []choice
	// Number and Assistant are preselected (?number=, ?assistant=).
	Number, Assistant  string
	To                 string
	PhoneErrs, WebErrs *formErrors
	CanPhone, CanWeb   bool
}

func (s *Server) testCall(w http.ResponseWriter, r *request) error {
	q := r.URL.Query()
	return s.testCallPage(w, r, http.StatusOK, testCallPage{Number: q.Get("number"), Assistant: q.Get("assistant"), To: defaultTestNumber})
}

func (s *Server) testCallPage(w http.ResponseWriter, r *request, status int, p testCallPage) error {
	ctx := r.Context()
	ps, err := s.st.ListPurchases(ctx, r.op.OrgID)
	if err != nil {
		return err
	}
	var ids []string
	for _, pu := range ps {
		ids = append(ids, pu.OutboundAssistantID)
	}
	names, err := s.st.AssistantNames(ctx, r.op.OrgID, ids)
	if err != nil {
		return err
	}
	for _, pu := range ps {
		label := pu.Number + " (" + pu.Provider + ")"
		if n := names[pu.OutboundAssistantID]; n != "" {
			label += " · " + n
		} else {
			label += " · no outbound assistant"
		}
		p.Numbers = append(p.Numbers, choice{pu.ID, label})
	}
	as, _, err := s.st.ListAssistants(ctx, r.op.OrgID, store.Page{Page: 1, PageSize: maxAssistantChoices})
	if err != nil {
		return err
	}
	for _, a := range as {
		p.Assistants = append(p.Assistants, choice{a.ID, cmp.Or(a.Name, a.ID)})
	}
	p.CanPhone, p.CanWeb = s.cfg.PlacePhoneCall != nil, s.cfg.StartWebCall != nil
	s.render(w, r, status, view{Name: "testcall", Nav: "calls", Title: "Place a test call", Data: p})
	return nil
}

// placeTestPhoneCall places an outbound call from one of the
// organization's numbers with its outbound assistant, as POST
// /v1/calls/phone/initiate does, and shows the call's page.
func (s *Server) placeTestPhoneCall(w http.ResponseWriter, r *request) error {
	p := testCallPage{Number: r.PostForm.Get("number"), To: r.PostForm.Get("to")}
	refuse := func(err error) error {
		fe, ok := userError(err, nil)
		if !ok {
			return err
		}
		p.PhoneErrs = fe
		return s.testCallPage(w, r, http.StatusBadRequest, p)
	}
	if s.cfg.PlacePhoneCall == nil {
		return apperr.New(apperr.Unavailable, "phone calls cannot be placed from the dashboard on this server")
	}
	var errs apperr.Fields
	if !id.Valid(id.Purchase, p.Number) {
		errs.Add("number", "choose one of the organization's numbers")
	}
	to, err := phone.NormalizeE164(p.To)
	if err != nil {
		errs.Add("to", "%s", err.Error())
	}
	if err := errs.Err(); err != nil {
		return refuse(err)
	}
	c, err := s.cfg.PlacePhoneCall(r.Context(), r.op.OrgID, p.Number, to)
	if err != nil {
		if apperr.Is(err, apperr.NotFound) {
			err = apperr.Invalidf("number", "choose one of the organization's numbers")
		}
		return refuse(err)
	}
	return seeOther(w, r, "/ui/calls/"+url.PathEscape(c.ID))
}

// startTestWebCall creates a web call of one of the organization's
// assistants, as POST /v1/calls/initiate does, and shows the call's page
// with the widget that joins it: the page's one-time token (?talk=) says
// this session created the call, so no other page offers to join it.
func (s *Server) startTestWebCall(w http.ResponseWriter, r *request) error {
	p := testCallPage{Assistant: r.PostForm.Get("assistant"), To: defaultTestNumber}
	if s.cfg.StartWebCall == nil {
		return apperr.New(apperr.Unavailable, "web calls cannot be started from the dashboard on this server")
	}
	if !id.Valid(id.Assistant, p.Assistant) {
		fe, _ := userError(apperr.Invalidf("assistant", "choose one of the organization's assistants"), nil)
		p.WebErrs = fe
		return s.testCallPage(w, r, http.StatusBadRequest, p)
	}
	c, err := s.cfg.StartWebCall(r.Context(), r.op.OrgID, p.Assistant)
	if err != nil {
		fe, ok := userError(err, func(string) (string, string) { return "assistant", "" })
		if !ok {
			return err
		}
		p.WebErrs = fe
		return s.testCallPage(w, r, http.StatusBadRequest, p)
	}
	t := s.reveals.put(r.ses.TokenHash, c.ID, s.cfg.Now())
	return seeOther(w, r, "/ui/calls/"+url.PathEscape(c.ID)+"?talk="+url.QueryEscape(t))
}

// talkURL is the gateway URL the call's page joins with the widget, when
// the page follows this session's own browser call (?talk=, once) and the
// call has not been joined yet; "" otherwise.
func (s *Server) talkURL(r *request, c call.Call) string {
	t := r.URL.Query().Get("talk")
	if t == "" || c.Type != call.Web || c.Status != call.Queued {
		return ""
	}
	if got, ok := s.reveals.take(r.ses.TokenHash, t, s.cfg.Now()); !ok || got != c.ID {
		return ""
	}
	return callview.GatewayURL(s.cfg.PublicURL, c)
}
