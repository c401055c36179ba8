package voicetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/call"
)

// Event is one thing the pipeline told the transport.
type Event struct {
	At   time.Time
	Kind string // "speech.started", "speech.stopped", "delta", "transcript", "audio.start", "audio.done", "audio.clear", "audio.pause", "audio.resume", "turn.done", "ended"
	// TurnID of the assistant turn, when the event has one.
	TurnID string
	// Text: delta, transcript and turn.done text; ended: the reason.
	Text string
	// Role of a transcript.
	Role string
	// Flag: a transcript's final, a turn.done's interrupted.
	Flag bool
	// PlayedMs of an audio.clear, .pause or .resume.
	PlayedMs int64
}

func (e Event) String() string {
	switch e.Kind {
	case "transcript":
		return fmt.Sprintf("transcript %s %q final=%v", e.Role, e.Text, e.Flag)
	case "turn.done":
		return fmt.Sprintf("turn.done %s %q interrupted=%v", e.TurnID, e.Text, e.Flag)
	case "audio.clear", "audio.pause", "audio.resume":
		return fmt.Sprintf("%s %s %dms", e.Kind, e.TurnID, e.PlayedMs)
	case "ended":
		return "ended " + e.Text
	case "delta":
		return fmt.Sprintf("delta %s %q", e.TurnID, e.Text)
	}
	return strings.TrimSpace(e.Kind + " " + e.TurnID)
}

// TurnAudio is what went out of one assistant turn's audio.
type TurnAudio struct {
	Frames     int // frames sent
	Loud       int // frames with tone in them
	Bytes      int
	AfterClear int // frames sent after its audio.clear
	Cleared    bool
	// Pauses counts its audio.pause events; WhilePaused the frames sent
	// between a pause and the resume or clear that ended it.
	Pauses, WhilePaused int
	paused              bool
	// First and Last are when its first and last frames went out.
	First, Last time.Time
}

// Output records what the pipeline sends a transport (voice.Output): its
// events in order, and per assistant turn the audio frames that went out.
// Wait blocks until a condition on the record holds.
type Output struct {
	format  audio.Format
	mu      sync.Mutex
	events  []Event
	audio   map[string]*TurnAudio
	cur     string // the turn whose audio is going out
	last    string // the last turn that started audio
	changed chan struct{}
	badSize int
	sent    int
	// FailAudioAfter, when > 0, makes Audio fail from that many frames on:
	// the transport went away.
	FailAudioAfter int
}

// NewOutput records a transport whose outbound audio format is f.
func NewOutput(f audio.Format) *Output {
	return &Output{format: f, audio: map[string]*TurnAudio{}, changed: make(chan struct{})}
}

func (o *Output) addLocked(e Event) {
	e.At = time.Now()
	o.events = append(o.events, e)
	close(o.changed)
	o.changed = make(chan struct{})
}

func (o *Output) add(e Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.addLocked(e)
}

func (o *Output) Delta(turnID, text string) { o.add(Event{Kind: "delta", TurnID: turnID, Text: text}) }
func (o *Output) TurnDone(turnID, text string, interrupted bool) {
	o.add(Event{Kind: "turn.done", TurnID: turnID, Text: text, Flag: interrupted})
}
func (o *Output) Transcript(role, text, turnID string, final bool) {
	o.add(Event{Kind: "transcript", Role: role, Text: text, TurnID: turnID, Flag: final})
}
func (o *Output) Ended(outcome call.Outcome, reason string) {
	o.add(Event{Kind: "ended", Text: string(outcome) + " " + reason})
}
func (o *Output) SpeechStarted() { o.add(Event{Kind: "speech.started"}) }
func (o *Output) SpeechStopped() { o.add(Event{Kind: "speech.stopped"}) }
func (o *Output) AudioStart(turnID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cur, o.last = turnID, turnID
	if o.audio[turnID] == nil {
		o.audio[turnID] = &TurnAudio{}
	}
	o.addLocked(Event{Kind: "audio.start", TurnID: turnID})
}
func (o *Output) AudioDone(turnID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cur == turnID {
		o.cur = ""
	}
	o.addLocked(Event{Kind: "audio.done", TurnID: turnID})
}
func (o *Output) AudioClear(turnID string, playedMs int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.audio[turnID]; a != nil {
		a.Cleared, a.paused = true, false
	}
	o.addLocked(Event{Kind: "audio.clear", TurnID: turnID, PlayedMs: playedMs})
}

// AudioPause records a barge-in pause.
func (o *Output) AudioPause(turnID string, playedMs int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.audio[turnID]; a != nil {
		a.Pauses++
		a.paused = true
	}
	o.addLocked(Event{Kind: "audio.pause", TurnID: turnID, PlayedMs: playedMs})
}

// AudioResume records the end of a pause.
func (o *Output) AudioResume(turnID string, playedMs int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.audio[turnID]; a != nil {
		a.paused = false
	}
	o.addLocked(Event{Kind: "audio.resume", TurnID: turnID, PlayedMs: playedMs})
}

// Audio counts one frame against the turn whose audio started last.
func (o *Output) Audio(frame []byte) error {
	loud := audio.RMS(Decode(o.format, frame)) > 500
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.sent++; o.FailAudioAfter > 0 && o.sent > o.FailAudioAfter {
		return errors.New("voicetest: the transport is gone")
	}
	if len(frame) != o.format.BytesPerFrame() {
		o.badSize++
	}
	a := o.audio[o.last]
	if a == nil {
		a = &TurnAudio{}
		o.audio[o.last] = a
	}
	a.Frames++
	a.Bytes += len(frame)
	a.Last = time.Now()
	if a.Frames == 1 {
		a.First = a.Last
	}
	if loud {
		a.Loud++
	}
	if a.Cleared {
		a.AfterClear++
	}
	if a.paused {
		a.WhilePaused++
	}
	return nil
}

// Events returns the record so far.
func (o *Output) Events() []Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Event(nil), o.events...)
}

// TurnAudio returns what went out of turnID's audio.
func (o *Output) TurnAudio(turnID string) TurnAudio {
	o.mu.Lock()
	defer o.mu.Unlock()
	if a := o.audio[turnID]; a != nil {
		return *a
	}
	return TurnAudio{}
}

// BadFrames counts frames whose size was not one 20 ms frame of the format.
func (o *Output) BadFrames() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.badSize
}

// Find returns the first event for which match is true.
func (o *Output) Find(match func(Event) bool) (Event, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.events {
		if match(e) {
			return e, true
		}
	}
	return Event{}, false
}

// Changed returns a channel closed at the next event.
func (o *Output) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Is matches events of a kind (and turn, when turnID is not "").
func Is(kind, turnID string) func(Event) bool {
	return func(e Event) bool { return e.Kind == kind && (turnID == "" || e.TurnID == turnID) }
}
