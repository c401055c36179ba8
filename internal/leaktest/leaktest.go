// Package leaktest checks that a test leaves no goroutine behind, also
// when tests run in parallel: Check labels the test's goroutine (every
// goroutine started from it, and from those, inherits the label), and after
// the test's cleanups waits for every goroutine with the test's label to
// end, failing the test with their stacks if some do not.
package leaktest

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

const label = "leaktest"

// Wait is how long Check waits for the test's goroutines to end after its
// cleanups.
const Wait = 3 * time.Second

// Check must be called at the start of the test (or subtest), from its
// own goroutine, before anything registers a cleanup: cleanups run last
// in, first out, so the check runs after the others have stopped what
// they own.
func Check(tb testing.TB) {
	tb.Helper()
	name := tb.Name()
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels(label, name)))
	tb.Cleanup(func() {
		if leaked := wait(name, Wait); len(leaked) > 0 {
			tb.Errorf("%d goroutines started by the test are still running after it:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
		}
	})
}

// wait returns the stacks of the goroutines labelled name (other than its
// caller's) still running after d.
func wait(name string, d time.Duration) []string {
	want := fmt.Sprintf("%q:%q", label, name)
	deadline := time.Now().Add(d)
	for {
		var buf bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&buf, 1)
		var leaked []string
		for _, g := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(g, want) && !strings.Contains(g, "leaktest.wait") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(50 * time.Millisecond)
	}
}
