package local

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"unicode/utf8"

	"switchboard/internal/speech"
)

// Bounds on one Synthesize call: the text (a reply longer than this is a
// bug upstream, not something to read aloud for minutes) and the audio
// the engine may produce for it.
const (
	maxTextBytes    = 16 << 10
	maxSpeechSecond = 15 * 60
)

// NewSynthesizer returns the espeak-ng synthesizer. A speech_native build
// uses the linked library unless opts.Program is set; otherwise, and in the
// default build, it runs the espeak-ng program. It returns an error
// wrapping speech.ErrUnavailable, naming the Debian package to install,
// when neither is usable.
func NewSynthesizer(opts SynthesizerOptions) (speech.Synthesizer, error) {
	opts = opts.withDefaults()
	if err := checkVoice(opts.Voice); err != nil {
		return nil, fmt.Errorf("local: SynthesizerOptions.Voice: %w", err)
	}
	if opts.Program == "" {
		if s, err := newNativeSynthesizer(opts); err == nil {
			return s, nil
		} else if !errors.Is(err, errNotBuilt) {
			opts.Logger.Warn("local: espeak-ng library unusable, trying the program", "err", err)
		}
	}
	return newExecSynthesizer(opts)
}

// errNotBuilt is what the native constructors return in a build without
// the speech_native tag.
var errNotBuilt = errors.New("built without the speech_native tag")

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: local: %s", speech.ErrUnavailable, fmt.Sprintf(format, args...))
}

// lookEspeak finds the espeak-ng program.
func lookEspeak(program string) (string, error) {
	if program == "" {
		program = "espeak-ng"
	}
	path, err := exec.LookPath(program)
	if err != nil {
		return "", unavailable("no %s program (install the espeak-ng package): %v", program, err)
	}
	return path, nil
}

// voiceFor picks the espeak-ng voice for one request: the request's voice,
// else the configured default when it speaks the requested language, else
// the language tag itself (espeak-ng accepts "fr-FR", "de", ...).
func voiceFor(vo speech.VoiceOptions, def string) (string, error) {
	v := vo.Voice
	if v == "" {
		v = def
		if vo.Language != "" && !sameLanguage(vo.Language, def) {
			v = strings.ToLower(vo.Language)
		}
	}
	if err := checkVoice(v); err != nil {
		return "", fmt.Errorf("local: voice: %w", err)
	}
	return v, nil
}

// sameLanguage compares the primary subtags of a BCP 47 tag and an
// espeak-ng voice name ("en-US" and "en-us+f3" are both English).
func sameLanguage(tag, voice string) bool {
	primary := func(s string) string {
		s = strings.ToLower(s)
		if i := strings.IndexAny(s, "-_+"); i >= 0 {
			s = s[:i]
		}
		return s
	}
	return primary(tag) == primary(voice)
}

// checkVoice accepts espeak-ng voice names ("en-us", "en-gb-x-rp",
// "en-us+f3") and nothing that could be read as another option or a path.
func checkVoice(v string) error {
	if v == "" || len(v) > 64 || v[0] == '-' {
		return fmt.Errorf("%q is not an espeak-ng voice name", v)
	}
	for _, c := range v {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '+'
		if !ok {
			return fmt.Errorf("%q is not an espeak-ng voice name (letters, digits, - _ + only)", v)
		}
	}
	return nil
}

// checkRequest validates what every Synthesize call needs and returns the
// text to speak ("" when there is nothing to say).
func checkRequest(text string, vo speech.VoiceOptions) (string, error) {
	if vo.SampleRate < 4000 || vo.SampleRate > 192000 {
		return "", fmt.Errorf("local: VoiceOptions.SampleRate is %d, want 4000..192000", vo.SampleRate)
	}
	if len(text) > maxTextBytes {
		return "", fmt.Errorf("local: text of %d bytes, want at most %d", len(text), maxTextBytes)
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	return strings.TrimSpace(text), nil
}

// Piece sizes for splitSentences, in bytes.
const (
	minPiece = 200
	maxPiece = 1000
)

// splitSentences cuts text into pieces of at least minPiece bytes ending
// at a sentence end (or at a space past maxPiece), so that a long reply
// is synthesized, and starts playing, a bit at a time. Short texts stay
// whole, which keeps "Dr. Smith" in one piece and one intonation.
func splitSentences(text string) []string {
	var pieces []string
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		n := i + 1 - start
		end := c == '\n'
		if (c == '.' || c == '!' || c == '?' || c == ';') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n') {
			end = true
		}
		if (end && n >= minPiece) || (c == ' ' && n >= maxPiece) {
			if p := strings.TrimSpace(text[start : i+1]); p != "" {
				pieces = append(pieces, p)
			}
			start = i + 1
		}
	}
	if p := strings.TrimSpace(text[start:]); p != "" {
		pieces = append(pieces, p)
	}
	return pieces
}
