package sip

// Test helpers: a provider on loopback with its goroutines labelled so the
// leak check can tell them from other parallel tests', an event recorder,
// a Receiver that records, and a small SIPp runner (the siptest package
// will replace it).

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/leaktest"
	"switchboard/internal/sip/siptest"
	"switchboard/internal/telephony"
)

const (
	testFrom = "+16175550100"
	testTo   = "+16175550199"
)

// events records a provider's events.
type events struct {
	ch chan telephony.Event
}

func newEvents() *events { return &events{ch: make(chan telephony.Event, 64)} }

func (e *events) sink(ev telephony.Event) {
	select {
	case e.ch <- ev:
	default:
		panic("test sink full")
	}
}

// next waits for the next event.
func (e *events) next(t *testing.T, timeout time.Duration) telephony.Event {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(timeout):
		t.Fatalf("no provider event within %v", timeout)
		return telephony.Event{}
	}
}

// expect waits for an event of kind, failing on any other kind.
func (e *events) expect(t *testing.T, kind telephony.EventKind, timeout time.Duration) telephony.Event {
	t.Helper()
	ev := e.next(t, timeout)
	if ev.Kind != kind {
		t.Fatalf("event %s (outcome %q, reason %q), want %s", ev.Kind, ev.Outcome, ev.Reason, kind)
	}
	return ev
}

func (e *events) none(t *testing.T, wait time.Duration) {
	t.Helper()
	select {
	case ev := <-e.ch:
		t.Fatalf("unexpected event %s (outcome %q, reason %q)", ev.Kind, ev.Outcome, ev.Reason)
	case <-time.After(wait):
	}
}

// testProvider starts a provider on 127.0.0.1 with a free port and closes
// it at the end of the test, then checks that no goroutine the test
// started is left (leaktest).
func testProvider(t *testing.T, cfg Config, admit telephony.Admitter) (*Provider, *events) {
	t.Helper()
	leaktest.Check(t)
	return startProvider(t, cfg, admit)
}

// startProvider is testProvider without the leak check, for a test that
// starts more than one provider (and calls leaktest.Check once, first).
func startProvider(t *testing.T, cfg Config, admit telephony.Admitter) (*Provider, *events) {
	t.Helper()
	ev := newEvents()
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = "127.0.0.1:0"
	}
	if cfg.RTPPorts == (PortRange{}) {
		r := siptest.Ports(t, 64)
		cfg.RTPPorts = PortRange{Min: r.First, Max: r.Last}
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p, err := New(cfg, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := p.Start(t.Context(), telephony.CallControlFuncs{Sink: ev.sink, Admitter: admit}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if n := p.Live(); n != 0 {
			t.Errorf("Live() = %d after Close, want 0", n)
		}
	})
	return p, ev
}

// testWriter sends log lines to t.Log until the test ends.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	defer func() { _ = recover() }() // a log line after the test ended
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// recorder is a telephony.Receiver that keeps what it gets.
type recorder struct {
	mu     sync.Mutex
	audio  []byte
	digits []byte
	got    chan struct{} // a digit arrived
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 64)} }

func (r *recorder) Audio(b []byte) {
	r.mu.Lock()
	r.audio = append(r.audio, b...)
	r.mu.Unlock()
}

func (r *recorder) DTMF(d byte) {
	r.mu.Lock()
	r.digits = append(r.digits, d)
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *recorder) Text(string)        {}
func (r *recorder) Mark(string, int64) {}

func (r *recorder) StartAudio(audio.Format) error {
	return errors.New("a SIP line has its audio from the start")
}

func (r *recorder) snapshot() (audio []byte, digits string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return bytes.Clone(r.audio), string(r.digits)
}

// receive runs line.Receive on a goroutine; the channel gets its End.
func receive(t *testing.T, line telephony.Line, rx telephony.Receiver) <-chan telephony.End {
	t.Helper()
	ch := make(chan telephony.End, 1)
	go func() { ch <- line.Receive(t.Context(), rx) }()
	return ch
}

func waitEnd(t *testing.T, ch <-chan telephony.End, timeout time.Duration) telephony.End {
	t.Helper()
	select {
	case e := <-ch:
		return e
	case <-time.After(timeout):
		t.Fatalf("Receive did not return within %v", timeout)
		return telephony.End{}
	}
}

// tone is n 20 ms frames of a 440 Hz sine at -12 dBFS in f.
func tone(f audio.Format, n int) [][]byte {
	frames := make([][]byte, n)
	pcm := make([]int16, 160)
	for i := range n {
		for j := range pcm {
			k := float64(i*160 + j)
			pcm[j] = int16(8000 * math.Sin(2*math.Pi*440*k/8000))
		}
		if f.Encoding == audio.Alaw {
			frames[i] = audio.AlawEncode(nil, pcm)
		} else {
			frames[i] = audio.MulawEncode(nil, pcm)
		}
	}
	return frames
}

// decode turns line bytes of f into PCM.
func decode(f audio.Format, b []byte) []int16 {
	if f.Encoding == audio.Alaw {
		return audio.AlawDecode(nil, b)
	}
	return audio.MulawDecode(nil, b)
}

// writeFrames writes frames to line in real time.
func writeFrames(t *testing.T, line telephony.Line, frames [][]byte) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, f := range frames {
		if err := line.Write(f); err != nil {
			t.Fatalf("Write: %v", err)
		}
		<-tick.C
	}
}

// sipp is one SIPp process.
type sipp struct {
	port  int // its SIP port
	mport int // its media port
	tcp   bool
	cmd   *exec.Cmd
	out   *lockedBuffer
	dir   string
	done  chan error
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// nextSIPpPorts gives a SIPp or baresip its SIP port (and the one above,
// which baresip takes for TLS) and a media band of four ports (SIPp takes
// mport and a few above it; baresip's rtp_ports). They come from siptest's
// allocator, which hands a port to one test of one process on the machine
// only: go test runs internal/app's and cmd/switchboard's SIPp beside
// these, and a fixed band of our own collided with theirs (SIPp exited
// "Address already in use" beside a CPU hog).
func nextSIPpPorts(t *testing.T) (sipPort, mediaPort int) {
	t.Helper()
	return siptest.Ports(t, 2).First, siptest.Ports(t, 4).First
}

// startSIPp runs sipp with args plus -i 127.0.0.1 -p <port> -mp <mport>
// -m 1 -nostdin, in a fresh directory (with pcap/ linked to the Debian
// sip-tester captures when pcap is set), and waits until it listens.
// Scenario files named sip_*.xml are taken from testdata.
func startSIPp(t *testing.T, pcap bool, args ...string) *sipp {
	t.Helper()
	bin, err := exec.LookPath("sipp")
	if err != nil {
		t.Skip("sipp not installed (apt-get install sip-tester)")
	}
	dir := t.TempDir()
	if pcap && os.Geteuid() != 0 {
		t.Skip("SIPp plays pcap audio through a raw socket: needs root (or CAP_NET_RAW)")
	}
	if pcap {
		if err := os.Mkdir(filepath.Join(dir, "pcap"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"g711a.pcap", "dtmf_2833_1.pcap"} {
			if err := os.Symlink(filepath.Join("/usr/share/sip-tester", f), filepath.Join(dir, "pcap", f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, a := range args {
		if strings.HasPrefix(a, "sip_") && strings.HasSuffix(a, ".xml") {
			abs, err := filepath.Abs(filepath.Join("testdata", a))
			if err != nil {
				t.Fatal(err)
			}
			args[i] = abs
		}
	}
	s := &sipp{dir: dir, out: &lockedBuffer{}, done: make(chan error, 1)}
	for i, a := range args {
		if a == "-t" && i+1 < len(args) && strings.HasPrefix(args[i+1], "t") {
			s.tcp = true
		}
	}
	s.port, s.mport = nextSIPpPorts(t)
	all := append(args, "-i", "127.0.0.1", "-p", strconv.Itoa(s.port), "-mp", strconv.Itoa(s.mport),
		"-m", "1", "-nostdin", "-timeout", "40s", "-timeout_error", "-trace_err", "-trace_msg")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	s.cmd = exec.CommandContext(ctx, bin, all...)
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start sipp: %v", err)
	}
	go func() {
		s.done <- s.cmd.Wait()
		cancel()
	}()
	t.Cleanup(func() {
		var err error
		select {
		case err = <-s.done:
		case <-time.After(100 * time.Millisecond):
			_ = s.cmd.Process.Kill()
			err = <-s.done
		}
		s.done <- err
		if t.Failed() {
			t.Logf("sipp %v:\n%s\n%s", s.cmd.Args, s.out, s.logs())
		}
	})
	// Listening: its SIP port can no longer be bound.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var c io.Closer
		var err error
		if s.tcp {
			c, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.port))
		} else {
			c, err = net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(s.port))
		}
		if err != nil {
			return s
		}
		_ = c.Close()
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("sipp exited at start: %v\n%s", err, s.out)
		default:
		}
	}
	t.Fatalf("sipp did not listen on %d\n%s", s.port, s.out)
	return s
}

// addr is SIPp's SIP address.
func (s *sipp) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// wait waits for SIPp to exit and fails the test unless it counted its one
// call successful (exit status 0), showing its error log otherwise.
func (s *sipp) wait(t *testing.T, timeout time.Duration) {
	t.Helper()
	if err := s.exit(t, timeout); err != nil {
		t.Errorf("sipp: %v\n%s\n%s", err, s.out, s.logs())
	}
}

func (s *sipp) exit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(timeout):
		_ = s.cmd.Process.Kill()
		return errors.New("sipp did not finish within " + timeout.String())
	}
}

// logs are SIPp's error and message traces.
func (s *sipp) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(s.dir, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		if len(data) > 8000 {
			data = data[len(data)-8000:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// baresip is one headless baresip (Debian baresip-core): a real softphone
// whose microphone is a WAV of a 440 Hz sine (aufile; baresip hangs up when
// it ends) and whose speaker is a file.
type baresip struct {
	port int
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error
}

// startBaresip runs baresip for at most seconds with one account (user)
// that answers every call to it at once and speaks codec (PCMU or PCMA); dial, when
// set, is a URI it calls at start. Its microphone plays talk seconds of
// tone, then it hangs up.
func startBaresip(t *testing.T, user, codec, dial string, talk float64, seconds int) *baresip {
	t.Helper()
	bin, err := exec.LookPath("baresip")
	if err != nil {
		t.Skip("baresip not installed (apt-get install baresip-core)")
	}
	dir := t.TempDir()
	sipPort, mediaPort := nextSIPpPorts(t)
	cfg := fmt.Sprintf(`sip_listen 127.0.0.1:%d
sip_trans_def udp
net_interface 127.0.0.1
audio_source aufile,%s
audio_player aufile,%s
audio_alert aufile,%s
ausrc_srate 8000
auplay_srate 8000
rtp_ports %d-%d
module_path /usr/lib/baresip/modules
module g711.so
module aufile.so
module_app account.so
module_app menu.so
`, sipPort, filepath.Join(dir, "tone.wav"), filepath.Join(dir, "heard.wav"), filepath.Join(dir, "alert.wav"), mediaPort, mediaPort+3)
	if err := os.WriteFile(filepath.Join(dir, "tone.wav"), toneWAV(talk), 0o600); err != nil {
		t.Fatal(err)
	}
	account := fmt.Sprintf("<sip:%s@127.0.0.1:%d>;regint=0;answermode=auto;audio_codecs=%s\n", user, sipPort, codec)
	for name, body := range map[string]string{"config": cfg, "accounts": account} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"-f", dir, "-t", strconv.Itoa(seconds), "-s"}
	if dial != "" {
		args = append(args, "-e", "/dial "+dial)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds+10)*time.Second)
	b := &baresip{port: sipPort, out: &lockedBuffer{}, done: make(chan error, 1)}
	b.cmd = exec.CommandContext(ctx, bin, args...)
	b.cmd.Dir = dir
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start baresip: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("baresip output:\n%s", b.out)
		}
	})
	go func() {
		b.done <- b.cmd.Wait()
		cancel()
	}()
	t.Cleanup(func() {
		select {
		case <-b.done:
		case <-time.After(time.Duration(seconds+10) * time.Second):
			_ = b.cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(sipPort))
		if err != nil {
			return b
		}
		_ = c.Close()
	}
	t.Fatalf("baresip did not listen on %d\n%s", sipPort, b.out)
	return b
}

func (b *baresip) addr() string { return "127.0.0.1:" + strconv.Itoa(b.port) }

// toneWAV is a WAV file (16-bit mono 8 kHz) of a 440 Hz sine at -12 dBFS.
func toneWAV(seconds float64) []byte {
	n := int(seconds * 8000)
	var b bytes.Buffer
	le := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))    // PCM
	le(uint16(1))    // mono
	le(uint32(8000)) // rate
	le(uint32(16000))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(2 * n))
	for i := range n {
		le(int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000)))
	}
	return b.Bytes()
}
