package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// sipp is SIPp's built-in uas scenario with -rtp_echo on 127.0.0.1: it
// answers every INVITE (PCMU), sends each RTP packet it receives back to
// its sender from one media port, and waits for our BYE. One process takes
// every call of a step (-m).
type sipp struct {
	port, mport int
	dir         string
	cmd         *exec.Cmd
	done        chan error // capacity 1: Wait's result
}

// startSIPp starts SIPp for calls calls on free ports in [lo, hi) and
// returns once its SIP port is bound. timeout bounds its run (-timeout).
func startSIPp(bin string, calls int, lo, hi int, timeout time.Duration) (*sipp, error) {
	dir, err := os.MkdirTemp("", "benchsip-sipp-")
	if err != nil {
		return nil, err
	}
	s := &sipp{dir: dir, done: make(chan error, 1)}
	for range 100 {
		p := lo + 2*rand.IntN((hi-lo-8)/2)
		if portsFree(p, p+2, p+3, p+4, p+5) {
			s.port, s.mport = p, p+2
			break
		}
	}
	if s.port == 0 {
		return nil, fmt.Errorf("no free ports for SIPp in %d-%d", lo, hi)
	}
	out, err := os.Create(filepath.Join(dir, "screen.log"))
	if err != nil {
		return nil, err
	}
	args := []string{
		"-sn", "uas", "-rtp_echo",
		"-i", "127.0.0.1", "-p", strconv.Itoa(s.port), "-mp", strconv.Itoa(s.mport),
		"-m", strconv.Itoa(calls), "-l", strconv.Itoa(calls + 16),
		"-timeout", strconv.Itoa(int(timeout/time.Second)+1) + "s",
		"-nostdin", "-aa",
		"-trace_err", "-error_file", filepath.Join(dir, "errors.log"),
	}
	// Killed 30 s after its own -timeout, should it not have exited.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	s.cmd = exec.CommandContext(ctx, bin, args...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		cancel()
		out.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		s.done <- s.cmd.Wait()
		cancel()
		out.Close()
	}()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !portsFree(s.port) {
			return s, nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("SIPp exited at start (%v): %s", err, s.screen(2000))
		default:
		}
	}
	s.kill()
	return nil, fmt.Errorf("SIPp did not listen on %d: %s", s.port, s.screen(2000))
}

func (s *sipp) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *sipp) pid() int { return s.cmd.Process.Pid }

// wait waits up to d for SIPp to exit, kills it after that, and returns its
// final count of successful and failed calls (-1 when it printed none).
func (s *sipp) wait(d time.Duration) (ok, failed int, err error) {
	select {
	case err = <-s.done:
		s.done <- err
	case <-time.After(d):
		s.kill()
		err = errors.New("SIPp did not exit: killed")
	}
	scr := s.screen(64 << 10)
	return lastCount(scr, "Successful call"), lastCount(scr, "Failed call"), err
}

func (s *sipp) kill() {
	_ = s.cmd.Process.Kill()
	err := <-s.done
	s.done <- err
}

func (s *sipp) cleanup() { _ = os.RemoveAll(s.dir) }

// screen is the tail of SIPp's output, and its error log.
func (s *sipp) screen(n int) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "screen.log"))
	e, _ := os.ReadFile(filepath.Join(s.dir, "errors.log"))
	if len(b) > n {
		b = b[len(b)-n:]
	}
	if len(e) > n {
		e = e[len(e)-n:]
	}
	return string(b) + string(e)
}

// lastCount reads the cumulative column of SIPp's last statistics line
// named label ("  Successful call | 0 | 1"), or -1.
func lastCount(screen, label string) int {
	re := regexp.MustCompile(regexp.QuoteMeta(label) + `\s*\|\s*\d+\s*\|\s*(\d+)`)
	m := re.FindAllStringSubmatch(screen, -1)
	if m == nil {
		return -1
	}
	n, err := strconv.Atoi(m[len(m)-1][1])
	if err != nil {
		return -1
	}
	return n
}

// portsFree reports whether every port can be bound on 127.0.0.1 for UDP
// right now (SIPp's SIP port and its media ports are all UDP here).
func portsFree(ports ...int) bool {
	var lc net.ListenConfig
	ctx := context.Background()
	for _, p := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		pc, err := lc.ListenPacket(ctx, "udp4", addr)
		if err != nil {
			return false
		}
		_ = pc.Close()
	}
	return true
}
