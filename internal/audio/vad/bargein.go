package vad

import (
	"strings"
	"unicode"

	"switchboard/internal/apperr"
)

// DefaultBargeInMs is BargeIn.MinSpeechMs when it is zero.
const DefaultBargeInMs = 300

// BargeIn decides when the caller talking over the assistant is an
// interruption. Feed Observe one decision per 20 ms frame while the
// assistant's audio is playing, and Reset it when playback starts. When
// Observe decides, the pipeline should stop playback at once; if the
// transcript of what the caller said then turns out to be only a
// backchannel (IsBackchannel), the assistant should carry on instead of
// yielding the turn — the false-interruption complaint most voice agents get.
type BargeIn struct {
	// MinSpeechMs of continuous caller speech is an interruption. Default
	// 300; rounded up to whole frames.
	MinSpeechMs int

	run int // voiced frames in a row, capped at the threshold
}

// Validate reports a bad MinSpeechMs (zero means the default).
func (b *BargeIn) Validate() error {
	if b.MinSpeechMs < 0 || b.MinSpeechMs > maxMinSpeechMs {
		return apperr.Invalidf("minSpeechMs", "must be from 1 to %d (0 for the default), got %d", maxMinSpeechMs, b.MinSpeechMs)
	}
	return nil
}

// Observe counts one frame. It returns true once per run of speech: at the
// frame that completes MinSpeechMs of it. Any unvoiced frame starts over.
func (b *BargeIn) Observe(speech bool) (decided bool) {
	if !speech {
		b.run = 0
		return false
	}
	ms := b.MinSpeechMs
	if ms <= 0 || ms > maxMinSpeechMs {
		ms = DefaultBargeInMs
	}
	need := framesFor(ms)
	if b.run >= need {
		return false
	}
	b.run++
	return b.run == need
}

// Reset forgets the current run, for a new stretch of assistant audio.
func (b *BargeIn) Reset() { b.run = 0 }

// maxBackchannelLen bounds the work on a transcript: backchannels are short,
// so anything longer is a real utterance.
const maxBackchannelLen = 120

// backchannels are the tokens (and two-token phrases, space-joined) that
// only acknowledge: the listed words plus the spellings STT engines use for
// them ("uh-huh", "uh huh", "uhhuh"; "mm-hmm", "mhm"; "OK", "O.K.").
// Hesitations ("uh", "um", "hmm") and "huh?" are left out: they usually
// start a real turn or ask for a repeat.
var backchannels = map[string]bool{
	"yeah": true, "yes": true, "okay": true, "ok": true, "right": true, "sure": true,
	"uhhuh": true, "uh huh": true,
	"mmhmm": true, "mhm": true, "mmhm": true, "mm hmm": true, "mm hm": true, "m hm": true,
	"o k":    true,
	"got it": true, "i see": true,
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
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		return false
	}
	for i := 0; i < len(words); {
		switch {
		case i+1 < len(words) && backchannels[words[i]+" "+words[i+1]]:
			i += 2
		case backchannels[words[i]]:
			i++
		default:
			return false
		}
	}
	return true
}
