package assistant

import (
	"slices"
	"strings"
	"testing"

	"switchboard/internal/apperr"
)

// cloud is a server with every speech provider configured.
var cloud = Providers{
	Model:       []string{"flow"},
	Voice:       VoiceProviders(),
	Transcriber: TranscriberProviders(),
}

func valid(p Providers) Assistant {
	a := Defaults(p)
	a.Name = "Receptionist"
	return a
}

// TestValidateSpeech: every bad voice, transcriber, endpointing and barge-in
// setting is reported on its own field, with what was expected.
func TestValidateSpeech(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      Providers
		change func(a *Assistant)
		// want maps each field expected in error to a part of its message.
		want map[string]string
	}{
		{"defaults", DefaultProviders(), func(a *Assistant) {}, nil},
		{"every provider with a fallback", cloud, func(a *Assistant) {
			a.Voice = Voice{Provider: "elevenlabs", VoiceID: "Rachel", Fallback: &VoiceFallback{Provider: "deepgram"}}
			a.Transcriber = Transcriber{Provider: "openai", Fallback: &TranscriberFallback{Provider: "local"}}
		}, nil},
		{"tuned endpointing and barge-in", DefaultProviders(), func(a *Assistant) {
			a.Endpointing = Endpointing{SilenceMs: 700, MinSpeechMs: 200, MaxWaitMs: 4000, FastSilenceMs: 300}
			a.BargeIn = BargeIn{Disabled: true, MinSpeechMs: 500}
		}, nil},
		{"unknown voice", cloud, func(a *Assistant) { a.Voice.Provider = "hal" },
			map[string]string{"voice.provider": `unknown provider "hal"; known providers: local, openai, elevenlabs, deepgram`}},
		{"a voice-only name as transcriber", cloud, func(a *Assistant) { a.Transcriber.Provider = "elevenlabs" },
			map[string]string{"transcriber.provider": `unknown provider "elevenlabs"; known providers: local, deepgram, openai`}},
		{"empty provider", cloud, func(a *Assistant) { a.Voice.Provider = "" },
			map[string]string{"voice.provider": `unknown provider ""`}},
		{"known but not configured", DefaultProviders(), func(a *Assistant) {
			a.Voice.Provider, a.Transcriber.Provider = "deepgram", "openai"
		}, map[string]string{
			"voice.provider":       `provider "deepgram" is not configured on this server (it has: local)`,
			"transcriber.provider": `provider "openai" is not configured on this server (it has: local)`,
		}},
		{"fallbacks equal to the primaries", cloud, func(a *Assistant) {
			a.Voice = Voice{Provider: "openai", Fallback: &VoiceFallback{Provider: "openai", VoiceID: "nova"}}
			a.Transcriber = Transcriber{Provider: "local", Fallback: &TranscriberFallback{Provider: "local"}}
		}, map[string]string{
			"voice.fallback.provider":       `must differ from voice.provider ("openai")`,
			"transcriber.fallback.provider": `must differ from transcriber.provider ("local")`,
		}},
		{"fallbacks unknown or not configured", DefaultProviders(), func(a *Assistant) {
			a.Voice.Fallback = &VoiceFallback{Provider: "polly"}
			a.Transcriber.Fallback = &TranscriberFallback{Provider: "deepgram"}
		}, map[string]string{
			"voice.fallback.provider":       `unknown provider "polly"; known providers:`,
			"transcriber.fallback.provider": `provider "deepgram" is not configured on this server`,
		}},
		{"endpointing out of range", DefaultProviders(), func(a *Assistant) {
			a.Endpointing = Endpointing{SilenceMs: -1, MinSpeechMs: 5000, MaxWaitMs: 70000, FastSilenceMs: -5}
		}, map[string]string{
			"endpointing.silenceMs":     "must be from 1 to 60000 (0 for the default), got -1",
			"endpointing.minSpeechMs":   "must be from 1 to 2000 (0 for the default), got 5000",
			"endpointing.maxWaitMs":     "must be from 1 to 60000 (0 for the default), got 70000",
			"endpointing.fastSilenceMs": "must be from 1 to 60000 (0 for the default), got -5",
		}},
		{"silence longer than the maximum wait", DefaultProviders(), func(a *Assistant) {
			a.Endpointing = Endpointing{SilenceMs: 3000} // default maxWaitMs is 2500
		}, map[string]string{"endpointing.silenceMs": "must not exceed maxWaitMs (2500), got 3000"}},
		{"fast silence longer than silence", DefaultProviders(), func(a *Assistant) {
			a.Endpointing = Endpointing{SilenceMs: 300, FastSilenceMs: 400}
		}, map[string]string{"endpointing.fastSilenceMs": "must not exceed silenceMs (300), got 400"}},
		{"barge-in out of range", DefaultProviders(), func(a *Assistant) { a.BargeIn.MinSpeechMs = 2001 },
			map[string]string{"bargeIn.minSpeechMs": "must be from 1 to 2000 (0 for the default), got 2001"}},
		{"barge-in disabled is still checked", DefaultProviders(), func(a *Assistant) { a.BargeIn = BargeIn{Disabled: true, MinSpeechMs: -1} },
			map[string]string{"bargeIn.minSpeechMs": "got -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := valid(tc.p)
			tc.change(&a)
			var f apperr.Fields
			a.Validate(tc.p, nil, &f)
			var got []string
			for _, e := range f {
				got = append(got, e.Field)
				want, ok := tc.want[e.Field]
				if !ok {
					t.Errorf("Validate(%s): unexpected error on %s: %s", tc.name, e.Field, e.Message)
				} else if !strings.Contains(e.Message, want) {
					t.Errorf("Validate(%s): %s message = %q; want it to contain %q", tc.name, e.Field, e.Message, want)
				}
			}
			for field := range tc.want {
				if !slices.Contains(got, field) {
					t.Errorf("Validate(%s): no error on %s; got errors on %v", tc.name, field, got)
				}
			}
		})
	}
}

// TestDefaultsSpeech: a new assistant speaks and listens with the first
// configured provider (local on every server), without fallbacks.
func TestDefaultsSpeech(t *testing.T) {
	a := Defaults(cloud)
	if a.Voice.Provider != "local" || a.Transcriber.Provider != "local" || a.Voice.Fallback != nil || a.Transcriber.Fallback != nil {
		t.Errorf("Defaults(cloud) voice %+v, transcriber %+v; want local providers without fallbacks", a.Voice, a.Transcriber)
	}
	if a.Endpointing != (Endpointing{}) || a.BargeIn != (BargeIn{}) {
		t.Errorf("Defaults(cloud) endpointing %+v, bargeIn %+v; want zero (the engine defaults)", a.Endpointing, a.BargeIn)
	}
}
