package sandbox

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/speech"
	"switchboard/internal/telephony"
)

// Lines makes the network hand each answered call to the call runtime as
// a telephony.Line whose far end is the destination's Persona. With Ear
// and Mouth set the line is audio (G.711 μ-law at 8 kHz: the persona hears
// the assistant through Ear and speaks through Mouth, in real time); at
// most VoiceCalls lines are audio at once — each runs two recognizers on
// the local engines — and the others, like every line without Ear and
// Mouth, carry text.
type Lines struct {
	// Think is the persona's pause before answering on a text line.
	Think time.Duration
	// Ear and Mouth are the persona's speech engines (the local ones).
	Ear   speech.Transcriber
	Mouth speech.Synthesizer
	// VoiceCalls bounds the audio lines at once (default 4).
	VoiceCalls int
	// Patience is how long a persona on an audio line waits after the
	// assistant's turn, the line quiet, for something to answer before it
	// says its Unheard line (default DefaultPatience).
	Patience time.Duration
}

// PhoneLine is the sandbox's audio line format.
var PhoneLine = audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}

// persona line outcomes.
var (
	endCustomer = telephony.End{Outcome: outcomeCompleted, Reason: "customer-ended-call"}
)

// personaLine is a sandbox call's line: the persona at the far end. Of
// the runtime's events it follows what the persona hears: on a text line
// each finished turn (TurnDone), which it answers; on an audio line the
// end of each turn's audio (AudioDone, AudioClear), which ends what its ear
// hears of it. The others are telephony.NopListener's.
type personaLine struct {
	telephony.NopListener

	persona Persona
	think   time.Duration
	format  audio.Format
	ear     speech.Transcriber // audio lines
	mouth   speech.Synthesizer
	release func() // gives the audio slot back; once
	log     *slog.Logger

	said chan said // the persona's answers, bounded
	keys chan byte // keys the far party pressed, for Receive; bounded, a full queue drops

	mu     sync.Mutex
	ended  chan struct{}
	end    telephony.End
	closed bool
	timers []*time.Timer
	stream speech.TranscribeStream // the ear's stream while Receive runs
	// turnEnded tells listen that the assistant finished a turn (bounded:
	// one pending signal is enough).
	turnEnded chan struct{}
	patience  time.Duration
	// lastWrite is when the assistant's audio last reached the line
	// (Unix ns), so that patience does not run out while it talks.
	lastWrite atomic.Int64
	heard     bool // assistant audio since the last Finish
	bye       bool // say the last answer, then hang up
	// dialed is what the far party heard of SendDTMF: the last maxDialed
	// keys.
	dialed []byte
}

// Keys both ways, simulated: the far party hears the keys SendDTMF plays
// (dialed) and may press its own (press). No persona reacts to keys or
// presses any yet; the package's tests are the hand on its keypad.
const (
	keyQueue  = 16
	maxDialed = 64
)

// said is one answer of the persona: text on a text line, μ-law audio on
// an audio line; hangup ends the call after it.
type said struct {
	text   string
	ulaw   []byte
	hangup bool
}

var (
	_ telephony.Line = (*personaLine)(nil)
	// The events the line overrides, named through the interface: a
	// rename in telephony must fail here, not leave the persona deaf
	// behind the embedded no-op.
	_ = []any{telephony.Listener.TurnDone, telephony.Listener.AudioDone, telephony.Listener.AudioClear}
)

// newLine makes the line of an answered call to destination to.
func (n *Network) newLine(to string) *personaLine {
	l := &personaLine{persona: PersonaFor(to), think: n.cfg.Lines.Think, said: make(chan said, 4), keys: make(chan byte, keyQueue), ended: make(chan struct{}),
		turnEnded: make(chan struct{}, 1), log: n.log, release: func() {}}
	lc := n.cfg.Lines
	if lc.Ear != nil && lc.Mouth != nil {
		select {
		case n.voiceSlots <- struct{}{}:
			l.format, l.ear, l.mouth = PhoneLine, lc.Ear, lc.Mouth
			l.patience = cmp.Or(lc.Patience, DefaultPatience)
			var once sync.Once
			l.release = func() { once.Do(func() { <-n.voiceSlots }) }
		default:
			n.log.Info("sandbox call runs as text: the local speech engines carry their most spoken calls already", "spoken_calls", cap(n.voiceSlots))
		}
	}
	return l
}

// Capabilities: a keypad (simulated: see press) and transfer (the sandbox
// accepts every transfer).
func (l *personaLine) Capabilities() telephony.Capabilities {
	return telephony.Capabilities{Keypad: true, Transfer: true}
}

func (l *personaLine) Format() audio.Format { return l.format }

// finish ends the line with e (the first end wins).
func (l *personaLine) finish(e telephony.End) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed, l.end = true, e
	for _, t := range l.timers {
		t.Stop()
	}
	close(l.ended)
	l.release()
}

func (l *personaLine) Hangup(context.Context) error {
	l.finish(telephony.End{})
	return nil
}

func (l *personaLine) Clear() {}

// SendDTMF plays digits to the far party, which hears them (dialed) at
// once.
func (l *personaLine) SendDTMF(_ context.Context, digits string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.dialed = append(l.dialed, digits...)
		if n := len(l.dialed); n > maxDialed {
			l.dialed = append(l.dialed[:0], l.dialed[n-maxDialed:]...)
		}
	}
	return nil
}

// press is the far party pressing keys, which Receive hands on; keys past
// a full queue are dropped.
func (l *personaLine) press(keys string) {
	for i := 0; i < len(keys); i++ {
		select {
		case l.keys <- keys[i]:
		default:
		}
	}
}

// heardKeys is what the far party heard of SendDTMF.
func (l *personaLine) heardKeys() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.dialed)
}

func (l *personaLine) Transfer(ctx context.Context, destination string) error {
	// The sandbox accepts every transfer: the persona is handed over.
	l.finish(telephony.End{Outcome: outcomeCompleted, Reason: "assistant-transferred-call"})
	return nil
}

// Receive runs the persona's side until the line ends.
func (l *personaLine) Receive(ctx context.Context, rx telephony.Receiver) telephony.End {
	if l.format == (audio.Format{}) {
		return l.receiveText(ctx, rx)
	}
	return l.receiveAudio(ctx, rx)
}

// --- text line ---

// TurnDone is one finished assistant turn. On a text line the persona
// answers it after its pause; on an audio line the turn comes from the
// voice pipeline and the persona hears its audio instead.
func (l *personaLine) TurnDone(_, text string, _ bool) {
	if l.format != (audio.Format{}) {
		return
	}
	say, hangup := l.persona.Reply(text)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.timers = append(l.timers, time.AfterFunc(l.think, func() {
		select {
		case l.said <- said{text: say, hangup: hangup}:
		case <-l.ended:
		}
	}))
}

func (l *personaLine) receiveText(ctx context.Context, rx telephony.Receiver) telephony.End {
	for {
		select {
		case <-ctx.Done():
			return telephony.End{}
		case <-l.ended:
			return l.end
		case d := <-l.keys:
			rx.DTMF(d)
		case s := <-l.said:
			if s.text != "" {
				rx.Text(s.text)
			}
			if s.hangup {
				l.finish(endCustomer)
				return endCustomer
			}
		}
	}
}

// --- audio line ---

// Write is what the persona hears: the assistant's audio.
func (l *personaLine) Write(frame []byte) error {
	l.mu.Lock()
	st := l.stream
	if st != nil {
		l.heard = true
	}
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return errors.New("sandbox: the line has ended")
	}
	if st != nil {
		l.lastWrite.Store(time.Now().UnixNano())
		if err := st.Write(audio.MulawDecode(nil, frame)); err != nil {
			// A deaf persona is still on the line.
			l.log.Debug("sandbox persona's ear", "err", err)
		}
	}
	return nil
}

// AudioDone and AudioClear: the assistant stopped talking; the ear's
// final follows.
func (l *personaLine) AudioDone(string)         { l.endOfTurn() }
func (l *personaLine) AudioClear(string, int64) { l.endOfTurn() }

func (l *personaLine) endOfTurn() {
	l.mu.Lock()
	st, heard := l.stream, l.heard
	l.heard = false
	l.mu.Unlock()
	if st != nil && heard {
		if err := st.Finish(); err != nil {
			l.log.Debug("sandbox persona's ear", "err", err)
		}
		select {
		case l.turnEnded <- struct{}{}:
		default:
		}
	}
}

// DefaultPatience is how long the persona waits, after the assistant's
// turn and with the line quiet, for its recognizer's final before it says
// what a person says into a silent line (Persona.Unheard). It is inside
// an assistant's silence timeout (30 s by default), and far longer than
// the recognizer's final takes even beside a CPU hog (8 s was not: the
// recognizer's final came later than that, and the nudge talked over the
// assistant's next turn).
const DefaultPatience = 20 * time.Second

func (l *personaLine) receiveAudio(ctx context.Context, rx telephony.Receiver) telephony.End {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ear, err := l.ear.Start(ctx, speech.TranscribeOptions{SampleRate: PhoneLine.SampleRate, Language: "en-US"})
	if err != nil {
		l.log.Warn("sandbox persona cannot hear", "err", err)
		e := telephony.End{Outcome: outcomeFailed, Reason: "provider-failed"}
		l.finish(e)
		return e
	}
	defer ear.Close()
	l.mu.Lock()
	l.stream = ear
	l.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { l.listen(ctx, ear) })
	speechQ := make(chan []byte, 4)
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-l.said:
				l.mu.Lock()
				l.bye = l.bye || s.hangup
				l.mu.Unlock()
				select {
				case speechQ <- s.ulaw:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	hungUp := false
	audio.RealTime(ctx, speechQ, silenceMulaw, func(f []byte) error {
		select {
		case <-l.ended:
			return errors.New("ended")
		default:
		}
		for pressed := true; pressed; {
			select {
			case d := <-l.keys:
				rx.DTMF(d)
			default:
				pressed = false
			}
		}
		rx.Audio(f)
		return nil
	}, func(idle int) {
		l.mu.Lock()
		hang := l.bye && idle == 25
		l.mu.Unlock()
		if hang {
			hungUp = true
			l.finish(endCustomer)
		}
	})
	if hungUp {
		return endCustomer
	}
	if ctx.Err() != nil {
		select {
		case <-l.ended:
		default:
			return telephony.End{}
		}
	}
	<-l.ended
	return l.end
}

// listen turns what the persona heard into its answers. When the
// assistant finished a turn and the line stays quiet for its patience without
// a final to answer (or with an empty one), the persona says its Unheard
// line, so that a recognizer starved on a loaded machine slows the call
// down instead of leaving both sides silent until the assistant's
// silence timeout.
func (l *personaLine) listen(ctx context.Context, ear speech.TranscribeStream) {
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	defer wait.Stop()
	for {
		var say string
		var hangup bool
		select {
		case <-ctx.Done():
			return
		case <-l.turnEnded:
			wait.Reset(l.patience)
			continue
		case <-wait.C:
			if quiet := time.Since(time.Unix(0, l.lastWrite.Load())); quiet < l.patience {
				wait.Reset(l.patience - quiet) // the assistant spoke meanwhile
				continue
			}
			say, hangup = l.persona.Unheard()
			l.log.Debug("sandbox persona heard nothing in time", "says", say, "hangup", hangup)
		case tr, ok := <-ear.Results():
			if !ok {
				return
			}
			if !tr.Final {
				continue
			}
			say, hangup = l.persona.Hear(tr.Text)
			l.log.Debug("sandbox persona", "heard", tr.Text, "says", say, "hangup", hangup)
			if strings.TrimSpace(tr.Text) != "" {
				wait.Stop() // answered (or chose to listen): no nudge for this turn
			}
		}
		if say == "" && hangup {
			l.finish(endCustomer)
			return
		}
		if say == "" {
			continue
		}
		wait.Stop()
		if !l.speak(ctx, say, hangup) {
			return
		}
	}
}

// speak synthesizes say into the line's queue; false when the call is over.
func (l *personaLine) speak(ctx context.Context, say string, hangup bool) bool {
	var ulaw []byte
	err := l.mouth.Synthesize(ctx, say, speech.VoiceOptions{SampleRate: PhoneLine.SampleRate}, func(pcm []int16) error {
		ulaw = audio.MulawEncode(ulaw, pcm)
		return nil
	})
	if err != nil {
		l.log.Warn("sandbox persona could not speak", "err", err)
		return true
	}
	select {
	case l.said <- said{ulaw: ulaw, hangup: hangup}:
		return true
	case <-ctx.Done():
		return false
	}
}

// silenceMulaw is 20 ms of μ-law silence.
var silenceMulaw = []byte(strings.Repeat("\xff", 160))
