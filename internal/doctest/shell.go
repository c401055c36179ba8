package doctest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Shell is one bash, as a reader's terminal: statements run in it one
// after the other, and what one defines (variables, functions, the working
// directory) the next sees. Its stdin is not the reader's: each statement
// reads /dev/null unless it redirects its own input.
type Shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	marker string

	mu     sync.Mutex
	out    bytes.Buffer // everything bash wrote, stdout and stderr
	change chan struct{}
	done   chan struct{}
}

// NewShell starts bash in dir with env (added to this process's
// environment).
func NewShell(dir string, env []string) (*Shell, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", "--norc", "--noprofile") //nolint:noctx // Close ends it
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = w, w
	// Its own process group, so that Close also ends what it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, err
	}
	w.Close()
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	s := &Shell{cmd: cmd, stdin: stdin, marker: "__doctest_" + hex.EncodeToString(nonce) + "__",
		change: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer r.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				s.mu.Lock()
				s.out.Write(buf[:n])
				s.mu.Unlock()
				select {
				case s.change <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

// ErrTimeout is returned by Run when a statement did not finish in time;
// the shell is then closed.
var ErrTimeout = errors.New("doctest: the statement did not finish in time")

// Run runs one statement and returns what it printed (stdout and stderr
// together) and its exit status.
func (s *Shell) Run(ctx context.Context, command string, timeout time.Duration) (string, int, error) {
	s.mu.Lock()
	start := s.out.Len()
	s.mu.Unlock()
	script := "{\n" + command + "\n} </dev/null\nprintf '\\n%s %d\\n' " + s.marker + " $?\n"
	if _, err := io.WriteString(s.stdin, script); err != nil {
		return "", 0, fmt.Errorf("doctest: the shell is gone: %v", err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		text := s.out.String()[start:]
		s.mu.Unlock()
		if i := strings.LastIndex(text, "\n"+s.marker+" "); i >= 0 {
			rest := text[i+len(s.marker)+2:]
			if code, ok := strings.CutSuffix(rest, "\n"); ok {
				n, err := strconv.Atoi(code)
				if err != nil {
					return text[:i], 0, fmt.Errorf("doctest: bad status %q", code)
				}
				return text[:i], n, nil
			}
		}
		select {
		case <-s.change:
		case <-s.done:
			return text, 0, errors.New("doctest: the shell exited")
		case <-deadline.C:
			s.Close()
			return text, 0, ErrTimeout
		case <-ctx.Done():
			s.Close()
			return text, 0, ctx.Err()
		}
	}
}

// Close ends the shell and everything it started.
func (s *Shell) Close() {
	_ = s.stdin.Close()
	if s.cmd.Process != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second): // a child that left the group still holds the pipe
	}
	_ = s.cmd.Wait()
}
