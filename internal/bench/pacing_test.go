package bench

import (
	"testing"
	"time"

	"switchboard/internal/audio"
)

func TestFrameSchedule(t *testing.T) {
	var s FrameSchedule
	t0 := time.Unix(1000, 0)
	// Frames 0-3 on time, frame 4 3 ms late, frame 5 on time again (the
	// schedule is kept), frame 6 150 ms late: past MaxPacerLag the
	// schedule restarts, so frame 7 20 ms later is on time.
	at := []int{0, 20, 40, 60, 83, 100, 270, 290} // ms
	want := []time.Duration{0, 0, 0, 0, 3 * time.Millisecond, 0, 150 * time.Millisecond, 0}
	for i, ms := range at {
		if got := s.Frame(t0.Add(time.Duration(ms) * time.Millisecond)); got != want[i] {
			t.Errorf("Frame at %d ms (frame %d) = %s late, want %s", ms, i, got, want[i])
		}
	}
	if got := s.Sent.Load(); got != int64(len(at)) {
		t.Errorf("Sent = %d, want %d", got, len(at))
	}
}

func TestSpeechNeverSilent(t *testing.T) {
	frames := Speech(3)
	if len(frames) != 150 {
		t.Fatalf("Speech(3) = %d frames, want 150", len(frames))
	}
	for i, f := range frames {
		if len(f) != 160 || SilentFrame(f) {
			t.Fatalf("frame %d: %d bytes, silent %v; want 160 bytes of signal", i, len(f), SilentFrame(f))
		}
		if db := audio.DBFS(audio.MulawDecode(nil, f)); db < -30 || db > -3 {
			t.Errorf("frame %d at %.1f dBFS, want speech level (-30 to -3)", i, db)
		}
	}
	if !SilentFrame([]byte{0xFF, 0xFF}) || SilentFrame([]byte{0xFF, 0x7F}) || SilentFrame(nil) {
		t.Error("SilentFrame: want true only for all-0xFF frames")
	}
}

func TestFeederAdd(t *testing.T) {
	frames := Speech(1)
	f := NewFeeder(frames)
	a := audio.NewPacer(HighWater, func([]byte) error { return nil }, nil)
	b := audio.NewPacer(HighWater, func([]byte) error { return nil }, nil)
	f.Add(a)
	f.Add(b)
	for name, p := range map[string]*audio.Pacer{"first": a, "second": b} {
		if q := p.Stats().Queued; q != HighWater {
			t.Errorf("%s pacer after Add: %d frames queued, want HighWater (%d)", name, q, HighWater)
		}
	}
	// The second call starts 37 frames into the signal.
	if f.pacers[1].next != (37+HighWater)%len(frames) {
		t.Errorf("second pacer's next frame = %d, want %d", f.pacers[1].next, (37+HighWater)%len(frames))
	}
}
