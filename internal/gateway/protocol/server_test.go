package protocol

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

var at0 = time.Date(2026, 11, 21, 9, 30, 0, 125_000_000, time.UTC)

func TestEncode(t *testing.T) {
	t.Parallel()
	const h = `"seq":7,"at":"2026-11-21T09:30:00.125Z"`
	tests := []struct {
		ev   ServerEvent
		want string
	}{
		{SessionStarted{Seq: 7, At: at0, CallID: "call_1", AssistantID: "asst_1"},
			`{"type":"session.started",` + h + `,"callId":"call_1","assistantId":"asst_1","protocol":"v1"}`},
		{TextDelta{Seq: 7, At: at0, TurnID: "turn_1", Text: "Hello <there> & "},
			`{"type":"assistant.text.delta",` + h + `,"turnId":"turn_1","text":"Hello <there> & "}`},
		{TurnDone{Seq: 7, At: at0, TurnID: "turn_1", Text: "Hello."},
			`{"type":"assistant.turn.done",` + h + `,"turnId":"turn_1","text":"Hello.","interrupted":false}`},
		{TurnDone{Seq: 7, At: at0, TurnID: "turn_1", Interrupted: true},
			`{"type":"assistant.turn.done",` + h + `,"turnId":"turn_1","text":"","interrupted":true}`},
		{Transcript{Seq: 7, At: at0, Role: RoleUser, Text: "hi", TurnID: "turn_2", Final: true},
			`{"type":"transcript",` + h + `,"role":"user","text":"hi","turnId":"turn_2","final":true}`},
		// A partial has no turn yet: turnId is omitted.
		{Transcript{Seq: 7, At: at0, Role: RoleUser, Text: "I'd like"},
			`{"type":"transcript",` + h + `,"role":"user","text":"I'd like","final":false}`},
		{Transcript{Seq: 7, At: at0, Role: RoleUser, Text: "I'd like", TurnID: "turn_2"},
			`{"type":"transcript",` + h + `,"role":"user","text":"I'd like","turnId":"turn_2","final":false}`},
		{SpeechStarted{Seq: 7, At: at0}, `{"type":"speech.started",` + h + `}`},
		{SpeechStopped{Seq: 7, At: at0}, `{"type":"speech.stopped",` + h + `}`},
		{AudioStart{Seq: 7, At: at0, TurnID: "turn_3"}, `{"type":"assistant.audio.start",` + h + `,"turnId":"turn_3"}`},
		{AudioDone{Seq: 7, At: at0, TurnID: "turn_3"}, `{"type":"assistant.audio.done",` + h + `,"turnId":"turn_3"}`},
		{AudioClear{Seq: 7, At: at0, TurnID: "turn_3", PlayedMs: 1840},
			`{"type":"assistant.audio.clear",` + h + `,"turnId":"turn_3","playedMs":1840}`},
		{AudioClear{Seq: 7, At: at0, TurnID: "turn_3"}, `{"type":"assistant.audio.clear",` + h + `,"turnId":"turn_3","playedMs":0}`},
		{AudioPause{Seq: 7, At: at0, TurnID: "turn_3", PlayedMs: 1820},
			`{"type":"assistant.audio.pause",` + h + `,"turnId":"turn_3","playedMs":1820}`},
		{AudioResume{Seq: 7, At: at0, TurnID: "turn_3", PlayedMs: 1820},
			`{"type":"assistant.audio.resume",` + h + `,"turnId":"turn_3","playedMs":1820}`},
		{CallEnded{Seq: 7, At: at0, Outcome: "completed", EndedReason: "customer-ended-call"},
			`{"type":"call.ended",` + h + `,"outcome":"completed","endedReason":"customer-ended-call"}`},
		{ErrorEvent{Seq: 7, At: at0, Code: CodeInvalidField, Message: "m", Field: "text"},
			`{"type":"error",` + h + `,"code":"invalid_field","message":"m","field":"text","fatal":false}`},
		{ErrorEvent{Seq: 7, At: at0, Code: CodeTooManyErrors, Message: "m", Fatal: true},
			`{"type":"error",` + h + `,"code":"too_many_errors","message":"m","fatal":true}`},
		{Pong{Seq: 7, At: at0, ID: "p1"}, `{"type":"pong",` + h + `,"id":"p1"}`},
		{Pong{Seq: 7, At: at0}, `{"type":"pong",` + h + `}`},
		// at is rendered in UTC, truncated to milliseconds.
		{Pong{Seq: 7, At: at0.Add(999_999).In(time.FixedZone("X", 3600))}, `{"type":"pong",` + h + `}`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%T", tt.ev), func(t *testing.T) {
			got, err := Encode(tt.ev)
			if err != nil || string(got) != tt.want {
				t.Fatalf("Encode(%#v) = %s, %v; want %s", tt.ev, got, err, tt.want)
			}
		})
	}
}

// Every server event survives Encode → DecodeServer unchanged.
func TestServerRoundTrip(t *testing.T) {
	t.Parallel()
	events := []ServerEvent{
		SessionStarted{Seq: 1, At: at0, CallID: "call_1", AssistantID: "asst_1"},
		TextDelta{Seq: 2, At: at0, TurnID: "turn_1", Text: "Hi — naïve \u2028 \"quoted\"\n"},
		TurnDone{Seq: 3, At: at0, TurnID: "turn_1", Text: "Hi", Interrupted: true},
		TurnDone{Seq: 3, At: at0, TurnID: "turn_1"},
		Transcript{Seq: 4, At: at0, Role: RoleAssistant, Text: "Hi", TurnID: "turn_1", Final: true},
		Transcript{Seq: 4, At: at0, Role: RoleUser, Text: "", TurnID: "turn_2"},
		Transcript{Seq: 4, At: at0, Role: RoleUser, Text: "book a"},
		Transcript{Seq: 4, At: at0, Role: RoleUser},
		SpeechStarted{Seq: 9, At: at0},
		SpeechStopped{Seq: 10, At: at0},
		AudioStart{Seq: 11, At: at0, TurnID: "turn_3"},
		AudioDone{Seq: 12, At: at0, TurnID: "turn_3"},
		AudioClear{Seq: 13, At: at0, TurnID: "turn_5", PlayedMs: 1 << 40},
		AudioClear{Seq: 13, At: at0, TurnID: "turn_5"},
		AudioPause{Seq: 14, At: at0, TurnID: "turn_5", PlayedMs: 20},
		AudioResume{Seq: 15, At: at0, TurnID: "turn_5"},
		CallEnded{Seq: 5, At: at0, Outcome: "failed", EndedReason: "client-never-connected"},
		ErrorEvent{Seq: 6, At: at0, Code: "some_future_code", Message: "m", Field: "audio.sampleRate", Fatal: true},
		Pong{Seq: 1 << 62, At: at0},
		Pong{Seq: 8, At: at0, ID: "x"},
	}
	for _, ev := range events {
		b, err := Encode(ev)
		if err != nil {
			t.Fatalf("Encode(%#v) error = %v", ev, err)
		}
		got, err := DecodeServer(b)
		if err != nil || !reflect.DeepEqual(got, ev) {
			t.Errorf("DecodeServer(%s) = %#v, %v; want %#v", b, got, err, ev)
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ev    ServerEvent
		field string
	}{
		{SessionStarted{At: at0, CallID: "c", AssistantID: "a"}, "seq"},
		{Pong{Seq: -1, At: at0}, "seq"},
		{Pong{Seq: 1}, "at"},
		{SessionStarted{Seq: 1, At: at0, AssistantID: "a"}, "callId"},
		{SessionStarted{Seq: 1, At: at0, CallID: "c"}, "assistantId"},
		{TextDelta{Seq: 1, At: at0, Text: "x"}, "turnId"},
		{TextDelta{Seq: 1, At: at0, TurnID: "t"}, "text"},
		{TextDelta{Seq: 1, At: at0, TurnID: "t", Text: "caf\xc3"}, "text"},
		{TurnDone{Seq: 1, At: at0}, "turnId"},
		{Transcript{Seq: 1, At: at0, Role: "system", TurnID: "t"}, "role"},
		{Transcript{Seq: 1, At: at0, Role: RoleUser, Final: true}, "turnId"},
		{Transcript{Seq: 1, At: at0, Role: RoleUser, TurnID: "\xff"}, "turnId"},
		{SpeechStarted{At: at0}, "seq"},
		{SpeechStopped{Seq: 1}, "at"},
		{AudioStart{Seq: 1, At: at0}, "turnId"},
		{AudioDone{Seq: 1, At: at0}, "turnId"},
		{AudioClear{Seq: 1, At: at0, PlayedMs: 20}, "turnId"},
		{AudioClear{Seq: 1, At: at0, TurnID: "t", PlayedMs: -20}, "playedMs"},
		{AudioPause{Seq: 1, At: at0}, "turnId"},
		{AudioPause{Seq: 1, At: at0, TurnID: "t", PlayedMs: -1}, "playedMs"},
		{AudioResume{Seq: 1, At: at0, PlayedMs: 20}, "turnId"},
		{AudioResume{Seq: 1, At: at0, TurnID: "t", PlayedMs: -1}, "playedMs"},
		{CallEnded{Seq: 1, At: at0, EndedReason: "r"}, "outcome"},
		{CallEnded{Seq: 1, At: at0, Outcome: "completed"}, "endedReason"},
		{ErrorEvent{Seq: 1, At: at0, Message: "m"}, "code"},
		{ErrorEvent{Seq: 1, At: at0, Code: "c"}, "message"},
		{Pong{Seq: 1, At: at0, ID: "\xff"}, "id"},
	}
	for _, tt := range tests {
		_, err := Encode(tt.ev)
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeInvalidField || pe.Field != tt.field {
			t.Errorf("Encode(%#v) error = %v, want %s on field %q", tt.ev, err, CodeInvalidField, tt.field)
		} else if !strings.Contains(pe.Message, tt.ev.Type()) || !strings.HasPrefix(err.Error(), "protocol: encode: ") {
			t.Errorf("Encode(%#v) error = %q, want the event type named", tt.ev, err)
		}
	}
	for _, ev := range []ServerEvent{nil, &Pong{Seq: 1, At: at0}, UserTextEcho{}} {
		if _, err := Encode(ev); err == nil {
			t.Errorf("Encode(%#v) error = nil, want one", ev)
		}
	}
}

// UserTextEcho is a ServerEvent the codec does not know.
type UserTextEcho struct{}

func (UserTextEcho) Type() string { return "user.text.echo" }

func TestDecodeServerErrors(t *testing.T) {
	t.Parallel()
	const h = `"seq":1,"at":"2026-11-21T09:30:00.125Z"`
	tests := []struct {
		frame string
		code  string
		field string
	}{
		{`{"type":"session.started",` + h + `,"callId":"c","assistantId":"a","protocol":"v2"}`, CodeInvalidField, "protocol"},
		{`{"type":"session.started",` + h + `,"callId":"c","assistantId":"a"}`, CodeInvalidField, "protocol"},
		{`{"type":"pong","at":"2026-11-21T09:30:00.125Z"}`, CodeInvalidField, "seq"},
		{`{"type":"pong","seq":0,"at":"2026-11-21T09:30:00.125Z"}`, CodeInvalidField, "seq"},
		{`{"type":"pong","seq":1,"at":"yesterday"}`, CodeInvalidField, "at"},
		{`{"type":"pong","seq":1}`, CodeInvalidField, "at"},
		{`{"type":"transcript",` + h + `,"role":"bot","text":"x","turnId":"t","final":true}`, CodeInvalidField, "role"},
		{`{"type":"transcript",` + h + `,"role":"user","text":"x","turnId":"t","final":"yes"}`, CodeInvalidField, "final"},
		{`{"type":"assistant.turn.done",` + h + `,"turnId":"t","text":"x"}`, CodeInvalidField, "interrupted"},
		// turnId is required exactly when the line is final.
		{`{"type":"transcript",` + h + `,"role":"user","text":"x","final":true}`, CodeInvalidField, "turnId"},
		{`{"type":"transcript",` + h + `,"role":"user","text":"x","turnId":"","final":true}`, CodeInvalidField, "turnId"},
		{`{"type":"transcript",` + h + `,"role":"user","text":"x","turnId":7,"final":false}`, CodeInvalidField, "turnId"},
		{`{"type":"transcript",` + h + `,"role":"user","text":"x","turnId":"t"}`, CodeInvalidField, "final"},
		{`{"type":"assistant.audio.start",` + h + `}`, CodeInvalidField, "turnId"},
		{`{"type":"assistant.audio.done",` + h + `,"turnId":""}`, CodeInvalidField, "turnId"},
		{`{"type":"assistant.audio.clear",` + h + `,"turnId":"t"}`, CodeInvalidField, "playedMs"},
		{`{"type":"assistant.audio.clear",` + h + `,"turnId":"t","playedMs":-1}`, CodeInvalidField, "playedMs"},
		{`{"type":"assistant.audio.clear",` + h + `,"turnId":"t","playedMs":1.5}`, CodeInvalidField, "playedMs"},
		{`{"type":"assistant.audio.clear",` + h + `,"playedMs":0}`, CodeInvalidField, "turnId"},
		{`{"type":"assistant.audio.pause",` + h + `,"turnId":"t"}`, CodeInvalidField, "playedMs"},
		{`{"type":"assistant.audio.resume",` + h + `,"turnId":"t","playedMs":-20}`, CodeInvalidField, "playedMs"},
		{`{"type":"assistant.audio.resume",` + h + `,"playedMs":20}`, CodeInvalidField, "turnId"},
		{`{"type":"speech.started","seq":0,"at":"2026-11-21T09:30:00.125Z"}`, CodeInvalidField, "seq"},
		{`{"type":"error",` + h + `,"code":"c","message":"m","fatal":false,"field":3}`, CodeInvalidField, "field"},
		{`{"type":"user.text","text":"hi"}`, CodeUnknownType, "type"},
		{`[]`, CodeInvalidJSON, ""},
	}
	for _, tt := range tests {
		ev, err := DecodeServer([]byte(tt.frame))
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != tt.code || pe.Field != tt.field {
			t.Errorf("DecodeServer(%s) = %#v, %v; want %s on field %q", tt.frame, ev, err, tt.code, tt.field)
		}
	}
	// Unknown members are ignored, as for client frames.
	frame := `{"type":"pong",` + h + `,"id":"1","latencyMs":3,"extra":{"a":[1]}}`
	if ev, err := DecodeServer([]byte(frame)); err != nil || ev != (Pong{Seq: 1, At: at0, ID: "1"}) {
		t.Errorf("DecodeServer(%s) = %#v, %v; want the pong", frame, ev, err)
	}
	// A partial's turnId may be absent, null or empty: all mean "no turn yet".
	for _, turn := range []string{``, `,"turnId":null`, `,"turnId":""`} {
		frame := `{"type":"transcript",` + h + `,"role":"user","text":"x"` + turn + `,"final":false}`
		want := Transcript{Seq: 1, At: at0, Role: RoleUser, Text: "x"}
		if ev, err := DecodeServer([]byte(frame)); err != nil || ev != want {
			t.Errorf("DecodeServer(%s) = %#v, %v; want %#v", frame, ev, err, want)
		}
	}
	frame = `{"type":"speech.stopped",` + h + `,"durationMs":1200}`
	if ev, err := DecodeServer([]byte(frame)); err != nil || ev != (SpeechStopped{Seq: 1, At: at0}) {
		t.Errorf("DecodeServer(%s) = %#v, %v; want speech.stopped", frame, ev, err)
	}
}

func TestStamp(t *testing.T) {
	t.Parallel()
	events := []ServerEvent{SessionStarted{}, TextDelta{}, TurnDone{}, Transcript{},
		SpeechStarted{}, SpeechStopped{}, AudioStart{}, AudioDone{}, AudioClear{},
		AudioPause{}, AudioResume{}, CallEnded{}, ErrorEvent{}, Pong{}}
	for i, ev := range events {
		seq := int64(i + 1)
		got := Stamp(ev, seq, at0)
		v := reflect.ValueOf(got)
		if got.Type() != ev.Type() || v.FieldByName("Seq").Int() != seq || !v.FieldByName("At").Interface().(time.Time).Equal(at0) {
			t.Errorf("Stamp(%#v, %d, %v) = %#v, want Seq and At set", ev, seq, at0, got)
		}
	}
	for i, ev := range events {
		if i >= len(ServerTypes) || ev.Type() != ServerTypes[i] {
			t.Errorf("TestStamp event %d is %s, want ServerTypes in order (%v)", i, ev.Type(), ServerTypes)
		}
	}
	if len(events) != len(ServerTypes) {
		t.Errorf("TestStamp covers %d events, ServerTypes has %d", len(events), len(ServerTypes))
	}
	if got := Stamp(UserTextEcho{}, 1, at0); got != (UserTextEcho{}) {
		t.Errorf("Stamp(unknown) = %#v, want it unchanged", got)
	}
}

func TestErrorEventFor(t *testing.T) {
	t.Parallel()
	_, derr := Decode([]byte(`{"type":"user.text","text":1}`))
	big := make([]byte, MaxFrame+1)
	_, ferr := Decode(big)
	tests := []struct {
		err  error
		want ErrorEvent
	}{
		{derr, ErrorEvent{Code: CodeInvalidField, Message: `user.text: field "text" must be a string, got number`, Field: "text"}},
		{fmt.Errorf("read: %w", ferr), ErrorEvent{Code: CodeFrameTooLarge, Message: "frame is 65537 bytes; the limit is 65536", Fatal: true}},
		{&Error{Code: CodeUnexpectedBinary, Message: "m"}, ErrorEvent{Code: CodeUnexpectedBinary, Message: "m", Fatal: true}},
		{&Error{Code: CodeTooManyErrors, Message: "m"}, ErrorEvent{Code: CodeTooManyErrors, Message: "m", Fatal: true}},
		{&Error{Code: CodeUnsupported, Message: "m", Field: "textOnly"}, ErrorEvent{Code: CodeUnsupported, Message: "m", Field: "textOnly"}},
		{errors.New("database is down at 10.0.0.7"), ErrorEvent{Code: CodeInternal, Message: "internal server error", Fatal: true}},
	}
	for _, tt := range tests {
		if got := ErrorEventFor(tt.err); got != tt.want {
			t.Errorf("ErrorEventFor(%v) = %#v, want %#v", tt.err, got, tt.want)
		}
	}
}

func TestBadFrames(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var b BadFrames
	// 20 bad frames in one instant are tolerated; the 21st within 10 s is not.
	for i := range BadFrameLimit {
		if b.Add(start) {
			t.Fatalf("BadFrames.Add: bad frame %d closed the socket, want the first %d tolerated", i+1, BadFrameLimit)
		}
	}
	if !b.Add(start.Add(BadFrameWindow - time.Millisecond)) {
		t.Fatalf("BadFrames.Add: bad frame %d within %v did not close the socket", BadFrameLimit+1, BadFrameWindow)
	}

	// A steady trickle of one bad frame every 500 ms (20 per 10 s) never trips.
	var steady BadFrames
	for i := range 200 {
		if steady.Add(start.Add(time.Duration(i) * 500 * time.Millisecond)) {
			t.Fatalf("BadFrames.Add: frame %d of a 2/s trickle closed the socket", i+1)
		}
	}
	// ...but one more than that does: 21 in 10 s minus a hair.
	var fast BadFrames
	tripped := -1
	for i := range 200 {
		if fast.Add(start.Add(time.Duration(i) * 499 * time.Millisecond)) {
			tripped = i + 1
			break
		}
	}
	if tripped != BadFrameLimit+1 {
		t.Fatalf("BadFrames.Add on a 499 ms trickle tripped at frame %d, want %d", tripped, BadFrameLimit+1)
	}
}

// Encode runs once per streamed delta; Decode once per client frame.
func BenchmarkEncodeTextDelta(b *testing.B) {
	ev := TextDelta{Seq: 42, At: at0, TurnID: "turn_7", Text: "You're welcome, Dana. See you "}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeUserText(b *testing.B) {
	frame := []byte(`{"type":"user.text","text":"I'd like to book a cleaning next Tuesday afternoon."}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
}
