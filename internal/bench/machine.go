package bench

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPUTime is the CPU time (user + system) this process has used.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAvg is the machine's 1-minute load average, or "?".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// CPUModel is the CPU's model name, for a report's machine line.
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// Niceness says at what scheduling priority the bench (and its children,
// named in who, e.g. "bench and SIPp") ran: on a machine shared with other
// work, a raised priority keeps the neighbours' load out of the figures.
// With autogroups (the kernel's default) a process's nice ranks it only
// within its session; between sessions the session's autogroup nice
// counts.
func Niceness(who string) string {
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		return "priority unknown"
	}
	nice := 20 - prio // the raw system call returns 20 - nice
	group := 0
	if b, err := os.ReadFile("/proc/self/autogroup"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 && f[1] == "nice" {
			group, _ = strconv.Atoi(f[2])
		}
	}
	if nice == 0 && group == 0 {
		return "default priority (nice 0)"
	}
	return fmt.Sprintf("run at nice %d, autogroup nice %d (%s), the machine being shared with other builds and tests", nice, group, who)
}
