package storetest

import (
	"reflect"
	"slices"
	"testing"

	"switchboard/internal/store"
)

// TestRecorder checks the generated recorder (recorder_gen.go) against
// reflection: it has exactly the methods of store.Store and of the
// optional interfaces, and each records its own name before calling the
// store it wraps. TestGenerated (gen) checks that the file is current.
func TestRecorder(t *testing.T) {
	want := methodNames(reflect.TypeFor[store.Store]())
	for _, it := range optional {
		want = append(want, methodNames(it)...)
	}
	slices.Sort(want)
	got := methodNames(reflect.TypeFor[*recorder]())
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("recorder methods\n got  %v\n want %v (store.Store and %v)", got, want, optional)
	}

	for _, name := range want {
		var hits []string
		// The wrapped store is nil: the recorder must record before it
		// calls it, which then panics.
		r := &recorder{s: struct{ store.Store }{}, hit: func(n string) { hits = append(hits, n) }}
		m := reflect.ValueOf(r).MethodByName(name)
		if !m.IsValid() {
			continue // reported above
		}
		args := make([]reflect.Value, m.Type().NumIn())
		for i := range args {
			args[i] = reflect.Zero(m.Type().In(i))
		}
		func() {
			defer func() { _ = recover() }()
			if m.Type().IsVariadic() {
				m.CallSlice(args)
			} else {
				m.Call(args)
			}
		}()
		if !slices.Equal(hits, []string{name}) {
			t.Errorf("recorder.%s recorded %q; want [%q]", name, hits, name)
		}
	}
}
