package bench

import (
	"os"
	"testing"
	"time"
)

func TestCPU(t *testing.T) {
	a := CPU{Self: 3 * time.Second, Peer: time.Second, Busy: 10 * time.Second, Steal: time.Second, Total: 20 * time.Second}
	b := CPU{Self: time.Second, Busy: 4 * time.Second, Total: 10 * time.Second}
	d := a.Minus(b)
	if want := (CPU{Self: 2 * time.Second, Peer: time.Second, Busy: 6 * time.Second, Steal: time.Second, Total: 10 * time.Second}); d != want {
		t.Errorf("Minus = %+v, want %+v", d, want)
	}
	if got := d.Others(); got != 3*time.Second {
		t.Errorf("Others = %s, want 3s (busy less self and peer)", got)
	}
	if got := d.Share(d.Others()); got != 0.3 {
		t.Errorf("Share(Others) = %v, want 0.3", got)
	}
	if got := (CPU{Self: time.Second}).Others(); got != 0 {
		t.Errorf("Others with self over busy = %s, want 0", got)
	}
	if got := (CPU{}).Share(time.Second); got != 0 {
		t.Errorf("Share with no total = %v, want 0", got)
	}
	// This process, read as a peer: /proc answers, in clock ticks.
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		// 30 ms of CPU, so that /proc's 10 ms ticks show some.
		for end := CPUTime() + 30*time.Millisecond; CPUTime() < end; {
		}
		if c := ReadCPU(os.Getpid()); c.Peer <= 0 || c.Total <= 0 || c.Busy <= 0 {
			t.Errorf("ReadCPU(own pid) = %+v, want this process's time as the peer's and the machine's", c)
		}
	}
}
