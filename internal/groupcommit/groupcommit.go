// Package groupcommit saves concurrent writes together: a group commit.
// The items that arrive while one group is being saved wait, and the next
// group saves them all in one go (one statement or transaction instead of
// one per item). A lone item is a group of one, saved at once: grouping
// costs no latency when there is nothing to group.
//
// A Group has no goroutine of its own. The caller whose item finds no
// group under way leads: it saves one group (its own item and those
// queued before it, at most Max), sends each item its result, then hands
// the lead to the first item still queued, whose caller saves the next
// group (one group at a time: a second saved alongside measured no
// better, bench-scheduler). Every caller waits for its own item's result, so the
// queue holds at most one item per waiting caller.
package groupcommit

import "sync"

// DefaultMax is the most items one group saves when Max is 0.
const DefaultMax = 200

// Group saves items of type T in groups; each gets a result of type R.
// The zero value is not usable: set Save. A Group must not be copied
// after first use.
type Group[T, R any] struct {
	// Save saves a group of items and returns one result per item, in
	// order. It is called by one caller at a time.
	Save func(items []T) []R
	// Max bounds a group (DefaultMax when 0).
	Max int

	mu      sync.Mutex
	queue   []*waiter[T, R]
	leading bool // a group is being saved
}

type waiter[T, R any] struct {
	item T
	// done receives the item's result, or the lead (lead set): the
	// caller saves the next group, its own item first. Buffered, so that
	// a leader never waits for another caller.
	done chan result[R]
}

type result[R any] struct {
	r    R
	lead bool
}

// Do saves item, in a group with the items that arrive meanwhile, and
// returns its result.
func (g *Group[T, R]) Do(item T) R {
	w := &waiter[T, R]{item: item, done: make(chan result[R], 1)}
	g.mu.Lock()
	if !g.leading {
		g.leading = true
		g.mu.Unlock()
		g.lead(w)
	} else {
		g.queue = append(g.queue, w)
		g.mu.Unlock()
	}
	for {
		r := <-w.done
		if !r.lead {
			return r.r
		}
		g.lead(w)
	}
}

// Queued is how many items wait for a group to save them.
func (g *Group[T, R]) Queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// lead saves one group: w's item first, then the items queued before it
// was handed the lead, up to Max in all; it sends each item its result
// (w's too: Do reads it next) and hands the lead to the first item still
// queued, taking it off the queue, or stops leading when none is.
func (g *Group[T, R]) lead(w *waiter[T, R]) {
	limit := g.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	g.mu.Lock()
	n := min(len(g.queue), limit-1)
	ws := make([]*waiter[T, R], 0, n+1)
	ws = append(append(ws, w), g.queue[:n]...)
	g.queue = append(g.queue[:0], g.queue[n:]...)
	g.mu.Unlock()

	items := make([]T, len(ws))
	for i, w := range ws {
		items[i] = w.item
	}
	rs := g.Save(items)
	for i, w := range ws {
		w.done <- result[R]{r: rs[i]}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.leading = false
		return
	}
	next := g.queue[0]
	g.queue = append(g.queue[:0], g.queue[1:]...)
	next.done <- result[R]{lead: true}
}
