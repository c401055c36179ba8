package protocol

import (
	"errors"
	"strings"
	"testing"

	"switchboard/internal/audio"
)

// Every format Decode accepts is one the audio pipeline converts, and the
// default is the pipeline's own.
func TestAudioFormat(t *testing.T) {
	t.Parallel()
	for enc, rates := range sampleRates {
		for _, rate := range rates {
			a := Audio{Encoding: enc, SampleRate: rate}
			f := a.Format()
			if f.Encoding != audio.Encoding(enc) || f.SampleRate != rate {
				t.Errorf("%#v.Format() = %v, want %s/%d", a, f, enc, rate)
			}
			if err := f.Validate(); err != nil {
				t.Errorf("%#v.Format().Validate() = %v, want nil", a, err)
			}
		}
	}
	if got := DefaultAudio.Format(); got != audio.PipelineFormat {
		t.Errorf("DefaultAudio.Format() = %v, want the pipeline format %v", got, audio.PipelineFormat)
	}
	if PCM16 != Encoding(audio.PCM16) || Mulaw != Encoding(audio.Mulaw) {
		t.Errorf("encodings differ from internal/audio's: %q %q vs %q %q", PCM16, Mulaw, audio.PCM16, audio.Mulaw)
	}
	// Decode's default rates are the documented ones.
	for frame, want := range map[string]Audio{
		`{"type":"session.update","audio":{"encoding":"pcm16"}}`: DefaultAudio,
		`{"type":"session.update","audio":{"encoding":"mulaw"}}`: {Mulaw, 8000},
	} {
		ev, err := Decode([]byte(frame))
		if err != nil || *ev.(SessionUpdate).Audio != want {
			t.Errorf("Decode(%s) = %#v, %v; want audio %#v", frame, ev, err, want)
		}
	}
}

func TestCheckBinary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		size    int
		audioOn bool
		code    string // "" for accepted
	}{
		{0, true, ""},
		{1, true, ""}, // an odd byte waits for the next frame
		{641, true, ""},
		{MaxFrame, true, ""},
		{MaxFrame + 1, true, CodeFrameTooLarge},
		{0, false, CodeUnexpectedBinary},
		{640, false, CodeUnexpectedBinary},
		{MaxFrame + 1, false, CodeUnexpectedBinary},
	}
	for _, tt := range tests {
		err := CheckBinary(tt.size, tt.audioOn)
		if tt.code == "" {
			if err != nil {
				t.Errorf("CheckBinary(%d, %v) = %v, want nil", tt.size, tt.audioOn, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != tt.code || !pe.Fatal() || pe.Field != "" || pe.Message == "" {
			t.Errorf("CheckBinary(%d, %v) = %#v, want a fatal %s for the frame as a whole", tt.size, tt.audioOn, err, tt.code)
		}
		if ev := ErrorEventFor(err); ev.Code != tt.code || !ev.Fatal {
			t.Errorf("ErrorEventFor(CheckBinary(%d, %v)) = %#v, want fatal %s", tt.size, tt.audioOn, ev, tt.code)
		}
	}
}

func TestAudioRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err   *Error
		field string
		msg   string
	}{
		{AudioUnavailable(), "textOnly", "no speech engines"},
		{AudioStaysOn(), "textOnly", "audio stays on"},
		{AudioLocked(Audio{PCM16, 24000}), "audio", "the session keeps pcm16/24000"},
		{AudioLocked(Audio{Mulaw, 8000}), "audio", "the session keeps mulaw/8000"},
	}
	for _, tt := range tests {
		ev := ErrorEventFor(tt.err)
		if ev.Code != CodeUnsupported || ev.Fatal || ev.Field != tt.field || !strings.Contains(ev.Message, tt.msg) ||
			!strings.HasPrefix(ev.Message, TypeSessionUpdate+`: field "`+tt.field+`" `) {
			t.Errorf("ErrorEventFor(%v) = %#v, want non-fatal %s on %q naming session.update and the field, with %q",
				tt.err, ev, CodeUnsupported, tt.field, tt.msg)
		}
	}
}
