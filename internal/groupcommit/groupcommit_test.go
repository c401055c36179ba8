package groupcommit_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/groupcommit"
)

// held is a Save that records each group's items and holds the first
// group until release is closed.
type held struct {
	mu      sync.Mutex
	groups  [][]int
	release chan struct{}
	first   sync.Once
	entered chan struct{}
}

func newHeld() *held { return &held{release: make(chan struct{}), entered: make(chan struct{})} }

func (h *held) save(items []int) []int {
	h.first.Do(func() {
		close(h.entered)
		<-h.release
	})
	h.mu.Lock()
	h.groups = append(h.groups, slices.Clone(items))
	h.mu.Unlock()
	out := make([]int, len(items))
	for i, v := range items {
		out[i] = v * 10
	}
	return out
}

func waitQueued(t *testing.T, g *groupcommit.Group[int, int], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for g.Queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d items queued; want %d", g.Queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLoneItem: an item with nothing under way is saved at once, alone.
func TestLoneItem(t *testing.T) {
	h := newHeld()
	close(h.release)
	g := &groupcommit.Group[int, int]{Save: h.save}
	if got := g.Do(4); got != 40 {
		t.Fatalf("Do(4) = %d; want 40", got)
	}
	if got := g.Do(5); got != 50 {
		t.Fatalf("Do(5) = %d; want 50", got)
	}
	if !slices.EqualFunc(h.groups, [][]int{{4}, {5}}, slices.Equal) {
		t.Errorf("groups = %v; want [[4] [5]]", h.groups)
	}
}

// TestQueuedSavedTogether: the items that arrive while a group is being
// saved are saved as the next groups, at most Max each, in arrival order,
// and each caller gets its own item's result.
func TestQueuedSavedTogether(t *testing.T) {
	h := newHeld()
	g := &groupcommit.Group[int, int]{Save: h.save, Max: 3}
	var wg sync.WaitGroup
	results := make([]int, 8)
	wg.Go(func() { results[0] = g.Do(0) })
	<-h.entered
	for i := 1; i < 8; i++ {
		wg.Go(func() { results[i] = g.Do(i) })
		waitQueued(t, g, i) // one at a time: a known order
	}
	close(h.release)
	wg.Wait()
	for i, r := range results {
		if r != i*10 {
			t.Errorf("Do(%d) = %d; want %d", i, r, i*10)
		}
	}
	want := [][]int{{0}, {1, 2, 3}, {4, 5, 6}, {7}}
	if !slices.EqualFunc(h.groups, want, slices.Equal) {
		t.Errorf("groups = %v; want %v", h.groups, want)
	}
	if g.Queued() != 0 {
		t.Errorf("Queued() after every Do returned = %d; want 0", g.Queued())
	}
}

// TestManyCallers: under many concurrent callers every item is saved
// once and every caller gets its own result (run with -race).
func TestManyCallers(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]int{}
	groups := 0
	g := &groupcommit.Group[int, int]{Save: func(items []int) []int {
		mu.Lock()
		groups++
		for _, v := range items {
			seen[v]++
		}
		mu.Unlock()
		time.Sleep(100 * time.Microsecond) // a write takes time: callers pile up
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = -v
		}
		return out
	}}
	const n = 2000
	var wg sync.WaitGroup
	bad := make(chan int, n)
	for i := range n {
		wg.Go(func() {
			if r := g.Do(i); r != -i {
				bad <- i
			}
		})
	}
	wg.Wait()
	close(bad)
	for i := range bad {
		t.Errorf("Do(%d) got another item's result", i)
	}
	for i := range n {
		if seen[i] != 1 {
			t.Errorf("item %d saved %d times; want once", i, seen[i])
		}
	}
	if groups >= n {
		t.Errorf("%d groups for %d concurrent items; want fewer (grouped)", groups, n)
	}
}
