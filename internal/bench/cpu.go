package bench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// CPU is CPU times from /proc: this process's, the peer's (the far end a
// bench runs as a child, such as SIPp or a fake provider; 0 when none) and
// the whole machine's. Read twice and subtracted (Minus), they are an
// interval's: a bench on a shared machine reports what its neighbours took
// beside its own figures.
type CPU struct {
	Self, Peer         time.Duration
	Busy, Steal, Total time.Duration
}

// ReadCPU reads the CPU times now; peerPID 0 reads no peer.
func ReadCPU(peerPID int) CPU {
	c := CPU{Self: CPUTime(), Peer: procCPU(peerPID)}
	c.Busy, c.Steal, c.Total = machineCPU()
	return c
}

// Minus is the interval from b to a.
func (a CPU) Minus(b CPU) CPU {
	return CPU{Self: a.Self - b.Self, Peer: a.Peer - b.Peer, Busy: a.Busy - b.Busy, Steal: a.Steal - b.Steal, Total: a.Total - b.Total}
}

// Share is the share of the machine's CPU time d was (0 when unknown).
func (a CPU) Share(d time.Duration) float64 {
	if a.Total <= 0 {
		return 0
	}
	return float64(d) / float64(a.Total)
}

// Others is the machine's busy time less this process and the peer.
func (a CPU) Others() time.Duration { return max(a.Busy-a.Self-a.Peer, 0) }

// procCPU is the user+system CPU time of process pid (0 if unreadable).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond // USER_HZ = 100
}

// machineCPU reads the "cpu" line of /proc/stat.
func machineCPU() (busy, steal, total time.Duration) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	var t [8]time.Duration // user nice system idle iowait irq softirq steal
	for i := range t {
		n, _ := strconv.ParseInt(f[i+1], 10, 64)
		t[i] = time.Duration(n) * 10 * time.Millisecond
	}
	busy, steal = t[0]+t[1]+t[2]+t[5]+t[6], t[7]
	return busy, steal, busy + t[3] + t[4] + steal
}

// Hold opens the window w in cur for d, so that whatever counts into
// cur's window counts into w, then closes it. It returns how long w was
// open and the CPU times over that (peerPID as for ReadCPU).
func Hold[W any](cur *atomic.Pointer[W], w *W, d time.Duration, peerPID int) (time.Duration, CPU) {
	c0 := ReadCPU(peerPID)
	t0 := time.Now()
	cur.Store(w)
	time.Sleep(d)
	cur.Store(nil)
	took := time.Since(t0)
	return took, ReadCPU(peerPID).Minus(c0)
}

// WaitQuiet waits, up to limit, for 2 s in which other processes and the
// host together take less than 15% of the machine's CPUs; it reports
// whether it found them (a bench on a shared machine measures its
// neighbours otherwise). A limit of 0 reports true at once.
func WaitQuiet(limit time.Duration) bool {
	if limit <= 0 {
		return true
	}
	deadline := time.Now().Add(limit)
	for {
		c0 := ReadCPU(0)
		time.Sleep(2 * time.Second)
		c := ReadCPU(0).Minus(c0)
		busy := c.Share(c.Others()) + c.Share(c.Steal)
		if busy < 0.15 {
			return true
		}
		if time.Now().After(deadline) {
			fmt.Printf("  the machine is busy (other processes and the host: %.0f%%); measuring anyway\n", 100*busy)
			return false
		}
	}
}
