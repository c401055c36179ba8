package siptest

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
)

// fakeT records what a helper does to its test instead of doing it:
// Fatal and Skip end the helper's goroutine (as they would a test's), and
// the rest goes to the real test.
type fakeT struct {
	testing.TB
	mu      sync.Mutex
	failed  bool
	skipped bool
	msg     string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeT) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}

func (f *fakeT) Skipf(format string, args ...any) {
	f.mu.Lock()
	f.skipped, f.msg = true, fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeT) Skip(args ...any) { f.Skipf("%s", fmt.Sprint(args...)) }

// run calls fn as a test body would run, in its own goroutine, and
// returns when fn returns or stops the way Fatal and Skip stop a test.
func (f *fakeT) run(fn func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
}

// envelope is the RMS level of each 20 ms frame of 8 kHz audio.
func envelope(pcm []int16) []float64 {
	const frame = 160
	env := make([]float64, 0, len(pcm)/frame)
	for i := 0; i+frame <= len(pcm); i += frame {
		var sum float64
		for _, s := range pcm[i : i+frame] {
			sum += float64(s) * float64(s)
		}
		env = append(env, math.Sqrt(sum/frame))
	}
	return env
}

// bestMatch slides want's level envelope over got's, up to maxLag frames
// later, and returns the highest correlation coefficient: near 1 when got
// holds the audio of want (delayed, re-encoded), near 0 for other sound.
func bestMatch(want, got []int16, maxLag int) float64 {
	a, b := envelope(want), envelope(got)
	best := -1.0
	for lag := 0; lag <= maxLag && lag+len(a) <= len(b); lag++ {
		if c := correlation(a, b[lag:lag+len(a)]); c > best {
			best = c
		}
	}
	return best
}

func correlation(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var sxy, sxx, syy float64
	for i := range x {
		dx, dy := x[i]-mx, y[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// rms is the RMS level of pcm.
func rms(pcm []int16) float64 {
	if len(pcm) == 0 {
		return 0
	}
	var sum float64
	for _, s := range pcm {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(len(pcm)))
}
