package vad

import (
	"math/bits"

	"switchboard/internal/apperr"
	"switchboard/internal/audio"
)

// Config tunes an Endpointer. Zero fields take the defaults. Durations are
// rounded up to whole 20 ms frames.
type Config struct {
	// SilenceMs of unvoiced audio ends an utterance. Default 500.
	SilenceMs int
	// MinSpeechMs of (mostly) voiced audio starts one; shorter bursts are
	// noise (a cough, a click, a line glitch). Default 120.
	MinSpeechMs int
	// MaxWaitMs caps the wait after the last sustained speech: stray voiced
	// frames (breath, line noise, a detector's false alarms) each restart
	// the SilenceMs count but do not hold the turn open past this.
	// Default 2500.
	MaxWaitMs int
	// FastSilenceMs replaces SilenceMs once the caller's partial transcript
	// ends a sentence (SetSentenceEnded), so a finished question gets a
	// faster reply. Default 250.
	FastSilenceMs int
	// PreRollMs of audio from before the speech started is kept, so the
	// first syllable, which the detector tends to miss, reaches STT.
	// Default 200.
	PreRollMs int
}

// Defaults of Config, and the bounds Validate enforces on the buffers.
const (
	DefaultSilenceMs     = 500
	DefaultMinSpeechMs   = 120
	DefaultMaxWaitMs     = 2500
	DefaultFastSilenceMs = 250
	DefaultPreRollMs     = 200

	maxMinSpeechMs = 2000
	maxPreRollMs   = 2000
	maxMaxWaitMs   = 60000
)

// The onset and sustained-speech test: at least onsetVoiced of the last
// onsetWindow frames voiced. A candidate onset is dropped once
// onsetWindow-onsetVoiced+1 of its last onsetWindow frames are unvoiced.
const (
	onsetWindow = 5
	onsetVoiced = 3
	// onsetSlack is how many frames past MinSpeech a candidate can run
	// before it either starts (on a voiced frame) or is dropped.
	onsetSlack = onsetWindow - onsetVoiced
)

// DefaultConfig is the configuration zero fields stand for.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SilenceMs, DefaultSilenceMs)
	def(&c.MinSpeechMs, DefaultMinSpeechMs)
	def(&c.MaxWaitMs, DefaultMaxWaitMs)
	def(&c.FastSilenceMs, DefaultFastSilenceMs)
	def(&c.PreRollMs, DefaultPreRollMs)
	return c
}

// Validate reports every bad field of c, zero fields meaning the defaults.
// Besides ranges it requires FastSilenceMs ≤ SilenceMs ≤ MaxWaitMs: the fast
// path must be faster, and the cap must not cut the normal path short.
func (c Config) Validate() error {
	c = c.withDefaults()
	var f apperr.Fields
	positive := func(field string, v, most int) {
		if v < 0 || v > most {
			f.Add(field, "must be from 1 to %d (0 for the default), got %d", most, v)
		}
	}
	positive("minSpeechMs", c.MinSpeechMs, maxMinSpeechMs)
	positive("preRollMs", c.PreRollMs, maxPreRollMs)
	positive("maxWaitMs", c.MaxWaitMs, maxMaxWaitMs)
	positive("silenceMs", c.SilenceMs, maxMaxWaitMs)
	positive("fastSilenceMs", c.FastSilenceMs, maxMaxWaitMs)
	if !f.Has("silenceMs") && !f.Has("maxWaitMs") && c.SilenceMs > c.MaxWaitMs {
		f.Add("silenceMs", "must not exceed maxWaitMs (%d), got %d", c.MaxWaitMs, c.SilenceMs)
	}
	if !f.Has("fastSilenceMs") && !f.Has("silenceMs") && c.FastSilenceMs > c.SilenceMs {
		f.Add("fastSilenceMs", "must not exceed silenceMs (%d), got %d", c.SilenceMs, c.FastSilenceMs)
	}
	return f.Err()
}

// Event is what one frame changed about the caller's turn.
type Event uint8

// The events Process returns. They alternate: SpeechStarted, SpeechStopped,
// SpeechStarted, …
const (
	// None: nothing changed.
	None Event = iota
	// SpeechStarted: the caller began an utterance; PreRoll holds its
	// audio so far.
	SpeechStarted
	// SpeechStopped: the utterance ended (endpointed): the caller has
	// yielded the turn.
	SpeechStopped
)

// String names the event as the pipeline's events do (docs/ARCHITECTURE.md).
func (e Event) String() string {
	switch e {
	case None:
		return "none"
	case SpeechStarted:
		return "speech.started"
	case SpeechStopped:
		return "speech.stopped"
	}
	return "unknown"
}

// Endpointer turns a stream of frames into utterance events. Feed every
// frame, in order, to Process.
//
// Start: a candidate begins at a voiced frame and becomes SpeechStarted at
// the first voiced frame at which it spans MinSpeechMs, provided no 5-frame
// window of it held 3 unvoiced frames (which drops the candidate: a burst
// shorter than MinSpeechMs is noise).
//
// Stop: SpeechStopped comes at the frame that completes SilenceMs of
// unvoiced frames (FastSilenceMs after SetSentenceEnded(true)), or at the
// frame MaxWaitMs after the last sustained speech (a voiced frame with 3 of
// the last 5 voiced), whichever is first.
type Endpointer struct {
	det Detector

	// In frames.
	minSpeech, silence, fast, maxWait, preRoll int

	speaking      bool
	sentenceEnded bool
	hist          uint8 // recent decisions, bit 0 the latest; 1 = voiced
	candLen       int   // frames in the onset candidate, 0 for none
	silenceRun    int   // unvoiced frames since the last voiced one
	sinceCertain  int   // frames since the last sustained-speech frame

	// ring holds the last len(ring)/audio.FrameSamples frames heard while not
	// speaking; it is frozen while speaking, which keeps PreRoll valid.
	ring      []int16
	ringHead  int // next frame slot
	ringCount int // frames stored
	startLen  int // frames PreRoll returns for the current utterance

	detectorErrors uint64
	lastErr        error
}

// NewEndpointer returns an Endpointer that asks det about each frame.
func NewEndpointer(det Detector, cfg Config) (*Endpointer, error) {
	if det == nil {
		return nil, apperr.Invalidf("detector", "required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	e := &Endpointer{
		det:       det,
		minSpeech: framesFor(cfg.MinSpeechMs),
		silence:   framesFor(cfg.SilenceMs),
		fast:      framesFor(cfg.FastSilenceMs),
		maxWait:   framesFor(cfg.MaxWaitMs),
		preRoll:   framesFor(cfg.PreRollMs),
	}
	// The longest onset candidate plus the pre-roll before it.
	e.ring = make([]int16, (e.preRoll+e.minSpeech+onsetSlack)*audio.FrameSamples)
	return e, nil
}

// SetSentenceEnded tells the Endpointer whether the caller's transcript so
// far ends a sentence ("What time do you open?"), which shortens the wait to
// FastSilenceMs. It applies to the current utterance only: every
// SpeechStarted and SpeechStopped clears it.
func (e *Endpointer) SetSentenceEnded(ended bool) { e.sentenceEnded = ended }

// Speaking reports whether an utterance is in progress (between
// SpeechStarted and SpeechStopped).
func (e *Endpointer) Speaking() bool { return e.speaking }

// DetectorErrors is how many frames the detector failed on (each counted as
// unvoiced) and the last failure.
func (e *Endpointer) DetectorErrors() (count uint64, last error) {
	return e.detectorErrors, e.lastErr
}

// Reset returns to the initial state (no utterance, no pre-roll), for a new
// stream. The detector is not reset.
func (e *Endpointer) Reset() {
	e.endUtterance()
	e.detectorErrors, e.lastErr = 0, nil
}

// Process feeds one frame and reports what it changed. A frame the detector
// rejects counts as unvoiced (see DetectorErrors).
func (e *Endpointer) Process(frame []int16) Event {
	voiced, err := e.det.IsSpeech(frame)
	if err != nil {
		voiced = false
		e.detectorErrors++
		e.lastErr = err
	}
	if e.speaking {
		return e.continueUtterance(voiced)
	}
	e.remember(frame)
	return e.awaitOnset(voiced)
}

func (e *Endpointer) awaitOnset(voiced bool) Event {
	if e.candLen == 0 {
		if !voiced {
			return None
		}
		e.candLen, e.hist = 1, 1
	} else {
		e.candLen++
		e.push(voiced)
		w := min(onsetWindow, e.candLen)
		if w-e.voicedIn(w) > onsetSlack {
			e.candLen, e.hist = 0, 0
			return None
		}
	}
	if !voiced || e.candLen < e.minSpeech {
		return None
	}
	e.speaking = true
	e.sentenceEnded = false
	e.silenceRun, e.sinceCertain = 0, 0
	e.startLen = min(e.ringCount, e.candLen+e.preRoll)
	return SpeechStarted
}

func (e *Endpointer) continueUtterance(voiced bool) Event {
	e.push(voiced)
	if voiced {
		e.silenceRun = 0
	} else {
		e.silenceRun++
	}
	if voiced && e.voicedIn(onsetWindow) >= onsetVoiced {
		e.sinceCertain = 0
	} else {
		e.sinceCertain++
	}
	need := e.silence
	if e.sentenceEnded {
		need = e.fast
	}
	if e.silenceRun < need && e.sinceCertain < e.maxWait {
		return None
	}
	e.endUtterance()
	return SpeechStopped
}

func (e *Endpointer) endUtterance() {
	e.speaking = false
	e.sentenceEnded = false
	e.hist, e.candLen = 0, 0
	e.silenceRun, e.sinceCertain = 0, 0
	e.ringHead, e.ringCount, e.startLen = 0, 0, 0
}

func (e *Endpointer) push(voiced bool) {
	e.hist <<= 1
	if voiced {
		e.hist |= 1
	}
}

// voicedIn counts voiced frames among the last w (≤ 8) decisions.
func (e *Endpointer) voicedIn(w int) int {
	return bits.OnesCount8(e.hist & uint8(1<<w-1))
}

// remember copies frame into the pre-roll ring (zero-padded or cut to
// audio.FrameSamples, as a rejected frame may be any length).
func (e *Endpointer) remember(frame []int16) {
	slot := e.ring[e.ringHead*audio.FrameSamples : (e.ringHead+1)*audio.FrameSamples]
	clear(slot[copy(slot, frame):])
	frames := len(e.ring) / audio.FrameSamples
	e.ringHead = (e.ringHead + 1) % frames
	e.ringCount = min(e.ringCount+1, frames)
}

// PreRoll returns copies of the frames of the current utterance up to and
// including the one whose Process returned SpeechStarted, preceded by up to
// PreRollMs of the audio before its first voiced frame, oldest first. Send
// these to STT at SpeechStarted, then each later frame as it comes. It is nil
// when no utterance is in progress.
func (e *Endpointer) PreRoll() [][]int16 {
	if !e.speaking || e.startLen == 0 {
		return nil
	}
	frames := len(e.ring) / audio.FrameSamples
	backing := make([]int16, e.startLen*audio.FrameSamples)
	out := make([][]int16, e.startLen)
	for i := range out {
		slot := (e.ringHead - e.startLen + i + frames) % frames
		out[i] = backing[i*audio.FrameSamples : (i+1)*audio.FrameSamples : (i+1)*audio.FrameSamples]
		copy(out[i], e.ring[slot*audio.FrameSamples:(slot+1)*audio.FrameSamples])
	}
	return out
}
