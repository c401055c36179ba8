package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		want  ClientEvent
	}{
		{"session.update empty", `{"type":"session.update"}`, SessionUpdate{}},
		{"session.update textOnly", `{"type":"session.update","textOnly":true}`, SessionUpdate{TextOnly: ptr(true)}},
		{"session.update textOnly false", `{"type":"session.update","textOnly":false}`, SessionUpdate{TextOnly: ptr(false)}},
		{"session.update audio pcm16 default rate", `{"type":"session.update","audio":{"encoding":"pcm16"}}`,
			SessionUpdate{Audio: &Audio{PCM16, 16000}}},
		{"session.update audio pcm16 48k", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":48000}}`,
			SessionUpdate{Audio: &Audio{PCM16, 48000}}},
		{"session.update audio pcm16 8k", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":8000}}`,
			SessionUpdate{Audio: &Audio{PCM16, 8000}}},
		{"session.update audio mulaw default rate", `{"type":"session.update","audio":{"encoding":"mulaw"}}`,
			SessionUpdate{Audio: &Audio{Mulaw, 8000}}},
		{"session.update metadata compacted", `{"type":"session.update","metadata": { "page" : "/book", "n": [1, 2.5e3, null] } }`,
			SessionUpdate{Metadata: json.RawMessage(`{"page":"/book","n":[1,2.5e3,null]}`)}},
		{"session.update all", `{"type":"session.update","textOnly":false,"audio":{"encoding":"mulaw","sampleRate":8000},"metadata":{}}`,
			SessionUpdate{TextOnly: ptr(false), Audio: &Audio{Mulaw, 8000}, Metadata: json.RawMessage(`{}`)}},
		{"session.update nulls are absent", `{"type":"session.update","textOnly":null,"audio":null,"metadata":null}`, SessionUpdate{}},
		{"user.text", `{"type":"user.text","text":"Book me for Tuesday at 3pm"}`, UserText{"Book me for Tuesday at 3pm"}},
		{"user.text keeps spaces and escapes", `{"type":"user.text","text":"  caf\u00e9 <b>&</b>\n"}`, UserText{"  café <b>&</b>\n"}},
		{"user.text type last", `{"text":"hi","type":"user.text"}`, UserText{"hi"}},
		{"user.text at limit", `{"type":"user.text","text":"` + strings.Repeat("é", MaxUserText/2) + `"}`, UserText{strings.Repeat("é", MaxUserText/2)}},
		{"hangup", `{"type":"hangup"}`, Hangup{}},
		{"ping", `{"type":"ping"}`, Ping{}},
		{"ping id", `{"type":"ping","id":"p-17"}`, Ping{"p-17"}},
		{"ping id at limit", `{"type":"ping","id":"` + strings.Repeat("x", MaxIDBytes) + `"}`, Ping{strings.Repeat("x", MaxIDBytes)}},
		{"playback.mark", `{"type":"playback.mark","turnId":"turn_3","playedMs":1520}`, PlaybackMark{"turn_3", 1520}},
		{"playback.mark zero", `{"type":"playback.mark","turnId":"t","playedMs":0}`, PlaybackMark{"t", 0}},
		{"surrounding whitespace", " \n\t{\"type\":\"hangup\"}\r\n ", Hangup{}},
		{"user.text surrogate pair", `{"type":"user.text","text":"hi \ud83d\ude00"}`, UserText{"hi 😀"}},
		{"user.text escaped backslash then u0000", `{"type":"user.text","text":"a\\u0000"}`, UserText{`a\u0000`}},
		{"nesting at MaxDepth", `{"type":"session.update","metadata":{"a":` + strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2) + `}}`,
			SessionUpdate{Metadata: json.RawMessage(`{"a":` + strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2) + `}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Decode([]byte(tt.frame))
			if err != nil {
				t.Fatalf("Decode(%q) error = %v, want %#v", tt.frame, err, tt.want)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode(%q) = %#v, want %#v", tt.frame, got, tt.want)
			}
			if got.Type() == "" {
				t.Fatalf("Decode(%q).Type() is empty", tt.frame)
			}
			// Round trip: EncodeClient renders it, Decode reads the same event.
			b, err := EncodeClient(got)
			if err != nil {
				t.Fatalf("EncodeClient(%#v) error = %v", got, err)
			}
			again, err := Decode(b)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("Decode(EncodeClient(%#v) = %s) = %#v, %v; want the same event", got, b, again, err)
			}
		})
	}
}

// Members a known event does not define are ignored (forward compatibility),
// at the top level and inside audio; defined ones keep their meaning.
func TestDecodeIgnoresUnknownMembers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		frame string
		want  ClientEvent
	}{
		{`{"type":"hangup","reason":"bye","x":{"deep":[1,2]}}`, Hangup{}},
		{`{"type":"user.text","text":"hi","lang":"en","final":true}`, UserText{"hi"}},
		{`{"type":"ping","id":"1","sentAt":12345}`, Ping{"1"}},
		{`{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":24000,"channels":1},"vad":{}}`,
			SessionUpdate{Audio: &Audio{PCM16, 24000}}},
		{`{"type":"playback.mark","turnId":"t","playedMs":5,"name":"m1"}`, PlaybackMark{"t", 5}},
	}
	for _, tt := range tests {
		got, err := Decode([]byte(tt.frame))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Decode(%q) = %#v, %v; want %#v, nil", tt.frame, got, err, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		frame string
		code  string
		field string
		msg   string // a substring of the message
	}{
		// The frame as a whole.
		{"empty", ``, CodeInvalidJSON, "", "empty"},
		{"blank", " \n", CodeInvalidJSON, "", "empty"},
		{"not json", `hello`, CodeInvalidJSON, "", "not valid JSON"},
		{"truncated", `{"type":"ping"`, CodeInvalidJSON, "", "not valid JSON"},
		{"array", `[{"type":"ping"}]`, CodeInvalidJSON, "", "must be a JSON object, got array"},
		{"string", `"ping"`, CodeInvalidJSON, "", "got string"},
		{"null", `null`, CodeInvalidJSON, "", "got null"},
		{"number", `42`, CodeInvalidJSON, "", "got number"},
		{"two objects", `{"type":"ping"}{"type":"ping"}`, CodeInvalidJSON, "", "data after"},
		{"trailing garbage", `{"type":"ping"} x`, CodeInvalidJSON, "", "data after"},
		{"invalid utf-8 outside a string", "{\"type\":\"ping\"\xff}", CodeInvalidJSON, "", "not valid JSON"},
		{"control character in string", "{\"type\":\"user.text\",\"text\":\"a\x01\"}", CodeInvalidJSON, "", "not valid JSON"},
		{"bad key of the frame", `{"type":"ping","\u0000":1}`, CodeInvalidJSON, "", "frame has a key that is not valid text: keys must not contain NUL"},
		// The text rules (package jsontext): each names the member.
		{"escaped NUL", `{"type":"user.text","text":"a\u0000b"}`, CodeInvalidField, "text", `field "text" must not contain NUL (U+0000) characters`},
		{"raw NUL", "{\"type\":\"user.text\",\"text\":\"a\x00b\"}", CodeInvalidField, "text", "must not contain NUL"},
		{"invalid utf-8", "{\"type\":\"user.text\",\"text\":\"\xff\"}", CodeInvalidField, "text", `field "text" must be valid UTF-8`},
		{"lone high surrogate", `{"type":"user.text","text":"hi \ud800"}`, CodeInvalidField, "text", `lone UTF-16 surrogate escape (\ud800)`},
		{"lone low surrogate", `{"type":"user.text","text":"\udc00 hi"}`, CodeInvalidField, "text", `(\udc00)`},
		{"NUL in the type", `{"type":"hang\u0000up"}`, CodeInvalidField, "type", "must not contain NUL"},
		{"NUL in metadata", `{"type":"session.update","metadata":{"page":["ok","\u0000"]}}`, CodeInvalidField, "metadata.page[1]", "must not contain NUL"},
		{"bad key in metadata", `{"type":"session.update","metadata":{"\ud800":1}}`, CodeInvalidField, "metadata", "has a key that is not valid text"},
		{"NUL in an ignored member", `{"type":"hangup","reason":"\u0000"}`, CodeInvalidField, "reason", "must not contain NUL"},
		{"duplicate key", `{"type":"ping","type":"hangup"}`, CodeInvalidField, "type", `field "type" is given more than once`},
		{"duplicate nested key", `{"type":"session.update","metadata":{"a":1,"b":{"c":1,"c":2}}}`, CodeInvalidField, "metadata.b.c", "is given more than once"},
		{"duplicate after unescaping", `{"type":"user.text","text":"a","t\u0065xt":"b"}`, CodeInvalidField, "text", "is given more than once"},
		{"first problem in frame order", `{"type":"user.text","text":"\ud800","text":"b"}`, CodeInvalidField, "text", "surrogate"},
		{"too deep", `{"type":"session.update","metadata":{"a":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}}`,
			CodeInvalidJSON, "", "deeper than 32"},
		{"very deep", `{"a":` + strings.Repeat("[", 20000), CodeInvalidJSON, "", "deeper"},
		{"single quotes", `{'type':'ping'}`, CodeInvalidJSON, "", "not valid JSON"},
		// type.
		{"no type", `{"text":"hi"}`, CodeInvalidField, "type", `"type" is required`},
		{"null type", `{"type":null}`, CodeInvalidField, "type", `"type" is required`},
		{"type not string", `{"type":7}`, CodeInvalidField, "type", `"type" must be a string, got number`},
		{"unknown type", `{"type":"user.audio"}`, CodeUnknownType, "type", `"user.audio"`},
		{"server type from client", `{"type":"pong"}`, CodeUnknownType, "type", "session.update, user.text, hangup, ping, playback.mark"},
		{"type case matters", `{"type":"Hangup"}`, CodeUnknownType, "type", `"Hangup"`},
		// session.update.
		{"textOnly string", `{"type":"session.update","textOnly":"true"}`, CodeInvalidField, "textOnly", "must be a boolean (true or false), got string"},
		{"textOnly number", `{"type":"session.update","textOnly":1}`, CodeInvalidField, "textOnly", "got number"},
		{"audio not object", `{"type":"session.update","audio":"pcm16"}`, CodeInvalidField, "audio", "must be a JSON object, got string"},
		{"audio no encoding", `{"type":"session.update","audio":{"sampleRate":16000}}`, CodeInvalidField, "audio.encoding", "is required"},
		{"audio encoding number", `{"type":"session.update","audio":{"encoding":16}}`, CodeInvalidField, "audio.encoding", "must be a string"},
		{"audio encoding unknown", `{"type":"session.update","audio":{"encoding":"opus"}}`, CodeInvalidField, "audio.encoding", `"pcm16" or "mulaw", got "opus"`},
		{"audio encoding case", `{"type":"session.update","audio":{"encoding":"PCM16"}}`, CodeInvalidField, "audio.encoding", `got "PCM16"`},
		{"pcm16 44.1k", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":44100}}`, CodeInvalidField, "audio.sampleRate",
			"must be one of 8000, 16000, 24000, 48000 for pcm16, got 44100"},
		{"mulaw 16k", `{"type":"session.update","audio":{"encoding":"mulaw","sampleRate":16000}}`, CodeInvalidField, "audio.sampleRate", "one of 8000 for mulaw"},
		{"sampleRate string", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":"16000"}}`, CodeInvalidField, "audio.sampleRate", "must be an integer, got string"},
		{"sampleRate fraction", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":16000.0}}`, CodeInvalidField, "audio.sampleRate", "without fraction"},
		{"sampleRate exponent", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":1.6e4}}`, CodeInvalidField, "audio.sampleRate", "without fraction"},
		{"sampleRate overflow", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":18446744073709567616}}`, CodeInvalidField, "audio.sampleRate", "64 bits"},
		{"sampleRate wraps to 16000 on 32 bits", `{"type":"session.update","audio":{"encoding":"pcm16","sampleRate":4294983296}}`, CodeInvalidField, "audio.sampleRate", "got 4294983296"},
		{"metadata array", `{"type":"session.update","metadata":[1]}`, CodeInvalidField, "metadata", "must be a JSON object, got array"},
		{"metadata string", `{"type":"session.update","metadata":"{}"}`, CodeInvalidField, "metadata", "got string"},
		// user.text.
		{"text missing", `{"type":"user.text"}`, CodeInvalidField, "text", "user.text: field \"text\" is required"},
		{"text null", `{"type":"user.text","text":null}`, CodeInvalidField, "text", "is required"},
		{"text number", `{"type":"user.text","text":42}`, CodeInvalidField, "text", "must be a string, got number"},
		{"text array", `{"type":"user.text","text":["hi"]}`, CodeInvalidField, "text", "got array"},
		{"text empty", `{"type":"user.text","text":""}`, CodeInvalidField, "text", "must not be blank"},
		{"text blank", `{"type":"user.text","text":" \t\n\u00a0\u3000"}`, CodeInvalidField, "text", "must not be blank"},
		{"text too long", `{"type":"user.text","text":"` + strings.Repeat("é", MaxUserText/2) + `a"}`, CodeInvalidField, "text", "at most 4000 bytes of UTF-8, got 4001"},
		// ping.
		{"ping id number", `{"type":"ping","id":1}`, CodeInvalidField, "id", "ping: field \"id\" must be a string, got number"},
		{"ping id too long", `{"type":"ping","id":"` + strings.Repeat("x", MaxIDBytes+1) + `"}`, CodeInvalidField, "id", "at most 256 bytes"},
		// playback.mark.
		{"mark no turnId", `{"type":"playback.mark","playedMs":1}`, CodeInvalidField, "turnId", "is required"},
		{"mark empty turnId", `{"type":"playback.mark","turnId":"","playedMs":1}`, CodeInvalidField, "turnId", "must not be empty"},
		{"mark turnId number", `{"type":"playback.mark","turnId":3,"playedMs":1}`, CodeInvalidField, "turnId", "must be a string"},
		{"mark no playedMs", `{"type":"playback.mark","turnId":"t"}`, CodeInvalidField, "playedMs", "is required"},
		{"mark negative", `{"type":"playback.mark","turnId":"t","playedMs":-1}`, CodeInvalidField, "playedMs", "must be 0 or more, got -1"},
		{"mark fraction", `{"type":"playback.mark","turnId":"t","playedMs":1.5}`, CodeInvalidField, "playedMs", "must be an integer"},
		{"mark bool", `{"type":"playback.mark","turnId":"t","playedMs":true}`, CodeInvalidField, "playedMs", "got boolean"},
		// size.
		{"too large", `{"type":"user.text","text":"` + strings.Repeat("a", MaxFrame) + `"}`, CodeFrameTooLarge, "", "the limit is 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := Decode([]byte(tt.frame))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("Decode(%.80q) = %#v, %v; want *Error %s", tt.frame, ev, err, tt.code)
			}
			if ev != nil {
				t.Errorf("Decode(%.80q) event = %#v, want nil with an error", tt.frame, ev)
			}
			if pe.Code != tt.code || pe.Field != tt.field || !strings.Contains(pe.Message, tt.msg) {
				t.Errorf("Decode(%.80q) = {%s %q %q}, want code %s, field %q, message containing %q",
					tt.frame, pe.Code, pe.Field, pe.Message, tt.code, tt.field, tt.msg)
			}
			if pe.Field != "" && !strings.Contains(pe.Message, `"`+pe.Field+`"`) {
				t.Errorf("Decode(%.80q) message %q does not name the field %q", tt.frame, pe.Message, pe.Field)
			}
			if got, want := pe.Fatal(), tt.code == CodeFrameTooLarge; got != want {
				t.Errorf("Decode(%.80q) error Fatal() = %v, want %v", tt.frame, got, want)
			}
		})
	}
}

// A frame of exactly MaxFrame bytes is read; one byte more is refused before
// any parsing.
func TestDecodeMaxFrame(t *testing.T) {
	t.Parallel()
	frame := func(n int) []byte {
		b := []byte(`{"type":"session.update","metadata":{"pad":"`)
		tail := `"}}`
		pad := n - len(b) - len(tail)
		return append(append(b, strings.Repeat("a", pad)...), tail...)
	}
	if _, err := Decode(frame(MaxFrame)); err != nil {
		t.Errorf("Decode(%d-byte frame) error = %v, want nil", MaxFrame, err)
	}
	_, err := Decode(frame(MaxFrame + 1))
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != CodeFrameTooLarge || !pe.Fatal() {
		t.Errorf("Decode(%d-byte frame) error = %v, want fatal %s", MaxFrame+1, err, CodeFrameTooLarge)
	}
	// Even garbage over the limit is reported as too large, not as bad JSON.
	_, err = Decode([]byte(strings.Repeat("\xff", MaxFrame+1)))
	if !errors.As(err, &pe) || pe.Code != CodeFrameTooLarge {
		t.Errorf("Decode(oversized garbage) error = %v, want %s", err, CodeFrameTooLarge)
	}
}

func TestEncodeClient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ev   ClientEvent
		want string
	}{
		{SessionUpdate{TextOnly: ptr(true)}, `{"type":"session.update","textOnly":true}`},
		{SessionUpdate{Audio: &Audio{Mulaw, 8000}, Metadata: json.RawMessage(`{"a":1}`)},
			`{"type":"session.update","audio":{"encoding":"mulaw","sampleRate":8000},"metadata":{"a":1}}`},
		{UserText{"a < b & c"}, `{"type":"user.text","text":"a < b & c"}`},
		{Hangup{}, `{"type":"hangup"}`},
		{Ping{}, `{"type":"ping"}`},
		{Ping{"x"}, `{"type":"ping","id":"x"}`},
		{PlaybackMark{"turn_2", 300}, `{"type":"playback.mark","turnId":"turn_2","playedMs":300}`},
	}
	for _, tt := range tests {
		got, err := EncodeClient(tt.ev)
		if err != nil || string(got) != tt.want {
			t.Errorf("EncodeClient(%#v) = %s, %v; want %s", tt.ev, got, err, tt.want)
		}
	}
	// What Decode would refuse, EncodeClient refuses too.
	bad := []struct {
		ev    ClientEvent
		field string
	}{
		{UserText{"  "}, "text"},
		{SessionUpdate{Audio: &Audio{PCM16, 44100}}, "audio.sampleRate"},
		{SessionUpdate{Audio: &Audio{Encoding: "opus"}}, "audio.encoding"},
		{PlaybackMark{"", 1}, "turnId"},
		{PlaybackMark{"t", -1}, "playedMs"},
	}
	for _, tt := range bad {
		_, err := EncodeClient(tt.ev)
		var pe *Error
		if !errors.As(err, &pe) || pe.Field != tt.field {
			t.Errorf("EncodeClient(%#v) error = %v, want an *Error on field %q", tt.ev, err, tt.field)
		}
	}
	if _, err := EncodeClient(SessionUpdate{Metadata: json.RawMessage(`[1]`)}); err == nil {
		t.Errorf("EncodeClient(metadata [1]) error = nil, want one")
	}
	if _, err := EncodeClient(nil); err == nil {
		t.Errorf("EncodeClient(nil) error = nil, want one")
	}
	if _, err := EncodeClient(&Hangup{}); err == nil {
		t.Errorf("EncodeClient(&Hangup{}) error = nil, want one (values only)")
	}
}
