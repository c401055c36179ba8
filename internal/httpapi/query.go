package httpapi

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/store"
)

// Paging bounds of every listing.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// queryParams checks a query string against the parameters a route knows.
type queryParams struct {
	v    url.Values
	errs apperr.Fields
}

func newQuery(v url.Values, known ...string) *queryParams {
	q := &queryParams{v: v}
	var unknown []string
	for k := range v {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		q.errs.Add(k, "is not a known query parameter (known: %v)", known)
	}
	for _, k := range known {
		if len(v[k]) > 1 {
			q.errs.Add(k, "must be given once")
		}
	}
	return q
}

func (q *queryParams) intIn(name string, def, lo, hi int) int {
	s := q.v.Get(name)
	if s == "" {
		if q.v.Has(name) {
			q.errs.Add(name, "must be an integer between %d and %d", lo, hi)
		}
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		q.errs.Add(name, "must be an integer between %d and %d", lo, hi)
		return def
	}
	return n
}

func (q *queryParams) page() store.Page {
	return store.Page{
		Page:     q.intIn("page", 1, 1, 1_000_000),
		PageSize: q.intIn("pageSize", DefaultPageSize, 1, MaxPageSize),
	}
}

// time parses an ISO 8601 / RFC 3339 timestamp, or a bare date (midnight UTC).
func (q *queryParams) time(name string) time.Time {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	q.errs.Add(name, "must be an ISO 8601 timestamp such as 2026-12-01T15:04:05.000Z")
	return time.Time{}
}

func pageOf(p store.Page, total int) *pagination {
	return &pagination{Page: p.Page, PageSize: p.PageSize, Total: total}
}
