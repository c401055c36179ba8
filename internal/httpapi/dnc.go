package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
)

// The do-not-call list (docs/api.md, "Do-not-call"): numbers the dialer
// never calls, checked in the dial's claim (store.Calls.CreateCall).

type dncView struct {
	phone.DNCEntry
	CallID    *string `json:"callId"`
	CreatedAt ts      `json:"createdAt"`
}

func viewDNC(e phone.DNCEntry) dncView {
	v := dncView{DNCEntry: e, CreatedAt: ts(e.CreatedAt)}
	if e.CallID != "" {
		v.CallID = &e.CallID
	}
	return v
}

type dncListedView struct {
	Field  string `json:"field"`
	Number string `json:"number"`
}

type dncAddedView struct {
	Added         []dncView           `json:"added"`
	AlreadyListed []dncListedView     `json:"alreadyListed"`
	LiveCalls     map[string][]string `json:"liveCalls"`
}

// plusFromSpace gives back the leading plus of a number that a form
// decoding turned into a space (a '+' sent unencoded in a query string).
func plusFromSpace(s string) string {
	if rest, ok := strings.CutPrefix(s, " "); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		return "+" + rest
	}
	return s
}

func (s *Server) addDNC(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	before := len(*o.Errs)
	raw := o.Strings("numbers", true)
	itemsOK := len(*o.Errs) == before // numbers[i] that are not strings are named already
	reason := o.Str("reason", false)
	o.Done()
	var nums []string
	var at []int
	if itemsOK {
		nums, at = phone.CheckDNCNumbers(raw, o.Errs)
	}
	phone.CheckDNCReason(reason, o.Errs)
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	entries := make([]phone.DNCEntry, len(nums))
	for i, n := range nums {
		entries[i] = phone.DNCEntry{Number: n, Reason: reason, Source: phone.DNCSourceAPI, CreatedAt: now}
	}
	res, err := s.store.AddDNC(ctx, r.orgID, entries)
	if err != nil {
		return response{}, err
	}
	out := dncAddedView{Added: viewAll(res.Added, viewDNC), AlreadyListed: []dncListedView{}, LiveCalls: res.LiveCalls}
	for _, i := range res.Listed {
		out.AlreadyListed = append(out.AlreadyListed, dncListedView{Field: fmt.Sprintf("numbers[%d]", at[i]), Number: nums[i]})
	}
	if out.LiveCalls == nil {
		out.LiveCalls = map[string][]string{}
	}
	status := http.StatusCreated
	if len(res.Added) == 0 {
		status = http.StatusOK
	}
	msg := fmt.Sprintf("%d number(s) added to the do-not-call list, %d already on it", len(out.Added), len(out.AlreadyListed))
	return ok(status, msg, out), nil
}

func (s *Server) listDNC(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize", "search")
	pg := q.page()
	search := plusFromSpace(q.v.Get("search"))
	phone.CheckDNCSearch(search, &q.errs)
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	es, total, err := s.store.ListDNC(ctx, r.orgID, search, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "do-not-call list", viewAll(es, viewDNC))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) deleteDNC(ctx context.Context, r *request) (response, error) {
	// A value no listed number can be is answered like an unlisted one,
	// with no query (as malformed ids are, see ids.go).
	n, err := phone.NormalizeE164(plusFromSpace(r.PathValue("number")))
	if err != nil {
		return response{}, apperr.NotFoundf("do-not-call number not found: the path must end in an E.164 number, its plus written %%2B")
	}
	if err := s.store.DeleteDNC(ctx, r.orgID, n); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, n+" removed from the do-not-call list", nil), nil
}
