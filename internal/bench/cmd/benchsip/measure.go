package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
)

// window is the measured hold of one step: every outbound frame's
// lateness, counted while it is open.
type window struct {
	late   bench.Lateness
	frames atomic.Int64
	fill   atomic.Int64 // silence frames echoed back: the line's own fill
}

// meter is what the senders of one step share: the window being measured,
// if any.
type meter struct{ cur atomic.Pointer[window] }

// sched measures each frame handed to a line against the 20 ms schedule
// the pacer keeps: anchored at the first frame, restarted when a frame is
// more than audio.MaxPacerLag behind (as the pacer restarts its own). The
// feeder keeps every pacer's queue from running dry, so there is one spurt
// per call; were a queue to run dry, the pause would count as lateness
// here (the conservative side). Called from the pacer's goroutine only.
type sched struct {
	m     *meter
	t0    time.Time
	k     int64
	sent  atomic.Int64 // frames handed to the line over the call's life
	began bool
}

func (s *sched) frame(now time.Time) {
	s.sent.Add(1)
	if !s.began {
		s.t0, s.began = now, true
	}
	late := now.Sub(s.t0.Add(time.Duration(s.k) * audio.FrameDuration))
	if late > audio.MaxPacerLag {
		s.t0, s.k = now, 0
	}
	s.k++
	if w := s.m.cur.Load(); w != nil {
		w.late.Add(late)
		w.frames.Add(1)
	}
}

// cpuTimes are CPU times from /proc: this process's, SIPp's and the whole
// machine's.
type cpuTimes struct {
	self, sipp         time.Duration
	busy, steal, total time.Duration
}

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

func readCPU(selfCPU func() time.Duration, sippPID int) cpuTimes {
	c := cpuTimes{self: selfCPU(), sipp: procCPU(sippPID)}
	c.busy, c.steal, c.total = machineCPU()
	return c
}

func (a cpuTimes) minus(b cpuTimes) cpuTimes {
	return cpuTimes{self: a.self - b.self, sipp: a.sipp - b.sipp, busy: a.busy - b.busy, steal: a.steal - b.steal, total: a.total - b.total}
}

// share of the machine's CPU time d was (0 when unknown).
func (a cpuTimes) share(d time.Duration) float64 {
	if a.total <= 0 {
		return 0
	}
	return float64(d) / float64(a.total)
}

// others is the machine's busy time less this process and SIPp.
func (a cpuTimes) others() time.Duration { return max(a.busy-a.self-a.sipp, 0) }

// speech is a looped speech-like signal in μ-law, 20 ms frames: a 140 Hz
// voice with a few formant harmonics, its loudness moving at a syllable
// rate (4 Hz), never silent, so that no frame is all μ-law zero (0xFF):
// the line's own silence fill, echoed back, is told apart by that.
func speech(seconds int) [][]byte {
	const rate = 8000
	n := seconds * rate
	pcm := make([]int16, n)
	for i := range pcm {
		t := float64(i) / rate
		env := 0.35 + 0.65*math.Abs(math.Sin(2*math.Pi*2*t)) // 4 syllables a second
		v := 0.0
		for _, h := range []struct{ f, a float64 }{{140, 1}, {280, 0.6}, {700, 0.5}, {1120, 0.35}, {2450, 0.15}} {
			v += h.a * math.Sin(2*math.Pi*h.f*t)
		}
		pcm[i] = int16(env * v / 2.6 * 12000)
	}
	frames := make([][]byte, 0, n/160)
	for i := 0; i+160 <= n; i += 160 {
		frames = append(frames, audio.MulawEncode(nil, pcm[i:i+160]))
	}
	return frames
}

// silentFrame reports whether b is all μ-law zero: the line's fill.
func silentFrame(b []byte) bool {
	for _, c := range b {
		if c != 0xFF {
			return false
		}
	}
	return len(b) > 0
}

// waitQuiet waits, up to limit, for 2 s in which other processes and the
// host together take less than 15% of the machine's CPUs; it reports
// whether it found them (a bench on a shared machine measures its
// neighbours otherwise). A limit of 0 reports true at once.
func waitQuiet(limit time.Duration) bool {
	if limit <= 0 {
		return true
	}
	deadline := time.Now().Add(limit)
	for {
		c0 := readCPU(bench.CPUTime, 0)
		time.Sleep(2 * time.Second)
		c := readCPU(bench.CPUTime, 0).minus(c0)
		busy := c.share(c.others()) + c.share(c.steal)
		if busy < 0.15 {
			return true
		}
		if time.Now().After(deadline) {
			fmt.Printf("  the machine is busy (other processes and the host: %.0f%%); measuring anyway\n", 100*busy)
			return false
		}
	}
}
