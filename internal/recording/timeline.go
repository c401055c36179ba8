package recording

import (
	"encoding/binary"
	"time"
)

// Sides of a recording: the caller is the left channel, the assistant the
// right one.
const (
	callerSide    = 0
	assistantSide = 1
)

// seg is a run of one side's audio: pcm, or n samples of silence when pcm
// is nil (a long silence costs no memory).
type seg struct {
	pcm []int16
	n   int
}

func (s seg) len() int {
	if s.pcm != nil {
		return len(s.pcm)
	}
	return s.n
}

// track is one side's audio not yet written.
type track struct {
	q   []seg
	end int64 // timeline position (samples from the start) after the last queued sample
}

func (t *track) pad(to int64) {
	if to > t.end {
		t.q = append(t.q, seg{n: int(to - t.end)})
		t.end = to
	}
}

// timeline puts both sides on one clock. A side's frame is placed where
// its arrival says (its last sample at the arrival time), unless the side
// is already within Jitter of that place: then it follows its previous
// frame, so network jitter and frames that arrive in bursts neither
// stretch nor cut the audio. A side that says nothing gets silence: a
// side more than Lag behind the newest arrival is padded up to there, so
// the writer never waits for it. A side running ahead of real time (a
// client that sends audio faster than it plays) drags the other one along
// after MaxAhead, which bounds what is buffered.
type timeline struct {
	rate     int
	start    time.Time
	jitter   int64 // samples
	lag      int64
	maxAhead int64
	tracks   [2]track
	written  int64 // stereo samples emitted
}

func newTimeline(rate int, start time.Time) *timeline {
	per := func(d time.Duration) int64 { return int64(d) * int64(rate) / int64(time.Second) }
	return &timeline{rate: rate, start: start, jitter: per(Jitter), lag: per(Lag), maxAhead: per(MaxAhead)}
}

// Tuning of the timeline.
const (
	// Jitter is how far behind its arrival time a side's audio may run
	// before silence is inserted to catch up.
	Jitter = 120 * time.Millisecond
	// Lag is how long the writer waits for a silent side.
	Lag = 500 * time.Millisecond
	// MaxAhead bounds how far one side's audio may run ahead of the other.
	MaxAhead = 10 * time.Second
)

func (tl *timeline) pos(at time.Time) int64 {
	d := max(at.Sub(tl.start), 0)
	return int64(d) * int64(tl.rate) / int64(time.Second)
}

// add queues one frame of side s that arrived at at.
func (tl *timeline) add(s int, pcm []int16, at time.Time) {
	now := tl.pos(at)
	t := &tl.tracks[s]
	if t.end+int64(len(pcm)) < now-tl.jitter {
		t.pad(now - int64(len(pcm)))
	}
	t.q = append(t.q, seg{pcm: pcm})
	t.end += int64(len(pcm))
	for i := range tl.tracks {
		tl.tracks[i].pad(now - tl.lag)
	}
	o := &tl.tracks[1-s]
	o.pad(t.end - tl.maxAhead)
}

// finish pads both sides to the end: the later of their ends and at.
func (tl *timeline) finish(at time.Time) {
	end := max(tl.tracks[0].end, tl.tracks[1].end, tl.pos(at))
	tl.tracks[0].pad(end)
	tl.tracks[1].pad(end)
}

// emit writes the stereo samples both sides have (16-bit little endian,
// left then right) to sink, in chunks of buf.
func (tl *timeline) emit(buf []byte, sink func([]byte) error) error {
	upTo := min(tl.tracks[0].end, tl.tracks[1].end)
	for tl.written < upTo {
		n := int(min(upTo-tl.written, int64(len(buf)/4)))
		out := buf[:n*4]
		for ch := range tl.tracks {
			t := &tl.tracks[ch]
			i := 0
			for i < n {
				sg := &t.q[0]
				k := min(sg.len(), n-i)
				for j := range k {
					var v int16
					if sg.pcm != nil {
						v = sg.pcm[j]
					}
					binary.LittleEndian.PutUint16(out[(i+j)*4+ch*2:], uint16(v))
				}
				i += k
				if sg.pcm != nil {
					sg.pcm = sg.pcm[k:]
					if len(sg.pcm) == 0 {
						t.q = t.q[1:]
					}
				} else {
					sg.n -= k
					if sg.n == 0 {
						t.q = t.q[1:]
					}
				}
			}
		}
		if err := sink(out); err != nil {
			return err
		}
		tl.written += int64(n)
	}
	return nil
}
