package main

// The fake Twilio (internal/twilio/twiliotest) runs in a child process of
// the bench, this same binary started with fakeEnv set, so that its CPU
// time is measured apart from the provider's (as bench-sip measures
// SIPp's): it plays every call's media in real time, as Twilio does, and
// that work is not Switchboard's. The child prints one JSON line (its REST
// URL, the account and the control URL) and serves POST /counts on the
// control URL: the running totals of the calls whose SIDs the body lists.
// It ends when its stdin closes.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"switchboard/internal/twilio/twiliotest"
)

// fakeEnv, set to 1, makes the binary the fake Twilio child.
const fakeEnv = "SWITCHBOARD_BENCHTWILIO_FAKE"

// benchFrom is the number the bench's calls come from, owned by the fake
// account.
const benchFrom = "+16175550100"

// fakeHello is the child's first line.
type fakeHello struct {
	API     string `json:"api"`
	Control string `json:"control"`
	SID     string `json:"sid"`
	Token   string `json:"token"`
}

// maxCountsBody bounds a /counts request: 34-byte SIDs, a few thousand.
const maxCountsBody = 1 << 20

// runFakeChild is the child's main: it serves until stdin closes.
func runFakeChild() error {
	fake := twiliotest.New()
	defer fake.Close()
	sid, token := fake.NewAccount()
	fake.AddOwned(sid, benchFrom, "")

	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("fake: control listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /counts", func(w http.ResponseWriter, r *http.Request) {
		var sids []string
		if err := json.NewDecoder(io.LimitReader(r.Body, maxCountsBody)).Decode(&sids); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := make([]callCounts, len(sids))
		for i, s := range sids {
			if c := fake.Call(s); c != nil {
				n := c.Counts()
				out[i] = callCounts{Known: true, MediaIn: n.MediaIn, Heard: int64(n.Heard), Marks: int64(n.Marks), Streaming: n.Streaming}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	hello := fakeHello{API: fake.URL, Control: "http://" + ln.Addr().String(), SID: sid, Token: token}
	if err := json.NewEncoder(os.Stdout).Encode(hello); err != nil {
		_ = srv.Close()
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it (or dies)
	_ = srv.Close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// callCounts are one call's running totals at the fake.
type callCounts struct {
	Known     bool  `json:"known"`
	MediaIn   int64 `json:"mediaIn"` // media messages the fake received
	Heard     int64 `json:"heard"`   // bytes of audio it played
	Marks     int64 `json:"marks"`   // marks it echoed
	Streaming bool  `json:"streaming"`
}

// totals sums calls' counts.
type totals struct {
	mediaIn, heard, marks int64
	streaming             int
}

func sum(cs []callCounts) totals {
	var t totals
	for _, c := range cs {
		t.mediaIn += c.MediaIn
		t.heard += c.Heard
		t.marks += c.Marks
		if c.Streaming {
			t.streaming++
		}
	}
	return t
}

// fakeProc is the running child, seen from the bench.
type fakeProc struct {
	fakeHello
	cmd   *exec.Cmd
	stdin io.WriteCloser
	hc    *http.Client
	done  chan struct{} // closed when the child has exited
	err   error         // how it exited, once done is closed
}

// startFake starts the child and reads its first line; the child is
// killed if ctx ends first (stop is the orderly end).
func startFake(ctx context.Context) (*fakeProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("fake: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe) //nolint:gosec // this very binary
	cmd.Env = append(os.Environ(), fakeEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("fake: starting %s: %w", exe, err)
	}
	f := &fakeProc{cmd: cmd, stdin: stdin, hc: &http.Client{Timeout: 30 * time.Second}, done: make(chan struct{})}
	// One goroutine reads the hello, drains stdout until the child exits,
	// then waits for it (Wait closes the pipe: it must come after the reads).
	hello := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		s, _ := r.ReadString('\n')
		hello <- s
		_, _ = io.Copy(io.Discard, r)
		f.err = cmd.Wait()
		close(f.done)
	}()
	var s string
	select {
	case s = <-hello:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-f.done
		return nil, errors.New("fake: no hello within 10s")
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(s)), &f.fakeHello); err != nil || f.API == "" {
		_ = cmd.Process.Kill()
		<-f.done
		return nil, fmt.Errorf("fake: bad hello %q: %v", s, err)
	}
	return f, nil
}

func (f *fakeProc) pid() int { return f.cmd.Process.Pid }

// counts asks the child for the totals of calls sids, in order.
func (f *fakeProc) counts(ctx context.Context, sids []string) ([]callCounts, error) {
	body, err := json.Marshal(sids)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.Control+"/counts", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	res, err := f.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fake: counts: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fake: counts: HTTP %d", res.StatusCode)
	}
	var out []callCounts
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("fake: counts: %w", err)
	}
	if len(out) != len(sids) {
		return nil, fmt.Errorf("fake: counts: %d answers for %d calls", len(out), len(sids))
	}
	return out, nil
}

// stop closes the child's stdin and waits for it to end (it closes every
// call and the fake), killing it after limit.
func (f *fakeProc) stop(limit time.Duration) error {
	f.hc.CloseIdleConnections()
	_ = f.stdin.Close()
	select {
	case <-f.done:
		return f.err
	case <-time.After(limit):
		_ = f.cmd.Process.Kill()
		<-f.done
		return fmt.Errorf("fake: did not stop within %v; killed", limit)
	}
}
