package siptest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/audio"
)

func TestPortsAreFreeAndEven(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 4, 8, 16, 17, 100} {
		r := Ports(t, n)
		if r.Len() != n || r.First%2 != 0 || r.First < portLow || r.Last > portHigh {
			t.Errorf("Ports(%d) = %v; want %d ports from an even first in %d-%d", n, r, n, portLow, portHigh)
		}
		var lc net.ListenConfig
		for p := r.First; p <= r.Last; p++ {
			pc, err := lc.ListenPacket(context.Background(), "udp4", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				t.Errorf("Ports(%d) = %v: port %d is not free: %v", n, r, p, err)
				continue
			}
			pc.Close()
		}
	}
	if got := (PortRange{First: 20000, Last: 20009}).String(); got != "20000-20009" {
		t.Errorf("PortRange.String() = %q, want 20000-20009", got)
	}
}

func TestPortsNeverRepeat(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[int]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				r := Ports(t, 2)
				mu.Lock()
				for p := r.First; p <= r.Last; p++ {
					if seen[p] {
						t.Errorf("port %d handed out twice", p)
					}
					seen[p] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// Another process cannot take the block this one hands ports from: its
// flock on the block's file fails (an flock on a second open file
// description of the same file behaves as another process's would).
func TestPortBlockIsLocked(t *testing.T) {
	t.Parallel()
	p := Port(t)
	first := portLow + (p-portLow)/blockSize*blockSize
	f, err := os.Open(filepath.Join(os.TempDir(), "switchboard-siptest-ports", strconv.Itoa(first)+".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Errorf("flock on the block of port %d: %v, want EWOULDBLOCK", p, err)
	}
}

func TestPortsRejectsBadCount(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1, 1025} {
		ft := &fakeT{TB: t}
		ft.run(func() { Ports(ft, n) })
		if !ft.failed {
			t.Errorf("Ports(%d) did not fail the test", n)
		}
	}
}

func TestSpeechWAV(t *testing.T) {
	t.Parallel()
	s := SpeechWAV(t, "Hello, this is a test of the phone line.")
	w, err := ReadWAV(s.WAV)
	if err != nil {
		t.Fatal(err)
	}
	if w.Rate != PhoneRate || len(w.Samples) != len(s.Samples) {
		t.Errorf("SpeechWAV's WAV: %d Hz, %d samples; want %d Hz, %d samples", w.Rate, len(w.Samples), PhoneRate, len(s.Samples))
	}
	if s.Spoken < time.Second || s.Spoken > 5*time.Second {
		t.Errorf("SpeechWAV: %v of speech for a short sentence, want 1–5 s", s.Spoken)
	}
	if got, want := s.Duration(), s.Spoken+SpeechTail; got < want-time.Millisecond || got > want+time.Millisecond {
		t.Errorf("SpeechWAV: %v in all, want %v of speech and %v of silence", got, s.Spoken, SpeechTail)
	}
	if r := rms(s.Samples[:int(s.Spoken*PhoneRate/time.Second)]); r < 500 {
		t.Errorf("SpeechWAV: speech at RMS %.0f, want ≥ 500", r)
	}
	if r := rms(s.Samples[len(s.Samples)-int(SpeechTail*PhoneRate/time.Second):]); r != 0 {
		t.Errorf("SpeechWAV: tail at RMS %.0f, want silence", r)
	}
	ulaw, err := os.ReadFile(s.Ulaw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ulaw) != len(s.Samples) {
		t.Fatalf("SpeechWAV: %d μ-law bytes for %d samples", len(ulaw), len(s.Samples))
	}
	if c := bestMatch(s.Samples, audio.MulawDecode(nil, ulaw), 0); c < 0.99 {
		t.Errorf("SpeechWAV: the μ-law file decodes to audio matching the WAV at %.3f, want ≥ 0.99", c)
	}
	if got, want := s.RTPStream(-1), s.Ulaw+",-1,0"; got != want {
		t.Errorf("RTPStream(-1) = %q, want %q", got, want)
	}
}

func TestWAVRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.wav")
	want := WAV{Rate: 16000, Samples: []int16{0, 1, -1, 32767, -32768, 1234}}
	if err := WriteWAV(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadWAV(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != want.Rate || fmt.Sprint(got.Samples) != fmt.Sprint(want.Samples) {
		t.Errorf("ReadWAV(WriteWAV(%v)) = %v", want, got)
	}

	// A streaming writer's placeholder size: read to the end of the file.
	data, _ := os.ReadFile(path)
	binary.LittleEndian.PutUint32(data[40:], 0x7FFFFFFF)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadWAV(path); err != nil || len(got.Samples) != len(want.Samples) {
		t.Errorf("ReadWAV with a placeholder data size: %d samples, %v; want %d", len(got.Samples), err, len(want.Samples))
	}

	for name, b := range map[string][]byte{
		"empty":  nil,
		"stereo": stereoHeader(),
		"text":   []byte("RIFF....WAVEjunk"),
	} {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadWAV(p); err == nil {
			t.Errorf("ReadWAV(%s) succeeded, want an error", name)
		}
	}
}

func stereoHeader() []byte {
	b := make([]byte, 44)
	copy(b, "RIFF")
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 2)
	binary.LittleEndian.PutUint32(b[24:], 8000)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	return b
}

// Require skips without the peers, and fails when they are required.
// Not parallel: it changes PATH and SWITCHBOARD_REQUIRE_SIP.
func TestRequireSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, c := range []struct {
		env           string
		skip, failure bool
	}{
		{"", true, false},
		{"0", true, false},
		{"1", false, true},
	} {
		t.Setenv(RequireEnv, c.env)
		ft := &fakeT{TB: t}
		ft.run(func() { Require(ft) })
		if ft.skipped != c.skip || ft.failed != c.failure {
			t.Errorf("Require without sipp, %s=%q: skipped %v, failed %v; want %v, %v (%s)",
				RequireEnv, c.env, ft.skipped, ft.failed, c.skip, c.failure, ft.msg)
		}
	}
}
