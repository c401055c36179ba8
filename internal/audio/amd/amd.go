// Package amd is answering-machine detection for outbound calls: it tells
// a person who picked up from a voicemail greeting within the first
// seconds of the answer, and finds the beep after which a message is
// recorded. It is a pure detector: the call runtime feeds it the callee's
// audio frame by frame, with the voice activity decision for each frame
// (package vad) and the transcripts the recognizer produces; it never
// reads a clock, starts a goroutine or allocates per frame, so the same
// input always gives the same Decision at the same frame.
//
// # Rules
//
// Time is counted in 20 ms frames from the answer. A Detector decides
// once; the first rule that fires wins:
//
//  1. Beep (Machine, ReasonBeep): a pure tone between 800 and 1500 Hz
//     for at least BeepMinMs (150). A frame is tonal when one Goertzel
//     filter (29 of them, every 25 Hz) holds at least ToneRatio (0.6) of
//     the frame's energy, the frame is louder than −45 dBFS, and its peak
//     stays within 25 Hz of the run's first. People do not hold a pure
//     tone; greetings end with one.
//  2. Phrase (Machine, ReasonPhrase): a transcript (partial or final)
//     holds a voicemail phrase: "leave a message", "after the tone",
//     "at the beep", "not available", "voicemail", "mailbox",
//     "record your message", … (Phrases).
//  3. Greeting (Machine, ReasonGreeting): the first run of speech lasts
//     GreetingMs (2000). A run bridges pauses of up to GapMs (500) — the
//     breaths and sentence ends of a recorded greeting, commas in
//     "Hi, this is Dana". A person says "Hello?" (0.4–1.5 s) and waits.
//  4. Short greeting (Human, ReasonShortGreeting): after the callee spoke,
//     SilenceMs (800) of silence while the speech so far is under
//     GreetingMs: the person waits for an answer.
//  5. Deadline (at DecideByMs, 5000): still speaking, or more than
//     GreetingMs of speech heard in all → Machine (ReasonGreeting); no
//     speech at all → Undecided (ReasonSilence); otherwise Undecided
//     (ReasonTimeout). The runtime treats Undecided as a person (the
//     safe side: a human is never hung up on by a guess).
//
// After a Machine decision the detector keeps listening for the moment to
// leave a message (Cue): the end of the beep, or CueSilenceMs (1500) of
// silence after the last speech or tone when no beep comes, or
// CueMaxMs (30000) after the answer at the latest.
package amd

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
)

// FrameDuration is the length of a frame the Detector takes.
const FrameDuration = 20 * time.Millisecond

const frameMs = int(FrameDuration / time.Millisecond)

// ErrFrame is returned (wrapped) for a frame of the wrong length.
var ErrFrame = errors.New("amd: frame must be 20 ms of PCM16 at the detector's rate")

// Result is the verdict on who answered.
type Result uint8

// The results.
const (
	// Undecided: nothing settled it yet, or the deadline passed without
	// evidence either way.
	Undecided Result = iota
	// Human: a person answered.
	Human
	// Machine: a voicemail greeting answered.
	Machine
)

// String names the result ("undecided", "human", "machine").
func (r Result) String() string {
	switch r {
	case Human:
		return "human"
	case Machine:
		return "machine"
	}
	return "undecided"
}

// Reason says which rule decided.
type Reason uint8

// The reasons, one per rule (see the package documentation).
const (
	ReasonNone Reason = iota
	// ReasonBeep: a beep (rule 1).
	ReasonBeep
	// ReasonPhrase: a voicemail phrase in a transcript (rule 2).
	ReasonPhrase
	// ReasonGreeting: a long uninterrupted greeting (rules 3 and 5).
	ReasonGreeting
	// ReasonShortGreeting: a short greeting followed by silence (rule 4).
	ReasonShortGreeting
	// ReasonSilence: nothing said by the deadline (rule 5).
	ReasonSilence
	// ReasonTimeout: the deadline passed with too little evidence (rule 5).
	ReasonTimeout
)

// String names the reason for logs and reports.
func (r Reason) String() string {
	switch r {
	case ReasonBeep:
		return "beep"
	case ReasonPhrase:
		return "phrase"
	case ReasonGreeting:
		return "greeting"
	case ReasonShortGreeting:
		return "short greeting"
	case ReasonSilence:
		return "silence"
	case ReasonTimeout:
		return "timeout"
	}
	return "none"
}

// Decision is the detector's verdict and when (audio time since the
// answer) it was reached. The zero value is Undecided, not final.
type Decision struct {
	Result Result
	Reason Reason
	// At is the audio time of the frame (or transcript) that decided.
	At time.Duration
	// Final is set once the verdict will not change: every decision is,
	// including Undecided at the deadline.
	Final bool
	// Phrase is the voicemail phrase matched, for ReasonPhrase.
	Phrase string
}

// Config tunes a Detector. Zero fields take the defaults.
type Config struct {
	// SampleRate of the frames: 8000 or 16000 (default 8000).
	SampleRate int
	// GreetingMs of speech in the first run makes a machine (default 2000).
	GreetingMs int
	// GapMs is the longest pause inside a run of speech (default 500).
	GapMs int
	// SilenceMs after a short greeting makes a human (default 800).
	SilenceMs int
	// DecideByMs is the deadline (default 5000).
	DecideByMs int
	// BeepMinMs is the shortest tone that is a beep (default 150).
	BeepMinMs int
	// ToneRatio is the share of a frame's energy one tone filter must hold
	// for the frame to be tonal (default 0.6).
	ToneRatio float64
	// CueSilenceMs of silence after a machine's greeting, when no beep
	// came, is the cue to leave a message (default 1500).
	CueSilenceMs int
	// CueMaxMs after the answer, the cue comes anyway (default 30000).
	CueMaxMs int
}

// Defaults of Config.
const (
	DefaultGreetingMs   = 2000
	DefaultGapMs        = 500
	DefaultSilenceMs    = 800
	DefaultDecideByMs   = 5000
	DefaultBeepMinMs    = 150
	DefaultToneRatio    = 0.6
	DefaultCueSilenceMs = 1500
	DefaultCueMaxMs     = 30000
	maxMs               = 120000
)

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.SampleRate, 8000)
	def(&c.GreetingMs, DefaultGreetingMs)
	def(&c.GapMs, DefaultGapMs)
	def(&c.SilenceMs, DefaultSilenceMs)
	def(&c.DecideByMs, DefaultDecideByMs)
	def(&c.BeepMinMs, DefaultBeepMinMs)
	def(&c.CueSilenceMs, DefaultCueSilenceMs)
	def(&c.CueMaxMs, DefaultCueMaxMs)
	if c.ToneRatio == 0 {
		c.ToneRatio = DefaultToneRatio
	}
	return c
}

// Validate reports the first bad field (zero fields meaning defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.SampleRate != 8000 && c.SampleRate != 16000 {
		return fmt.Errorf("amd: sampleRate must be 8000 or 16000, got %d", c.SampleRate)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"greetingMs", c.GreetingMs}, {"gapMs", c.GapMs}, {"silenceMs", c.SilenceMs},
		{"decideByMs", c.DecideByMs}, {"beepMinMs", c.BeepMinMs},
		{"cueSilenceMs", c.CueSilenceMs}, {"cueMaxMs", c.CueMaxMs},
	} {
		if f.v < frameMs || f.v > maxMs {
			return fmt.Errorf("amd: %s must be from %d to %d, got %d", f.name, frameMs, maxMs, f.v)
		}
	}
	if !(c.ToneRatio > 0 && c.ToneRatio < 1) {
		return fmt.Errorf("amd: toneRatio must be above 0 and below 1, got %v", c.ToneRatio)
	}
	return nil
}

// Tone filters: every toneStep Hz from toneLow to toneHigh.
const (
	toneLow   = 800
	toneHigh  = 1500
	toneStep  = 25
	toneBins  = (toneHigh-toneLow)/toneStep + 1
	toneMinDB = -45.0
	// toneRate is the rate the filters run at: 16 kHz frames are
	// averaged down to it in pairs (the band is far below 4 kHz).
	toneRate    = 8000
	toneSamples = toneRate * frameMs / 1000
)

// Detector decides who answered one call. Feed it every frame from the
// answer on (Frame) and every transcript (Transcript); read Decision and,
// for leaving a message, Beep and Cue. Not safe for concurrent use.
type Detector struct {
	cfg     Config
	samples int // per frame

	greeting, gap, silence, decideBy, beepMin, cueSilence, cueMax int // in frames

	coef [toneBins]float64 // Goertzel 2cos(ω) per filter, at 8 kHz
	buf  [toneSamples]float64

	frames      int  // frames seen
	spoke       bool // any speech yet
	firstRun    bool // the first run of speech is still going
	runStart    int  // frame the current run started
	lastVoiced  int  // latest voiced frame
	speechTotal int  // voiced frames in all
	lastSound   int  // latest voiced or tonal frame

	toneRun   int // consecutive tonal frames at a steady pitch
	toneBin   int // the run's first peak filter
	toneStart int
	beepStart int // frame the beep started, −1 for none
	beepEnd   int // frame after the beep's last, −1 until it ended

	decision Decision
	cueAt    int // frame of the cue, −1 until then
}

// New returns a Detector for cfg.
func New(cfg Config) (*Detector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	d := &Detector{cfg: cfg, samples: cfg.SampleRate * frameMs / 1000}
	fr := func(ms int) int { return (ms + frameMs - 1) / frameMs }
	d.greeting, d.gap, d.silence = fr(cfg.GreetingMs), fr(cfg.GapMs), fr(cfg.SilenceMs)
	d.decideBy, d.beepMin = fr(cfg.DecideByMs), fr(cfg.BeepMinMs)
	d.cueSilence, d.cueMax = fr(cfg.CueSilenceMs), fr(cfg.CueMaxMs)
	for i := range d.coef {
		f := float64(toneLow + i*toneStep)
		d.coef[i] = 2 * math.Cos(2*math.Pi*f/toneRate)
	}
	d.Reset()
	return d, nil
}

// Reset starts over, as at a new answer.
func (d *Detector) Reset() {
	// The configuration stays; buf is scratch.
	*d = Detector{cfg: d.cfg, samples: d.samples, coef: d.coef,
		greeting: d.greeting, gap: d.gap, silence: d.silence, decideBy: d.decideBy,
		beepMin: d.beepMin, cueSilence: d.cueSilence, cueMax: d.cueMax,
		lastVoiced: -1, lastSound: -1, beepStart: -1, beepEnd: -1, cueAt: -1}
}

// FrameSamples is how many samples a frame holds at the detector's rate.
func (d *Detector) FrameSamples() int { return d.samples }

// Decision returns the verdict so far.
func (d *Detector) Decision() Decision { return d.decision }

// Elapsed is the audio time fed so far.
func (d *Detector) Elapsed() time.Duration { return d.at(d.frames) }

func (d *Detector) at(frame int) time.Duration { return time.Duration(frame) * FrameDuration }

// Beep reports the beep: when it started and when it ended (ended false
// while it is still sounding). ok is false until a tone has lasted
// BeepMinMs.
func (d *Detector) Beep() (start, end time.Duration, ended, ok bool) {
	if d.beepStart < 0 {
		return 0, 0, false, false
	}
	if d.beepEnd < 0 {
		return d.at(d.beepStart), 0, false, true
	}
	return d.at(d.beepStart), d.at(d.beepEnd), true, true
}

// Cue reports when to start leaving a message on a machine: the end of
// the beep, or the silence after the greeting (see the package
// documentation). ok is false until then, and always for a non-machine.
func (d *Detector) Cue() (at time.Duration, afterBeep, ok bool) {
	if d.cueAt < 0 {
		return 0, false, false
	}
	return d.at(d.cueAt), d.beepEnd >= 0 && d.cueAt == d.beepEnd, true
}

func (d *Detector) decide(r Result, why Reason, frame int, phrase string) {
	d.decision = Decision{Result: r, Reason: why, At: d.at(frame), Final: true, Phrase: phrase}
}

// Frame takes the next 20 ms of audio (FrameSamples samples) and the
// voice activity detector's decision for it, and returns the verdict so
// far. A frame the tone filter finds tonal never counts as speech, whatever
// speech says (detectors often call a beep speech).
func (d *Detector) Frame(pcm []int16, speech bool) (Decision, error) {
	if len(pcm) != d.samples {
		return d.decision, fmt.Errorf("%w: want %d samples, got %d", ErrFrame, d.samples, len(pcm))
	}
	n := d.frames
	d.frames++

	tonal, bin := d.tone(pcm)
	d.trackBeep(n, tonal, bin)
	if tonal {
		speech = false
		d.lastSound = n
	}
	if speech {
		d.lastSound = n
		d.speechTotal++
		switch {
		case !d.spoke:
			d.spoke, d.firstRun, d.runStart = true, true, n
		case n-d.lastVoiced-1 > d.gap:
			d.firstRun = false // the first run ended in a long pause
		}
		d.lastVoiced = n
	}

	if !d.decision.Final {
		d.rules(n, speech)
	}
	if d.decision.Result == Machine && d.cueAt < 0 {
		switch {
		case d.beepEnd >= 0:
			d.cueAt = d.beepEnd
		case d.beepStart < 0 && d.lastSound >= 0 && n-d.lastSound >= d.cueSilence:
			d.cueAt = n + 1
		case n+1 >= d.cueMax:
			d.cueAt = n + 1
		}
	}
	return d.decision, nil
}

// rules applies rules 1, 3, 4 and 5 after frame n.
func (d *Detector) rules(n int, speech bool) {
	switch {
	case d.beepStart >= 0:
		d.decide(Machine, ReasonBeep, n+1, "")
	case d.firstRun && speech && n-d.runStart+1 >= d.greeting:
		d.decide(Machine, ReasonGreeting, n+1, "")
	case d.spoke && !speech && n-d.lastVoiced >= d.silence && d.speechTotal < d.greeting:
		d.decide(Human, ReasonShortGreeting, n+1, "")
	case n+1 >= d.decideBy:
		switch {
		case !d.spoke:
			d.decide(Undecided, ReasonSilence, n+1, "")
		case d.speechTotal >= d.greeting || (d.firstRun && n-d.lastVoiced <= d.gap):
			d.decide(Machine, ReasonGreeting, n+1, "")
		default:
			d.decide(Undecided, ReasonTimeout, n+1, "")
		}
	}
}

// trackBeep follows runs of tonal frames at a steady pitch.
func (d *Detector) trackBeep(n int, tonal bool, bin int) {
	if tonal && d.toneRun > 0 && abs(bin-d.toneBin) <= 1 {
		d.toneRun++
	} else {
		if d.beepStart >= 0 && d.beepEnd < 0 && d.toneStart == d.beepStart {
			d.beepEnd = n // the beep's run ended
		}
		d.toneRun = 0
		if tonal {
			d.toneRun, d.toneBin, d.toneStart = 1, bin, n
		}
	}
	if d.toneRun >= d.beepMin && d.beepStart < 0 {
		d.beepStart = d.toneStart
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// tone reports whether the frame is a pure tone in the beep band, and the
// filter holding it. With N samples and a sine of amplitude A on a
// filter's frequency, |X|² = (AN/2)² and Σx² = NA²/2, so 2|X|²/(NΣx²) is
// 1 for a pure tone and near 0 for broadband sound.
func (d *Detector) tone(pcm []int16) (bool, int) {
	x := d.buf[:]
	step := len(pcm) / toneSamples
	var energy float64
	for i := range x {
		v := float64(pcm[i*step])
		if step == 2 {
			v = (v + float64(pcm[i*2+1])) / 2
		}
		x[i] = v
		energy += v * v
	}
	n := float64(len(x))
	// Quieter than toneMinDB: no beep. Full scale is 32768.
	if energy <= 0 || 10*math.Log10(energy/n/(32768*32768)) < toneMinDB {
		return false, 0
	}
	best, bin := 0.0, 0
	for i, c := range d.coef {
		var s1, s2 float64
		for _, v := range x {
			s0 := v + c*s1 - s2
			s2, s1 = s1, s0
		}
		p := s1*s1 + s2*s2 - c*s1*s2
		if p > best {
			best, bin = p, i
		}
	}
	return 2*best/(n*energy) >= d.cfg.ToneRatio, bin
}

// Phrases are the voicemail phrases rule 2 looks for, in lower case,
// matched on word boundaries in a transcript with punctuation dropped.
var Phrases = []string{
	"leave a message", "leave your message", "leave me a message", "after the tone", "after the beep",
	"at the tone", "at the beep", "not available", "unavailable", "voicemail", "voice mail",
	"mailbox", "mail box", "record your message", "can't take your call", "cannot take your call",
	"can not take your call", "can't come to the phone", "cannot come to the phone",
}

// maxTranscript bounds the text looked at: greetings are short.
const maxTranscript = 1000

// Transcript takes a recognizer's result (partial or final) for the
// callee's speech, heard by audio time Elapsed, and returns the verdict so
// far (rule 2).
func (d *Detector) Transcript(text string) Decision {
	if d.decision.Final || text == "" {
		return d.decision
	}
	if p := MatchPhrase(text); p != "" {
		d.decide(Machine, ReasonPhrase, d.frames, p)
	}
	return d.decision
}

// MatchPhrase returns the first of Phrases that text holds ("" for none),
// ignoring case and punctuation other than apostrophes.
func MatchPhrase(text string) string {
	if len(text) > maxTranscript {
		text = text[:maxTranscript]
	}
	norm := " " + strings.Join(strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	}), " ") + " "
	norm = strings.ReplaceAll(norm, "’", "'")
	for _, p := range Phrases {
		if strings.Contains(norm, " "+p+" ") {
			return p
		}
	}
	return ""
}
