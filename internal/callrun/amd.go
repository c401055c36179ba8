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

// amdWatch is an outbound call's answering-machine watcher: it watches the
// first seconds of the caller audio (and what the recognizer hears in it:
// voicemail phrases) for an answering machine (internal/audio/amd) when the
// assistant asks for it (voicemail.detect). It never blocks the line: its
// verdict becomes a conversation input. A machine with action hangup ends
// the call voicemail / customer-voicemail; with leaveMessage the assistant
// says the message at the detector's cue (the beep's end, or the silence
// after the greeting), and the call then ends the same way. A person, or no
// verdict by the detector's deadline, leaves the call alone. The first
// message is not held back while it listens: a person hears no added delay.
type amdWatch struct {
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
	// found is set once a machine is found (leaveMessage waits for the cue).
	found bool
}

// newAMDWatch returns an answering-machine watcher for a call on a line of
// format f, or nil when the call is not to be watched.
func newAMDWatch(c call.Call, a assistant.Assistant, f audio.Format, send func(conversation.Input) bool, log *slog.Logger) *amdWatch {
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
	return &amdWatch{dec: audio.NewDecoder(f), vad: v, det: det, vm: a.Voicemail, send: send, quiet: func() {}, log: log}
}

// audio takes caller audio in the line's format.
func (w *amdWatch) audio(b []byte) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	frames, err := w.dec.Write(b)
	if err != nil {
		w.done = true
		return
	}
	for _, f := range frames {
		speech, err := w.vad.IsSpeech(f)
		if err != nil {
			speech = false
		}
		d, err := w.det.Frame(f, speech)
		if err != nil {
			w.done = true
			return
		}
		if w.act(d) {
			return
		}
	}
}

// transcript takes what the recognizer heard the callee say (partial or
// final): a voicemail phrase ("leave a message") is a machine.
func (w *amdWatch) transcript(text string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.act(w.det.Transcript(text))
}

// act carries out decision d; it reports whether watching is over.
func (w *amdWatch) act(d amd.Decision) bool {
	if !d.Final {
		return false
	}
	if d.Result != amd.Machine {
		w.log.Info("voicemail detection: a person answered", "result", d.Result.String(), "reason", d.Reason.String(), "after_ms", d.At.Milliseconds())
		w.done = true
		return true
	}
	if !w.found {
		w.found = true
		w.log.Info("voicemail detection: a machine answered", "reason", d.Reason.String(), "phrase", d.Phrase, "after_ms", d.At.Milliseconds(), "action", w.vm.Action)
	}
	if !w.vm.LeavesMessage() {
		w.done = true
		w.send(conversation.Input{Kind: conversation.Hangup, Outcome: call.Voicemail, Reason: call.ReasonCustomerVoicemail})
		return true
	}
	if _, afterBeep, ok := w.det.Cue(); ok {
		w.done = true
		w.log.Info("voicemail detection: leaving the message", "after_beep", afterBeep)
		w.quiet() // a machine records: its greeting's late transcript must not cut the message
		w.send(conversation.Input{Kind: conversation.Say, Text: w.vm.Message, Cut: true, Outcome: call.Voicemail, Reason: call.ReasonCustomerVoicemail})
		return true
	}
	return false
}
