package recording

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apperr"
)

const frameLen = 320 // 20 ms at 16 kHz

// clock is a settable clock for a Recorder.
type clock struct{ ns atomic.Int64 }

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func (c *clock) now() time.Time      { return t0.Add(time.Duration(c.ns.Load())) }
func (c *clock) set(d time.Duration) { c.ns.Store(int64(d)) }
func frameOf(v int16) []int16        { f := make([]int16, frameLen); fill(f, v); return f }
func fill(f []int16, v int16) {
	for i := range f {
		f[i] = v
	}
}
func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }
func sideOf(st []int16, ch int) []int16 { // one channel of interleaved stereo
	out := make([]int16, len(st)/2)
	for i := range out {
		out[i] = st[2*i+ch]
	}
	return out
}

// wav is a parsed recording.
type wav struct {
	channels, rate, bits int
	samples              []int16 // interleaved
}

// parseWAV reads a canonical WAV back, checking the RIFF sizes against the
// file's length.
func parseWAV(t *testing.T, b []byte) wav {
	t.Helper()
	if len(b) < headerLen || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" || string(b[12:16]) != "fmt " || string(b[36:40]) != "data" {
		t.Fatalf("not a canonical WAV header: % x", b[:min(len(b), headerLen)])
	}
	if got, want := binary.LittleEndian.Uint32(b[4:]), uint32(len(b)-8); got != want {
		t.Fatalf("RIFF size = %d, want %d (file length - 8)", got, want)
	}
	data := binary.LittleEndian.Uint32(b[40:])
	if int(data) != len(b)-headerLen {
		t.Fatalf("data size = %d, want %d", data, len(b)-headerLen)
	}
	if f := binary.LittleEndian.Uint16(b[20:]); f != 1 {
		t.Fatalf("format = %d, want 1 (PCM)", f)
	}
	w := wav{channels: int(binary.LittleEndian.Uint16(b[22:])), rate: int(binary.LittleEndian.Uint32(b[24:])), bits: int(binary.LittleEndian.Uint16(b[34:]))}
	if br := binary.LittleEndian.Uint32(b[28:]); int(br) != w.rate*w.channels*2 {
		t.Fatalf("byte rate = %d, want %d", br, w.rate*w.channels*2)
	}
	for i := headerLen; i+1 < len(b); i += 2 {
		w.samples = append(w.samples, int16(binary.LittleEndian.Uint16(b[i:])))
	}
	return w
}

func readWAV(t *testing.T, path string) wav {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parseWAV(t, b)
}

func start(t *testing.T, c *clock, create func(dir, pattern string) (file, error)) (*Recorder, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "call_x.wav")
	r, err := Start(path, Options{Now: c.now, create: create})
	if err != nil {
		t.Fatalf("Start(%s) = %v", path, err)
	}
	return r, path
}

// TestStereoLayoutAndAlignment: the caller speaks for 1 s from the start,
// the assistant from 0.5 s; the WAV is 1 s of stereo, caller left,
// assistant right, with silence on the right before it spoke.
func TestStereoLayoutAndAlignment(t *testing.T) {
	var c clock
	r, path := start(t, &c, nil)
	for i := range 50 {
		c.set(ms(20 * (i + 1)))
		r.Caller(frameOf(1000))
		if i >= 25 {
			r.Assistant(frameOf(-2000))
		}
	}
	c.set(time.Second)
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	w := readWAV(t, path)
	if w.channels != 2 || w.rate != 16000 || w.bits != 16 {
		t.Fatalf("format = %d ch, %d Hz, %d bit; want 2 ch, 16000 Hz, 16 bit", w.channels, w.rate, w.bits)
	}
	left, right := sideOf(w.samples, 0), sideOf(w.samples, 1)
	if len(left) != 16000 {
		t.Fatalf("recording has %d samples per channel, want 16000 (1 s)", len(left))
	}
	for i, v := range left {
		if v != 1000 {
			t.Fatalf("left[%d] = %d, want 1000 (the caller all along)", i, v)
		}
	}
	for i, v := range right {
		want := int16(0)
		if i >= 8000 {
			want = -2000
		}
		if v != want {
			t.Fatalf("right[%d] = %d, want %d (silence, then the assistant from 0.5 s)", i, v, want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("directory holds %d entries after Close, want only the recording", len(entries))
	}
}

// TestBurstsAndGaps: frames that arrive five at a time keep their audio
// contiguous; a pause of a side becomes silence of its length; a side
// that says nothing is silence; the recording lasts until Close.
func TestBurstsAndGaps(t *testing.T) {
	var c clock
	r, path := start(t, &c, nil)
	// 1 s in bursts of 100 ms, then 1 s of nothing, then 0.2 s more.
	for b := range 10 {
		c.set(ms(100 * (b + 1)))
		for range 5 {
			r.Caller(frameOf(500))
		}
	}
	for i := range 10 {
		c.set(ms(2000 + 20*(i+1)))
		r.Caller(frameOf(700))
	}
	c.set(ms(3000))
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	w := readWAV(t, path)
	left, right := sideOf(w.samples, 0), sideOf(w.samples, 1)
	if len(left) != 48000 {
		t.Fatalf("recording has %d samples per channel, want 48000 (3 s, until Close)", len(left))
	}
	count := func(xs []int16, v int16) (n int) {
		for _, x := range xs {
			if x == v {
				n++
			}
		}
		return n
	}
	if n := count(left, 500); n != 16000 {
		t.Errorf("left has %d samples of the bursts, want 16000", n)
	}
	if n := count(left, 700); n != 3200 {
		t.Errorf("left has %d samples after the pause, want 3200", n)
	}
	// The bursts are contiguous: no silence between their first and last sample.
	first, last := -1, -1
	for i, v := range left {
		if v == 500 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if last-first+1 != 16000 {
		t.Errorf("the bursts span %d samples, want 16000 (no gaps inserted)", last-first+1)
	}
	// After the pause the caller is back where the clock says (2.0 s), within the jitter allowance.
	for i, v := range left {
		if v == 700 {
			if i < 32000-1920 || i > 32000+1920 {
				t.Errorf("the caller's return starts at sample %d, want about 32000 (2 s)", i)
			}
			break
		}
	}
	if n := count(right, 0); n != len(right) {
		t.Errorf("right has %d non-silent samples; the assistant said nothing", len(right)-n)
	}
}

// failingFile fails every write after the first limit bytes.
type failingFile struct {
	*os.File
	limit int
	n     int
}

func (f *failingFile) Write(b []byte) (int, error) {
	if f.n+len(b) > f.limit {
		return 0, errors.New("no space left on device")
	}
	f.n += len(b)
	return f.File.Write(b)
}

// TestWriteErrorDeletes: a disk write that fails fails the recording: Close
// says why and nothing is left in the directory.
func TestWriteErrorDeletes(t *testing.T) {
	var c clock
	r, path := start(t, &c, func(dir, pattern string) (file, error) {
		f, err := os.CreateTemp(dir, pattern)
		return &failingFile{File: f, limit: 100 << 10}, err
	})
	for i := range 500 { // 10 s: 640 kB, more than the 100 kB the disk takes
		c.set(ms(20 * (i + 1)))
		r.Caller(frameOf(1))
		r.Assistant(frameOf(2))
	}
	err := r.Close()
	if err == nil || !r.Failed() {
		t.Fatalf("Close() = %v, Failed() = %v; want the write error", err, r.Failed())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 0 {
		t.Errorf("directory holds %v after a failed recording, want nothing", entries)
	}
	r.Caller(frameOf(1)) // after the end: ignored
}

// blockingFile blocks writes after the header until release is closed.
type blockingFile struct {
	*os.File
	release chan struct{}
	n       int
}

func (f *blockingFile) Write(b []byte) (int, error) {
	if f.n++; f.n > 1 {
		<-f.release
	}
	return f.File.Write(b)
}

// TestWriterBehindFails: when the writer falls Buffer frames behind, the
// audio path does not wait: the recording fails and is deleted.
func TestWriterBehindFails(t *testing.T) {
	var c clock
	release := make(chan struct{})
	var once sync.Once
	r, path := start(t, &c, func(dir, pattern string) (file, error) {
		f, err := os.CreateTemp(dir, pattern)
		if err != nil {
			return nil, err
		}
		return &blockingFile{File: f, release: release}, nil
	})
	defer once.Do(func() { close(release) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2 * Buffer {
			c.set(ms(20 * (i + 1)))
			r.Caller(frameOf(1))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Caller blocked while the writer was stuck")
	}
	if !r.Failed() {
		t.Fatal("Failed() = false after the writer fell behind")
	}
	once.Do(func() { close(release) })
	if err := r.Close(); !errors.Is(err, ErrBehind) {
		t.Fatalf("Close() = %v, want ErrBehind", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 0 {
		t.Errorf("directory holds %v after a failed recording, want nothing", entries)
	}
}

// TestConcurrentSides: both sides from their own goroutines (as the
// pipeline calls them), under the race detector.
func TestConcurrentSides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "call_x.wav")
	r, err := Start(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			r.Caller(frameOf(3))
		}
	})
	wg.Go(func() {
		for range 100 {
			r.Assistant(frameOf(4))
		}
	})
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	w := readWAV(t, path)
	var l, rt int
	for i, v := range w.samples {
		if v != 0 && i%2 == 0 {
			l++
		} else if v != 0 {
			rt++
		}
	}
	if l != 100*frameLen || rt != 100*frameLen {
		t.Errorf("non-silent samples: left %d, right %d; want %d each", l, rt, 100*frameLen)
	}
}

type fakeStore struct {
	mu   sync.Mutex
	set  map[string]string
	fail error
}

func (s *fakeStore) SetCallRecording(_ context.Context, orgID, callID, path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.set[orgID+"/"+callID] = path
	return nil
}

// TestArchive: a finished recording is stored on its call and opens; a
// call without one, or a path outside the recordings, is NotFound; ids
// that cannot name a file are refused.
func TestArchive(t *testing.T) {
	dir := t.TempDir()
	st := &fakeStore{set: map[string]string{}}
	a := NewArchive(dir, st, nil)
	r, err := a.Start("org_1", "call_1")
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	r.Caller(frameOf(9))
	a.Finish(t.Context(), "org_1", "call_1", r)
	a.Finish(t.Context(), "org_1", "call_1", r) // once only
	rel := st.set["org_1/call_1"]
	if rel != "recordings/org_1/call_1.wav" {
		t.Fatalf("stored path = %q, want recordings/org_1/call_1.wav", rel)
	}
	f, fi, err := a.Open(rel)
	if err != nil {
		t.Fatalf("Open(%s) = %v", rel, err)
	}
	_ = f.Close()
	if fi.Size() < headerLen+frameLen*4 {
		t.Errorf("recording is %d bytes, want at least a header and a frame", fi.Size())
	}
	for _, rel := range []string{"", "recordings/org_1/call_2.wav", "../etc/passwd", "recordings/../../x"} {
		if _, _, err := a.Open(rel); !apperr.Is(err, apperr.NotFound) {
			t.Errorf("Open(%q) = %v, want NotFound", rel, err)
		}
	}
	for _, ids := range [][2]string{{"org_1", "../x"}, {"a/b", "call_1"}, {"", "call_1"}} {
		if _, err := a.Start(ids[0], ids[1]); err == nil {
			t.Errorf("Start(%q, %q) = nil, want an error", ids[0], ids[1])
		}
	}
	// The store refuses: the file is not kept.
	st.fail = errors.New("database is gone")
	r, err = a.Start("org_1", "call_3")
	if err != nil {
		t.Fatal(err)
	}
	a.Finish(t.Context(), "org_1", "call_3", r)
	if _, err := os.Stat(filepath.Join(dir, "recordings", "org_1", "call_3.wav")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a recording the store refused is still on disk: %v", err)
	}
}

// BenchmarkFrame is the writer's work for one 20 ms frame of each side:
// placing both on the timeline and interleaving them into the WAV's bytes
// (the audio path itself only copies the frame into the channel).
func BenchmarkFrame(b *testing.B) {
	tl := newTimeline(16000, t0)
	f := frameOf(100)
	buf := make([]byte, 16<<10)
	sink := func([]byte) error { return nil }
	at := t0
	b.ReportAllocs()
	for b.Loop() {
		at = at.Add(20 * time.Millisecond)
		tl.add(callerSide, f, at)
		tl.add(assistantSide, f, at)
		if err := tl.emit(buf, sink); err != nil {
			b.Fatal(err)
		}
	}
}
