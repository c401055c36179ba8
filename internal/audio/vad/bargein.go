package vad

import (
	"strings"
	"unicode"

	"switchboard/internal/apperr"
)

// DefaultBargeInMs is BargeIn.MinSpeechMs when it is zero.
const DefaultBargeInMs = 300

// BargeInGapMs is the longest unvoiced stretch inside one run of caller
// speech: a plosive's closure, the pause between two words, a frame the
// detector missed. A longer one ends the run. The bridged frames count as
// part of the run once speech resumes (the run is the span from its first
// voiced frame to its latest), but a run never ends on them: a 200 ms
// "yeah" followed by silence stays a 200 ms run.
const BargeInGapMs = 100

// BargeIn decides when the caller talking over the assistant is an
// interruption, in two steps, as a person would:
//
//  1. Speech: feed Observe one decision per 20 ms frame while the
//     assistant's audio is playing (Reset it when playback starts). Once the
//     caller has spoken for MinSpeechMs (Decided), the pipeline stops the
//     assistant's audio at once: it pauses, keeping its place.
//  2. Words: Judge the transcript of what the caller said. An Interruption
//     cuts the assistant's turn; a Backchannel ("uh-huh", "yeah") or
//     NoWords (noise, a cough, "um") lets it resume where it paused — the
//     false-interruption complaint most voice agents get. A partial
//     transcript cuts early only when it is already unmistakable
//     (InterruptsEarly).
type BargeIn struct {
	// MinSpeechMs of caller speech is enough to stop the assistant's
	// audio. Default 300; rounded up to whole frames.
	MinSpeechMs int

	run     int  // frames from the run's first voiced frame to its latest, capped at the threshold
	gap     int  // unvoiced frames since the run's latest voiced frame
	decided bool // the run reached the threshold
}

// Validate reports a bad MinSpeechMs (zero means the default).
func (b *BargeIn) Validate() error {
	if b.MinSpeechMs < 0 || b.MinSpeechMs > maxMinSpeechMs {
		return apperr.Invalidf("minSpeechMs", "must be from 1 to %d (0 for the default), got %d", maxMinSpeechMs, b.MinSpeechMs)
	}
	return nil
}

// Observe counts one frame. It returns true once per run of speech: at the
// voiced frame with which the run spans MinSpeechMs. Unvoiced stretches up
// to BargeInGapMs inside the run do not start it over; a longer one does.
func (b *BargeIn) Observe(speech bool) (decided bool) {
	if !speech {
		if b.run > 0 {
			if b.gap++; b.gap > framesFor(BargeInGapMs) {
				b.Reset()
			}
		}
		return false
	}
	ms := b.MinSpeechMs
	if ms <= 0 || ms > maxMinSpeechMs {
		ms = DefaultBargeInMs
	}
	need := framesFor(ms)
	b.run = min(b.run+b.gap+1, need)
	b.gap = 0
	if b.decided || b.run < need {
		return false
	}
	b.decided = true
	return true
}

// Decided reports whether the current run of speech has reached
// MinSpeechMs: true from the frame Observe decided on until the run ends
// (an unvoiced stretch longer than BargeInGapMs) or Reset.
func (b *BargeIn) Decided() bool { return b.decided }

// Reset forgets the current run, for a new stretch of assistant audio or
// after the assistant resumed.
func (b *BargeIn) Reset() { b.run, b.gap, b.decided = 0, 0, false }

// Verdict is what a transcript of the caller's speech over the assistant
// amounts to.
type Verdict uint8

// The verdicts of Judge.
const (
	// NoWords: nothing, or only hesitation sounds ("uh", "um", "oh",
	// "hmm"): noise, a cough, a breath the recognizer heard as a filler.
	// The assistant carries on.
	NoWords Verdict = iota
	// Backchannel: only acknowledgements ("uh-huh", "yeah", "okay, got
	// it"), perhaps with hesitations. The assistant carries on.
	Backchannel
	// Interruption: words of a turn. The assistant yields.
	Interruption
)

// String names the verdict for logs.
func (v Verdict) String() string {
	switch v {
	case NoWords:
		return "no words"
	case Backchannel:
		return "backchannel"
	case Interruption:
		return "interruption"
	}
	return "unknown"
}

// maxBackchannelLen bounds the work on a transcript: backchannels are short,
// so anything longer is a real utterance.
const maxBackchannelLen = 120

// backchannels are the tokens (and two-token phrases, space-joined) that
// only acknowledge: the listed words plus the spellings STT engines use for
// them ("uh-huh", "uh huh", "uhhuh"; "mm-hmm", "mhm"; "OK", "O.K."; "aha").
// Hesitations ("uh", "um", "hmm") and "huh?" are left out: they usually
// start a real turn or ask for a repeat.
var backchannels = map[string]bool{
	"yeah": true, "yes": true, "okay": true, "ok": true, "right": true, "sure": true,
	"uhhuh": true, "uh huh": true, "aha": true, "ah ha": true,
	"mmhmm": true, "mhm": true, "mmhm": true, "mm hmm": true, "mm hm": true, "m hm": true,
	"o k":    true,
	"got it": true, "i see": true,
}

// hesitations are sounds that carry no words: alone they are no turn
// (Judge), and they do not count as words of an interruption.
var hesitations = map[string]bool{
	"uh": true, "um": true, "uhm": true, "er": true, "erm": true, "ah": true, "oh": true, "eh": true,
	"hmm": true, "hm": true, "mm": true, "mmm": true,
}

// words splits a transcript into lower-case words, ignoring punctuation.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// scan walks a transcript's words, reporting how many are backchannels,
// hesitations and other words (a two-word backchannel counts once).
func scan(text string) (back, hes, other int) {
	w := words(text)
	for i := 0; i < len(w); {
		switch {
		case i+1 < len(w) && backchannels[w[i]+" "+w[i+1]]:
			back++
			i += 2
		case backchannels[w[i]]:
			back++
			i++
		case hesitations[w[i]]:
			hes++
			i++
		default:
			other++
			i++
		}
	}
	return back, hes, other
}

// IsBackchannel reports whether text (a transcript of what the caller said
// over the assistant) is nothing but backchannels — "uh-huh", "mm-hmm",
// "yeah", "yes", "okay", "ok", "right", "sure", "got it", "i see", alone or
// combined ("Okay, got it.", "yeah yeah") — ignoring case and punctuation.
// Empty text is not a backchannel.
func (b *BargeIn) IsBackchannel(text string) bool {
	if len(text) > maxBackchannelLen {
		return false
	}
	back, hes, other := scan(text)
	return back > 0 && hes == 0 && other == 0
}

// Judge classifies the final transcript of what the caller said over the
// assistant: NoWords when it is empty or only hesitations, Backchannel
// when its words are acknowledgements (hesitations allowed: "um, yeah"),
// Interruption otherwise (and for anything longer than a backchannel can
// be).
func (b *BargeIn) Judge(text string) Verdict {
	if len(text) > maxBackchannelLen {
		return Interruption
	}
	back, _, other := scan(text)
	switch {
	case other > 0:
		return Interruption
	case back > 0:
		return Backchannel
	}
	return NoWords
}

// earlyWords is how many words, neither acknowledgements nor hesitations,
// a partial transcript needs to cut the assistant before the caller
// finishes: recognizers' first guesses at a short sound are often one
// wrong word ("uh-huh" heard as "you"), rarely two.
const earlyWords = 2

// InterruptsEarly reports whether a partial transcript, while the
// assistant is paused for the caller's speech, is already an
// interruption: at least two words that are neither acknowledgements nor
// hesitations ("wait stop", "I have a question"). Anything less waits for
// the final transcript, which Judge decides.
func (b *BargeIn) InterruptsEarly(partial string) bool {
	if len(partial) > maxBackchannelLen {
		return true
	}
	_, _, other := scan(partial)
	return other >= earlyWords
}
