package main

// The measuring pieces are bench-sip's (internal/bench/cmd/benchsip,
// measure.go and step.go), copied rather than shared because both are main
// packages: the same schedule, signal, feeder and CPU accounting make the
// two benches' figures comparable. Lifting them into internal/bench is a
// follow-up.

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
)

// window is the measured hold of one step: every outbound frame's
// lateness and every mark's delay, counted while it is open.
type window struct {
	late    bench.Lateness
	inbound atomic.Int64 // caller frames handed to Receive

	// Marks' delays are kept whole (at most 50 a call and second): once
	// the fake falls behind real time they grow past any histogram's
	// range, and by how much is the figure.
	mu          sync.Mutex
	markLags    []time.Duration
	markUnknown int // marks of frames older than the ring
}

// mark adds one mark's delay; ok false: its frame's time is not known.
func (w *window) mark(d time.Duration, ok bool) {
	w.mu.Lock()
	if ok {
		w.markLags = append(w.markLags, d)
	} else {
		w.markUnknown++
	}
	w.mu.Unlock()
}

// marks returns the delays sorted, and the unknown count; call it once
// the window is closed.
func (w *window) marks() (bench.Latencies, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := bench.Latencies(slices.Clone(w.markLags))
	slices.Sort(l)
	return l, w.markUnknown
}

// meter is what the senders of one step share: the window being measured,
// if any.
type meter struct{ cur atomic.Pointer[window] }

// ringFrames is how many frames' write times a call keeps for the marks'
// delay (20 s); a mark of an older frame is counted apart.
const ringFrames = 1024

// sched measures each frame handed to a line against the 20 ms schedule
// the pacer keeps: anchored at the first frame, restarted when a frame is
// more than audio.MaxPacerLag behind (as the pacer restarts its own). The
// feeder keeps every pacer's queue from running dry, so there is one spurt
// per call; were a queue to run dry, the pause would count as lateness
// here (the conservative side). frame is called from the pacer's goroutine
// only; sentAt from the line's Receive.
type sched struct {
	m     *meter
	t0    time.Time
	k     int64
	sent  atomic.Int64 // frames handed to the line over the call's life
	began bool
	// at[i % ringFrames] is when frame i (from 0) was handed to the line,
	// in unix nanoseconds: a mark names how much of the turn was sent.
	at [ringFrames]atomic.Int64
}

func (s *sched) frame(now time.Time) {
	i := s.sent.Load()
	s.at[i%ringFrames].Store(now.UnixNano())
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
	}
}

// sentAt is when frame i (from 0) was handed to the line; ok is false when
// it is not (or no longer) known.
func (s *sched) sentAt(i int64) (time.Time, bool) {
	n := s.sent.Load()
	if i < 0 || i >= n || i < n-ringFrames+1 {
		return time.Time{}, false
	}
	return time.Unix(0, s.at[i%ringFrames].Load()), true
}

// Each pacer is kept between lowWater and highWater frames ahead (as a TTS
// stream is): the feeder tops them up every feedEvery, so a queue never
// runs dry unless the feeder is starved for most of a second.
const (
	lowWater  = 25
	highWater = 40
	feedEvery = 100 * time.Millisecond
)

// feeder tops up every pacer from the looped signal until ctx ends.
type feeder struct {
	mu     sync.Mutex
	pacers []*fed
	frames [][]byte
}

type fed struct {
	p    *audio.Pacer
	next int // the next frame of the signal to push (feeder only)
}

func (f *feeder) add(p *audio.Pacer) {
	f.mu.Lock()
	d := &fed{p: p, next: (len(f.pacers) * 37) % len(f.frames)} // calls start at different points
	f.pacers = append(f.pacers, d)
	f.top(d)
	f.mu.Unlock()
}

// top pushes frames until d's pacer holds highWater; f.mu is held.
func (f *feeder) top(d *fed) {
	q := d.p.Stats().Queued
	if q >= lowWater {
		return
	}
	for ; q < highWater; q++ {
		d.p.Push(f.frames[d.next])
		d.next = (d.next + 1) % len(f.frames)
	}
}

func (f *feeder) run(ctx context.Context) {
	t := time.NewTicker(feedEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		for _, d := range f.pacers {
			f.top(d)
		}
		f.mu.Unlock()
	}
}

// cpuTimes are CPU times from /proc: this process's, the fake Twilio's and
// the whole machine's.
type cpuTimes struct {
	self, fake         time.Duration
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

func readCPU(fakePID int) cpuTimes {
	c := cpuTimes{self: bench.CPUTime(), fake: procCPU(fakePID)}
	c.busy, c.steal, c.total = machineCPU()
	return c
}

func (a cpuTimes) minus(b cpuTimes) cpuTimes {
	return cpuTimes{self: a.self - b.self, fake: a.fake - b.fake, busy: a.busy - b.busy, steal: a.steal - b.steal, total: a.total - b.total}
}

// share of the machine's CPU time d was (0 when unknown).
func (a cpuTimes) share(d time.Duration) float64 {
	if a.total <= 0 {
		return 0
	}
	return float64(d) / float64(a.total)
}

// others is the machine's busy time less this process and the fake.
func (a cpuTimes) others() time.Duration { return max(a.busy-a.self-a.fake, 0) }

// speech is a looped speech-like signal in μ-law, 20 ms frames: a 140 Hz
// voice with a few formant harmonics, its loudness moving at a syllable
// rate (4 Hz), never silent (no frame is all μ-law zero, 0xFF).
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
		c0 := readCPU(0)
		time.Sleep(2 * time.Second)
		c := readCPU(0).minus(c0)
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
