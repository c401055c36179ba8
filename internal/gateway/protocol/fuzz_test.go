package protocol

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`{"type":"session.update","textOnly":true,"audio":{"encoding":"pcm16","sampleRate":24000},"metadata":{"a":[1,{"b":null}]}}`,
	`{"type":"session.update","audio":{"encoding":"mulaw"}}`,
	`{"type":"user.text","text":"Book me Tuesday at 3 pm"}`,
	`{"type":"user.text","text":"\u00e9\ud83d\ude00 \u2028"}`,
	`{"type":"user.text","text":"\ud800"}`,
	`{"type":"hangup","reason":"x"}`,
	`{"type":"ping","id":"p1"}`,
	`{"type":"playback.mark","turnId":"turn_1","playedMs":1200}`,
	`{"type":"playback.mark","turnId":"t","playedMs":-0}`,
	`{"type":"playback.mark","turnId":"t","playedMs":9223372036854775808}`,
	`{"type":"session.update","metadata":{"a":1,"a":2}}`,
	`{"type":null}`, `{}`, `[]`, `null`, ``, `{"type":"ping"} {}`, "\xff", `{"a":` + strings.Repeat("[", 100),
	`{"type":"session.started","seq":1,"at":"2026-11-21T09:30:00.125Z","callId":"c","assistantId":"a","protocol":"v1"}`,
	`{"type":"pong","seq":1,"at":"0001-01-01T00:00:00+01:00"}`,
	`{"type":"transcript","seq":8,"at":"2026-11-19T17:20:05.390Z","role":"user","text":"I'd like to","final":false}`,
	`{"type":"transcript","seq":8,"at":"2026-11-19T17:20:05.390Z","role":"user","text":"","turnId":null,"final":false}`,
	`{"type":"transcript","seq":8,"at":"2026-11-19T17:20:05.390Z","role":"user","text":"x","final":true}`,
	`{"type":"speech.started","seq":7,"at":"2026-11-19T17:20:04.870Z"}`,
	`{"type":"speech.stopped","seq":10,"at":"2026-11-19T17:20:07.150Z","extra":[]}`,
	`{"type":"assistant.audio.start","seq":3,"at":"2026-11-19T17:20:00.310Z","turnId":"turn_1"}`,
	`{"type":"assistant.audio.done","seq":4,"at":"2026-11-19T17:20:03.430Z","turnId":"turn_1"}`,
	`{"type":"assistant.audio.clear","seq":17,"at":"2026-11-19T17:20:09.571Z","turnId":"turn_3","playedMs":1860}`,
	`{"type":"assistant.audio.clear","seq":17,"at":"2026-11-19T17:20:09.571Z","turnId":"turn_3","playedMs":-20}`,
	`{"type":"assistant.audio.pause","seq":16,"at":"2026-11-19T17:20:09.520Z","turnId":"turn_3","playedMs":1820}`,
	`{"type":"assistant.audio.resume","seq":18,"at":"2026-11-19T17:20:10.920Z","turnId":"turn_3","playedMs":1820}`,
}

// FuzzDecode feeds arbitrary frames to Decode. It must never panic; a
// rejection is an *Error with a known code that names its field; an accepted
// event re-encodes with EncodeClient and decodes back to itself.
// `go test -run '^$' -fuzz FuzzDecode ./internal/gateway/protocol/`.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	codes := []string{CodeInvalidJSON, CodeUnknownType, CodeInvalidField, CodeFrameTooLarge}
	f.Fuzz(func(t *testing.T, frame []byte) {
		ev, err := Decode(frame)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || !slices.Contains(codes, pe.Code) || pe.Message == "" {
				t.Fatalf("Decode(%q) error = %#v, want an *Error with one of %v and a message", frame, err, codes)
			}
			if pe.Field != "" && !strings.Contains(pe.Message, `"`+pe.Field+`"`) {
				t.Fatalf("Decode(%q) error %q does not name its field %q", frame, pe.Message, pe.Field)
			}
			if ev != nil {
				t.Fatalf("Decode(%q) = %#v with error %v, want nil", frame, ev, err)
			}
			return
		}
		if !slices.Contains(ClientTypes, ev.Type()) {
			t.Fatalf("Decode(%q) = %#v of type %q, not a client type", frame, ev, ev.Type())
		}
		b, err := EncodeClient(ev)
		if err != nil {
			t.Fatalf("EncodeClient(Decode(%q) = %#v) error = %v", frame, ev, err)
		}
		again, err := Decode(b)
		if err != nil || !reflect.DeepEqual(again, ev) {
			t.Fatalf("Decode(EncodeClient(%#v) = %s) = %#v, %v; want the same event", ev, b, again, err)
		}
	})
}

// FuzzDecodeServer checks DecodeServer the same way: no panic, and an
// accepted event encodes and decodes again.
func FuzzDecodeServer(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		ev, err := DecodeServer(frame)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code == "" || pe.Message == "" {
				t.Fatalf("DecodeServer(%q) error = %#v, want an *Error", frame, err)
			}
			return
		}
		b, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode(DecodeServer(%q) = %#v) error = %v", frame, ev, err)
		}
		if _, err := DecodeServer(b); err != nil {
			t.Fatalf("DecodeServer(Encode(%#v) = %s) error = %v", ev, b, err)
		}
	})
}
