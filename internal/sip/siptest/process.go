package siptest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// outputLimit bounds how much of a peer's stdout and stderr is kept: the
// tail, which holds SIPp's final statistics screen and baresip's last
// events.
const outputLimit = 64 << 10

// process is one peer program run for a test: bounded in time (its
// context's deadline kills it), its output kept in bounded buffers, and
// stopped at the test's cleanup at the latest. Its one goroutine waits for
// the program and ends when it exits.
type process struct {
	name   string
	cmd    *exec.Cmd
	stdout *tailBuffer
	stderr *tailBuffer
	cancel context.CancelFunc
	done   chan struct{} // closed when the program has exited
	err    error         // cmd.Wait's result, set before done closes
}

// startProcess starts prog in dir, killed after limit if still running
// and at t's cleanup. onLine, if set, sees each line of stdout as it is
// written (from exec's copying goroutine).
func startProcess(t testing.TB, dir string, limit time.Duration, onLine func(string), prog string, args ...string) *process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = dir
	cmd.Stdin = nil // /dev/null: neither peer reads a terminal here
	p := &process{
		name:   prog,
		cmd:    cmd,
		stdout: &tailBuffer{max: outputLimit, onLine: onLine},
		stderr: &tailBuffer{max: outputLimit},
		cancel: cancel,
		done:   make(chan struct{}),
	}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("siptest: starting %s: %v", prog, err)
	}
	go func() {
		p.err = cmd.Wait()
		cancel()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// exited reports whether the program has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// wait blocks until the program exits (its time limit bounds that) and
// returns its exit status: -1 when a signal ended it.
func (p *process) wait() int {
	<-p.done
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		return exit.ExitCode()
	default:
		return -1
	}
}

// stop ends the program if it is still running: SIGTERM, which both peers
// handle by finishing their calls' bookkeeping, then SIGKILL after 2 s.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		p.cancel() // SIGKILL through the command's context
		<-p.done
	}
}

// describe is the program's command line and output, for a failure's log.
func (p *process) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ (cd %s && %s", p.cmd.Dir, p.name)
	for _, a := range p.cmd.Args[1:] {
		b.WriteByte(' ')
		if strings.ContainsAny(a, " \"'") || a == "" {
			a = strconv.Quote(a)
		}
		b.WriteString(a)
	}
	b.WriteString(")\n")
	if s := p.stderr.String(); s != "" {
		fmt.Fprintf(&b, "stderr:\n%s\n", s)
	}
	if s := p.stdout.String(); s != "" {
		fmt.Fprintf(&b, "stdout (tail):\n%s\n", s)
	}
	return b.String()
}

// tailBuffer is an io.Writer that keeps the last max bytes written and
// hands each complete line (ended by \n or \r) to onLine.
type tailBuffer struct {
	max    int
	onLine func(string)

	mu   sync.Mutex
	b    []byte
	line []byte // the unfinished line, at most max bytes
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	if w.onLine == nil {
		return len(p), nil
	}
	for _, c := range p {
		if c != '\n' && c != '\r' {
			if len(w.line) < w.max {
				w.line = append(w.line, c)
			}
			continue
		}
		if len(w.line) > 0 {
			w.onLine(string(w.line))
			w.line = w.line[:0]
		}
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(string(w.b))
}

// readTail returns the last limit bytes of the file at path, or "" when it
// does not exist: a peer's log, for a result or a failure message.
func readTail(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		_, _ = f.Seek(st.Size()-limit, 0)
	}
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), int(limit)+1)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

// bound reports whether something listens on 127.0.0.1:port (or the
// wildcard address) for proto "udp" or "tcp", from /proc/net: a way to see
// that a peer is ready without touching its port.
func bound(proto string, port int) bool {
	suffix := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"/proc/net/" + proto, "/proc/net/" + proto + "6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || !strings.HasSuffix(f[1], suffix) {
				continue
			}
			// TCP: only a listening socket (state 0A) counts.
			if proto == "tcp" && f[3] != "0A" {
				continue
			}
			return true
		}
	}
	return false
}
