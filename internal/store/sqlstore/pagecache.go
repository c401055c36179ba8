package sqlstore

import (
	"sync"

	"switchboard/internal/call"
)

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
