package callrun

import (
	"log/slog"
	"sync"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/audio/amd"
	"switchboard/internal/audio/vad"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
)

// machine watches the first seconds of an outbound call's caller audio
// (and what the recognizer hears in it: voicemail phrases) for an
// answering machine (internal/audio/amd) when the assistant asks for it
// (voicemail.detect). It never blocks the line: its verdict becomes a
// conversation input. A machine
// with action hangup ends the call voicemail / customer-voicemail; with
// leaveMessage the assistant says the message at the detector's cue (the
// beep's end, or the silence after the greeting), and the call then ends
// the same way. A person, or no verdict by the detector's deadline, leaves
// the call alone. The first message is not held back while it listens: a
// person hears no added delay.
type machine struct {
	// mu: audio comes from the line's Receive goroutine, transcripts from
	// the pipeline's.
	mu   sync.Mutex
	dec  *audio.Decoder
	vad  vad.Detector
	det  *amd.Detector
	vm   assistant.Voicemail
	send func(conversation.Input) bool
	// quiet turns the caller's barge-in off before the message is left
	// (the pipeline's DisableBargeIn, set before any audio comes).
	quiet func()
	log   *slog.Logger
	done  bool
	// machine is set once a machine is found (leaveMessage waits for the cue).
	machine bool
}

// newMachine returns a watcher for a call on a line of format f, or nil
// when the call is not to be watched.
func newMachine(c call.Call, a assistant.Assistant, f audio.Format, send func(conversation.Input) bool, log *slog.Logger) *machine {
	if c.Type != call.Phone || c.Direction != call.Outbound || !a.Voicemail.Detect {
		return nil
	}
	v, err := vad.NewWebRTC(2)
	if err != nil {
		log.Warn("voicemail detection is off for this call", "err", err)
		return nil
	}
	det, err := amd.New(amd.Config{SampleRate: audio.PipelineRate})
	if err != nil {
		log.Warn("voicemail detection is off for this call", "err", err)
		return nil
	}
	return &machine{dec: audio.NewDecoder(f), vad: v, det: det, vm: a.Voicemail, send: send, quiet: func() {}, log: log}
}

// audio takes caller audio in the line's format.
func (m *machine) audio(b []byte) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return
	}
	frames, err := m.dec.Write(b)
	if err != nil {
		m.done = true
		return
	}
	for _, f := range frames {
		speech, err := m.vad.IsSpeech(f)
		if err != nil {
			speech = false
		}
		d, err := m.det.Frame(f, speech)
		if err != nil {
			m.done = true
			return
		}
		if m.act(d) {
			return
		}
	}
}

// transcript takes what the recognizer heard the callee say (partial or
// final): a voicemail phrase ("leave a message") is a machine.
func (m *machine) transcript(text string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.done {
		return
	}
	m.act(m.det.Transcript(text))
}

// act carries out decision d; it reports whether watching is over.
func (m *machine) act(d amd.Decision) bool {
	if !d.Final {
		return false
	}
	if d.Result != amd.Machine {
		m.log.Info("voicemail detection: a person answered", "result", d.Result.String(), "reason", d.Reason.String(), "after_ms", d.At.Milliseconds())
		m.done = true
		return true
	}
	if !m.machine {
		m.machine = true
		m.log.Info("voicemail detection: a machine answered", "reason", d.Reason.String(), "phrase", d.Phrase, "after_ms", d.At.Milliseconds(), "action", m.vm.Action)
	}
	if !m.vm.LeavesMessage() {
		m.done = true
		m.send(conversation.Input{Kind: conversation.Hangup, Outcome: call.Voicemail, Reason: call.ReasonCustomerVoicemail})
		return true
	}
	if _, afterBeep, ok := m.det.Cue(); ok {
		m.done = true
		m.log.Info("voicemail detection: leaving the message", "after_beep", afterBeep)
		m.quiet() // a machine records: its greeting's late transcript must not cut the message
		m.send(conversation.Input{Kind: conversation.Say, Text: m.vm.Message, Cut: true, Outcome: call.Voicemail, Reason: call.ReasonCustomerVoicemail})
		return true
	}
	return false
}
