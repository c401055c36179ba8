package siptest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/audio"
)

// BaresipConfig says which baresip to start: a softphone that either
// dials one call at start or auto-answers the calls it gets.
type BaresipConfig struct {
	// User is the account's user part (sip:User@127.0.0.1:port), and the
	// digest user name when Password is set. Default "bot".
	User string
	// Password, if set, is answered to a 401/407 challenge (auth_pass).
	Password string
	// Audio is the WAV baresip sends (mono 16-bit PCM, any rate; it is
	// resampled to 8 kHz), e.g. Speech.WAV. baresip hangs up when its
	// audio ends, so an answered call lasts Audio plus Tail unless the
	// peer hangs up first: a length that does not depend on how long the
	// call took to set up, unlike Timeout.
	Audio string
	// Tail is silence sent after Audio. With no Audio, baresip sends Tail
	// of silence and hangs up, or silence until Timeout if Tail is 0.
	Tail time.Duration
	// Dial, if set, is the URI called at start (-e "/dial URI"), e.g.
	// "sip:+16175550100@127.0.0.1:5060". Otherwise baresip waits and
	// answers every call at once.
	Dial string
	// Timeout is when baresip quits, hanging up (-t). Default 20 s.
	Timeout time.Duration
	// Codecs are the audio codecs offered or accepted, in order. Default
	// "PCMU,PCMA".
	Codecs string
}

// Baresip is a running baresip 1.0.0 listening on 127.0.0.1:Port (UDP
// and TCP; TLS on Port+1) with RTP in RTP, configured under Dir (config, accounts, the
// audio it sends) and recording into Dir/rec. It is stopped at the test's
// cleanup if still running.
type Baresip struct {
	Port int
	RTP  PortRange
	Dir  string
	User string

	t testing.TB
	p *process

	mu          sync.Mutex
	ready       chan struct{} // closed at "baresip is ready."
	ended       chan struct{} // closed when the first call ends
	established bool
	closed      string
	digits      []byte
	readyOnce   sync.Once
	endOnce     sync.Once

	once   sync.Once
	result BaresipResult
}

// BaresipResult is what baresip saw of its call.
type BaresipResult struct {
	// Established reports that the call was answered.
	Established bool
	// Closed is why the SIP session ended as baresip words it: a final
	// response ("486 Busy Here", "403 Forbidden") for a refused call,
	// "Connection reset by peer" when the peer hung up (BYE or CANCEL);
	// empty when baresip hung up itself (its audio ended, or Timeout).
	Closed string
	// Digits are the RFC 2833 telephone-events baresip received, in order.
	Digits string
	// Sent and Received are baresip's recordings of the call (8 kHz mono
	// WAV): what it sent, and what it heard from the peer. Empty when
	// the call carried no audio.
	Sent, Received string
	// Output is the tail of baresip's output.
	Output string
}

var (
	reClosed      = regexp.MustCompile(`session closed: (.*)$`)
	reTerminated  = regexp.MustCompile(`Call with .* terminated`)
	reEstablished = regexp.MustCompile(`Call established:`)
	reEvent       = regexp.MustCompile(`received event: '(.)' \(end=0\)`)
)

// StartBaresip writes a baresip configuration for cfg on free ports of
// 127.0.0.1, starts baresip, and returns once it is ready. A missing
// baresip skips or fails the test (Require).
func StartBaresip(t testing.TB, cfg BaresipConfig) *Baresip {
	t.Helper()
	Require(t)
	if cfg.User == "" {
		cfg.User = "bot"
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.Codecs == "" {
		cfg.Codecs = "PCMU,PCMA"
	}
	// baresip listens for SIP on Port (UDP and TCP) and for SIP over TLS
	// on Port+1.
	sip := Ports(t, 2)
	b := &Baresip{
		Port:  sip.First,
		RTP:   Ports(t, 8),
		Dir:   t.TempDir(),
		User:  cfg.User,
		t:     t,
		ready: make(chan struct{}),
		ended: make(chan struct{}),
	}
	rec := filepath.Join(b.Dir, "rec")
	source := filepath.Join(b.Dir, "source8k.wav")
	if err := os.Mkdir(rec, 0o755); err != nil {
		t.Fatalf("siptest: %v", err)
	}
	if err := writeSource(source, cfg); err != nil {
		t.Fatalf("siptest.StartBaresip: Audio: %v", err)
	}
	// The modules baresip-core needs here: g711 for the codecs, aufile
	// to send a file, sndfile to record. No audio_player: without one
	// baresip still decodes (and sndfile records) what it receives, and
	// the alsa null player would spin a core.
	config := strings.Join([]string{
		"sip_listen 127.0.0.1:" + itoa(b.Port),
		"sip_trans_def udp",
		// 'lo' does not work; without this baresip advertises the
		// machine's other addresses in Contact and SDP.
		"net_interface 127.0.0.1",
		"audio_source aufile," + source,
		"ausrc_srate 8000",
		"auplay_srate 8000",
		"rtp_ports " + b.RTP.String(),
		"module_path /usr/lib/baresip/modules",
		"module g711.so",
		"module aufile.so",
		"module sndfile.so",
		"module_app account.so",
		"module_app menu.so",
		"snd_path " + rec,
		"",
	}, "\n")
	account := fmt.Sprintf("<sip:%s@127.0.0.1:%d>;regint=0;answermode=auto;audio_codecs=%s", cfg.User, b.Port, cfg.Codecs)
	if cfg.Password != "" {
		account += ";auth_pass=" + cfg.Password
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "config"), []byte(config), 0o644); err != nil {
		t.Fatalf("siptest: %v", err)
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "accounts"), []byte(account+"\n"), 0o600); err != nil {
		t.Fatalf("siptest: %v", err)
	}

	args := []string{"-f", b.Dir, "-t", itoa(int((cfg.Timeout + time.Second - 1) / time.Second))}
	if cfg.Dial != "" {
		args = append(args, "-e", "/dial "+cfg.Dial)
	}
	b.p = startProcess(t, b.Dir, cfg.Timeout+10*time.Second, b.line, "baresip", args...)
	select {
	case <-b.ready:
	case <-b.p.done:
		t.Fatalf("siptest: baresip exited before it was ready:\n%s", b.p.describe())
	case <-time.After(10 * time.Second):
		b.p.stop()
		t.Fatalf("siptest: baresip not ready after 10 s:\n%s", b.p.describe())
	}
	return b
}

// writeSource writes the 8 kHz WAV baresip sends: cfg.Audio resampled,
// then cfg.Tail of silence; or silence until cfg.Timeout.
func writeSource(path string, cfg BaresipConfig) error {
	var pcm []int16
	if cfg.Audio != "" {
		w, err := ReadWAV(cfg.Audio)
		if err != nil {
			return err
		}
		rs := audio.NewResampler(w.Rate, PhoneRate)
		pcm = rs.Flush(rs.Process(nil, w.Samples))
	}
	tail := cfg.Tail
	if cfg.Audio == "" && tail == 0 {
		tail = cfg.Timeout + time.Second
	}
	pcm = append(pcm, make([]int16, int(tail*PhoneRate/time.Second))...)
	if len(pcm) < PhoneRate/50 {
		// aufile reads 20 ms frames; give it at least one.
		pcm = append(pcm, make([]int16, PhoneRate/50-len(pcm))...)
	}
	return WriteWAV(path, WAV{Rate: PhoneRate, Samples: pcm})
}

// line follows baresip's console output.
func (b *Baresip) line(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case strings.Contains(s, "baresip is ready."):
		b.readyOnce.Do(func() { close(b.ready) })
	case reEstablished.MatchString(s):
		b.established = true
	case reEvent.MatchString(s):
		b.digits = append(b.digits, reEvent.FindStringSubmatch(s)[1][0])
	case reClosed.MatchString(s):
		if b.closed == "" {
			b.closed = strings.TrimSpace(reClosed.FindStringSubmatch(s)[1])
		}
		b.endOnce.Do(func() { close(b.ended) })
	case reTerminated.MatchString(s):
		b.endOnce.Do(func() { close(b.ended) })
	}
}

// Addr returns baresip's SIP address, "127.0.0.1:port".
func (b *Baresip) Addr() string { return "127.0.0.1:" + itoa(b.Port) }

// URI returns baresip's account URI: what a caller dials to reach it.
func (b *Baresip) URI() string { return "sip:" + b.User + "@" + b.Addr() }

// Wait waits until baresip's first call has ended (or baresip quit at its
// Timeout), stops baresip, and returns what it saw. It logs baresip's
// output with t.Log when no call was established.
func (b *Baresip) Wait() BaresipResult {
	b.once.Do(func() {
		select {
		case <-b.ended:
			// The lines of one event arrive together; give the rest of
			// them (session closed, then terminated) a moment.
			time.Sleep(100 * time.Millisecond)
		case <-b.p.done:
		}
		b.p.stop()
		<-b.p.done
		b.mu.Lock()
		b.result = BaresipResult{
			Established: b.established,
			Closed:      b.closed,
			Digits:      string(b.digits),
			Output:      b.p.stdout.String(),
		}
		b.mu.Unlock()
		b.result.Sent = newest(filepath.Join(b.Dir, "rec", "*-enc.wav"))
		b.result.Received = newest(filepath.Join(b.Dir, "rec", "*-dec.wav"))
		if !b.result.Established {
			b.t.Logf("siptest: baresip established no call (closed: %q)\n%s", b.result.Closed, b.p.describe())
		}
	})
	return b.result
}

// Stop ends baresip now (SIGTERM, then SIGKILL) if it is still running,
// and returns once it has exited; see SIPp.Stop.
func (b *Baresip) Stop() { b.p.stop() }

// newest returns the last file matching pattern (sndfile names its
// recordings by the time), or "".
func newest(pattern string) string {
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}
