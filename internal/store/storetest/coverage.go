package storetest

//go:generate go run ./gen

import (
	"flag"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/store"
)

// optional lists the interfaces beyond store.Store that the service uses
// when a store implements them; the suite must exercise their methods too
// on a store that does.
var optional = []reflect.Type{
	reflect.TypeFor[store.Counter](),
}

// coverage records which store methods the suite called, so that a method
// no test exercises (a new one, or one forgotten) fails the suite by name.
type coverage struct {
	mu       sync.Mutex
	called   map[string]bool
	required map[string]bool
}

func newCoverage() *coverage {
	c := &coverage{called: map[string]bool{}, required: map[string]bool{}}
	for _, name := range methodNames(reflect.TypeFor[store.Store]()) {
		c.required[name] = true
	}
	return c
}

// methodNames lists the exported methods of an interface type.
func methodNames(it reflect.Type) []string {
	var out []string
	for m := range it.Methods() {
		out = append(out, m.Name)
	}
	return out
}

func (c *coverage) hit(name string) {
	c.mu.Lock()
	c.called[name] = true
	c.mu.Unlock()
}

// wrap returns s behind a recorder; the optional interfaces s implements
// become required.
func (c *coverage) wrap(s store.Store) store.Store {
	c.mu.Lock()
	for _, it := range optional {
		if reflect.TypeOf(s).Implements(it) {
			for _, name := range methodNames(it) {
				c.required[name] = true
			}
		}
	}
	c.mu.Unlock()
	return &recorder{s: s, hit: c.hit}
}

// missing lists the required methods not called, sorted.
func (c *coverage) missing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for name := range c.required {
		if !c.called[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// recordCoverage wraps open so that every store the suite opens records
// the methods called on it, and checks when the whole suite is done that
// every method of store.Store (and of the optional interfaces the store
// implements) was called at least once. The check is skipped when -run or
// -skip select only part of the suite, or when the suite already failed
// (a test stopped early leaves methods uncalled for no fault of coverage).
func recordCoverage(t *testing.T, open Opener) Opener {
	t.Helper()
	c := newCoverage()
	t.Cleanup(func() {
		if partial := partialRun(); partial != "" {
			t.Logf("store method coverage not checked: %s selects part of the suite", partial)
			return
		}
		if t.Failed() {
			t.Log("store method coverage not checked: the suite failed")
			return
		}
		if m := c.missing(); len(m) > 0 {
			t.Errorf("the conformance suite never calls %d store method(s): %s; add tests that exercise them (internal/store/storetest)",
				len(m), strings.Join(m, ", "))
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Logf("the conformance suite called every one of the %d store methods", len(c.required))
	})
	return func(t *testing.T) store.Store { return c.wrap(open(t)) }
}

// partialRun names the flag that selects only some of the suite's
// subtests, or is empty when the suite runs whole.
func partialRun() string {
	if f := flag.Lookup("test.run"); f != nil && strings.Contains(f.Value.String(), "/") {
		return "-run " + f.Value.String()
	}
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		return "-skip " + f.Value.String()
	}
	return ""
}

// counter returns s as a store.Counter, seeing through the recorder; ok is
// false when the store does not implement it.
func counter(s store.Store) (store.Counter, bool) {
	if r, ok := s.(*recorder); ok {
		if _, ok := r.s.(store.Counter); !ok {
			return nil, false
		}
	}
	c, ok := s.(store.Counter)
	return c, ok
}
