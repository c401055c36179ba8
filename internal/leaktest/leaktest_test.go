package leaktest

import (
	"strings"
	"testing"
	"time"
)

// TestFindsLeak: a goroutine started by a labelled test and still running
// is found, with its stack; once it ends nothing is.
func TestFindsLeak(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Run("leaky", func(t *testing.T) {
		Check(&fakeTB{T: t}) // a fake: the real test must not fail
		go func() {
			defer close(done)
			<-stop
		}()
		if got := wait(t.Name(), 100*time.Millisecond); len(got) != 1 || !strings.Contains(got[0], "TestFindsLeak") {
			t.Errorf("wait found %d goroutines, want the one the test started:\n%v", len(got), got)
		}
		close(stop)
		<-done
		if got := wait(t.Name(), time.Second); len(got) != 0 {
			t.Errorf("after the goroutine ended wait still found %v", got)
		}
	})
}

// TestParallelTestsAreApart: another test's goroutines are not this test's.
func TestParallelTestsAreApart(t *testing.T) {
	Check(t)
	if got := wait("some other test", 0); len(got) != 0 {
		t.Errorf("wait(another test) = %v, want nothing", got)
	}
}

type fakeTB struct{ *testing.T }

func (f *fakeTB) Cleanup(func()) {}
