package sqlstore

import (
	"context"
	"sync"

	"switchboard/internal/call"
)

// orgCounts are an organization's call totals by (type, status).
type orgCounts []countRow

type countRow struct {
	typ        call.Type
	status     call.Status
	n, changes int64
}

func (s *Store) callCounts(ctx context.Context, orgID string) (orgCounts, error) {
	rows, err := s.query(ctx, s.r, `SELECT type, status, n, changes FROM call_counts WHERE org_id = ?`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out orgCounts
	for rows.Next() {
		var typ string
		var st int
		var n, ch int64
		if err := rows.Scan(&typ, &st, &n, &ch); err != nil {
			return nil, err
		}
		out = append(out, countRow{call.Type(typ), call.Status(st), n, ch})
	}
	return out, rows.Err()
}

// total is the number of calls of the type and status (zero values: any).
func (c orgCounts) total(typ call.Type, status *call.Status) int {
	var n int64
	for _, r := range c {
		if (typ == "" || r.typ == typ) && (status == nil || r.status == *status) {
			n += r.n
		}
	}
	return int(n)
}

// version identifies the state of all of an organization's calls. Calls
// are only ever inserted (Σ n grows) or updated (Σ changes grows), each in
// the same transaction as its call_counts update, and neither sum ever
// shrinks; so every change to any call of the organization changes the
// version. Nothing else writes the calls table.
func (c orgCounts) version() [2]int64 {
	var v [2]int64
	for _, r := range c {
		v[0] += r.n
		v[1] += r.changes
	}
	return v
}

type pageKey struct {
	org, cond, args string
	page, size      int
}

type pageEntry struct {
	version [2]int64
	calls   []call.Call
	total   int
}

// pageCache keeps recently read listing pages. An entry is used only while
// the organization's version (read from the database on every request) is
// the one it was read at, so it is never stale beyond what one read of the
// database could be, on one node or many.
type pageCache struct {
	mu  sync.Mutex
	max int
	m   map[pageKey]pageEntry
}

func newPageCache(max int) *pageCache { return &pageCache{max: max, m: make(map[pageKey]pageEntry)} }

func (c *pageCache) get(k pageKey, version [2]int64) (pageEntry, bool) {
	if c == nil || c.max == 0 {
		return pageEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || e.version != version {
		return pageEntry{}, false
	}
	return e, true
}

func (c *pageCache) put(k pageKey, version [2]int64, e pageEntry) {
	if c == nil || c.max == 0 {
		return
	}
	e.version = version
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		// Drop about half, in map order (effectively random): cheap, and hot
		// pages come back on their next read.
		n := 0
		for key := range c.m {
			delete(c.m, key)
			if n++; n >= c.max/2 {
				break
			}
		}
	}
	c.m[k] = e
}

// SetPageCache sets how many listing pages are cached (0 disables).
func (s *Store) SetPageCache(entries int) { s.pages = newPageCache(entries) }
