package protocol

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// Server event types.
const (
	TypeSessionStarted = "session.started"
	TypeTextDelta      = "assistant.text.delta"
	TypeTurnDone       = "assistant.turn.done"
	TypeTranscript     = "transcript"
	TypeSpeechStarted  = "speech.started"
	TypeSpeechStopped  = "speech.stopped"
	TypeAudioStart     = "assistant.audio.start"
	TypeAudioDone      = "assistant.audio.done"
	TypeAudioClear     = "assistant.audio.clear"
	TypeAudioPause     = "assistant.audio.pause"
	TypeAudioResume    = "assistant.audio.resume"
	TypeCallEnded      = "call.ended"
	TypeError          = "error"
	TypePong           = "pong"
)

// ServerTypes lists the server event types of this version, in the order
// the documentation gives them.
var ServerTypes = []string{
	TypeSessionStarted, TypeTextDelta, TypeTurnDone, TypeTranscript,
	TypeSpeechStarted, TypeSpeechStopped, TypeAudioStart, TypeAudioDone, TypeAudioClear,
	TypeAudioPause, TypeAudioResume, TypeCallEnded, TypeError, TypePong,
}

// TimeLayout is how every server event's `at` is written: RFC 3339 in UTC
// with exactly three fractional digits, as everywhere in the REST API.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// ServerEvent is one event the server sends: SessionStarted, TextDelta,
// TurnDone, Transcript, SpeechStarted, SpeechStopped, AudioStart, AudioDone,
// AudioClear, AudioPause, AudioResume, CallEnded, ErrorEvent or Pong (values,
// not pointers). Each has
// Seq and At, which the gateway's writer sets (Stamp) just before Encode, so
// they follow the order frames leave the socket.
type ServerEvent interface{ Type() string }

// SessionStarted is the first frame of every session: the call is now in
// progress and this is its protocol version.
type SessionStarted struct {
	Seq         int64
	At          time.Time
	CallID      string
	AssistantID string
}

// Type returns "session.started".
func (SessionStarted) Type() string { return TypeSessionStarted }

// TextDelta is the next piece of the assistant's reply in turn TurnID. The
// deltas of a turn, concatenated in seq order, are its text; a delta never
// splits a UTF-8 character.
type TextDelta struct {
	Seq    int64
	At     time.Time
	TurnID string
	Text   string
}

// Type returns "assistant.text.delta".
func (TextDelta) Type() string { return TypeTextDelta }

// TurnDone ends an assistant turn: no more deltas for TurnID. Text is the
// turn as the transcript records it: the concatenated deltas, except for a
// turn cut short in an audio session, where it is what the caller heard (a
// prefix of the deltas, which run ahead of the voice; "" when none of it
// was heard). Interrupted says the user cut in (user.text, speech, hangup)
// before the assistant finished. In an audio session it comes after the
// turn's AudioDone or AudioClear: the turn is over when its audio is.
type TurnDone struct {
	Seq         int64
	At          time.Time
	TurnID      string
	Text        string
	Interrupted bool
}

// Type returns "assistant.turn.done".
func (TurnDone) Type() string { return TypeTurnDone }

// Role says who spoke a transcript line.
type Role string

// Transcript roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Transcript is one line of the call's transcript as it is recorded. Final
// lines are what the call's stored transcript holds; in text sessions every
// line is final. In audio sessions, speech recognition sends non-final user
// lines (partials) for the utterance in progress, each replacing the one
// before, until the final line replaces them all.
type Transcript struct {
	Seq  int64
	At   time.Time
	Role Role
	Text string
	// TurnID is required on final lines. A partial may leave it empty (and
	// then it is omitted on the wire): the utterance in progress has no turn
	// yet; its final line carries the turn id.
	TurnID string
	Final  bool
}

// Type returns "transcript".
func (Transcript) Type() string { return TypeTranscript }

// CallEnded is the last event of a call: its outcome and endedReason, the
// same values GET /v1/calls/{id} then shows. The server closes the socket
// right after it.
type CallEnded struct {
	Seq         int64
	At          time.Time
	Outcome     string
	EndedReason string
}

// Type returns "call.ended".
func (CallEnded) Type() string { return TypeCallEnded }

// ErrorEvent reports a problem. Fatal errors are followed by the close of
// the socket (and call.ended when the call ends with it); otherwise the call
// goes on. Build it from an error with ErrorEventFor.
type ErrorEvent struct {
	Seq     int64
	At      time.Time
	Code    string
	Message string
	// Field is the offending field of the client's frame, when there is one.
	Field string
	Fatal bool
}

// Type returns "error".
func (ErrorEvent) Type() string { return TypeError }

// Pong answers a ping, echoing its id.
type Pong struct {
	Seq int64
	At  time.Time
	ID  string
}

// Type returns "pong".
func (Pong) Type() string { return TypePong }

// Stamp returns ev with Seq and At set. The gateway's writer calls it for
// each event as it sends it: seq counts the connection's server events from 1.
// Other values are returned unchanged, for Encode to refuse.
func Stamp(ev ServerEvent, seq int64, at time.Time) ServerEvent {
	switch e := ev.(type) {
	case SessionStarted:
		e.Seq, e.At = seq, at
		return e
	case TextDelta:
		e.Seq, e.At = seq, at
		return e
	case TurnDone:
		e.Seq, e.At = seq, at
		return e
	case Transcript:
		e.Seq, e.At = seq, at
		return e
	case SpeechStarted:
		e.Seq, e.At = seq, at
		return e
	case SpeechStopped:
		e.Seq, e.At = seq, at
		return e
	case AudioStart:
		e.Seq, e.At = seq, at
		return e
	case AudioDone:
		e.Seq, e.At = seq, at
		return e
	case AudioClear:
		e.Seq, e.At = seq, at
		return e
	case AudioPause:
		e.Seq, e.At = seq, at
		return e
	case AudioResume:
		e.Seq, e.At = seq, at
		return e
	case CallEnded:
		e.Seq, e.At = seq, at
		return e
	case ErrorEvent:
		e.Seq, e.At = seq, at
		return e
	case Pong:
		e.Seq, e.At = seq, at
		return e
	}
	return ev
}

// Encode renders a server event as a text frame, adding its type. It checks
// what the protocol promises clients: Seq ≥ 1, At set, the required strings
// non-empty (a transcript's turnId only when final), valid UTF-8, a known
// transcript role and no negative durations. A failure is a bug in
// the caller; the error wraps an *Error naming the field.
func Encode(ev ServerEvent) ([]byte, error) {
	body, perr := serverWire(ev)
	if perr != nil {
		return nil, fmt.Errorf("protocol: encode: %w", perr)
	}
	b, err := marshal(body)
	if err != nil {
		return nil, fmt.Errorf("protocol: encode %s: %w", ev.Type(), err)
	}
	return b, nil
}

// head is the members every server event starts with.
type head struct {
	Type string `json:"type"`
	Seq  int64  `json:"seq"`
	At   string `json:"at"`
}

// turnBody is an event that names only a turn.
type turnBody struct {
	head
	TurnID string `json:"turnId"`
}

// playedBody is an event that names a turn and how much of its audio was sent.
type playedBody struct {
	head
	TurnID   string `json:"turnId"`
	PlayedMs int64  `json:"playedMs"`
}

// checker validates a server event's fields, keeping the first problem.
type checker struct {
	event string
	head  head
	err   *Error
}

func (c *checker) start(typ string, seq int64, at time.Time) {
	c.event = typ
	c.head = head{Type: typ, Seq: seq, At: at.UTC().Format(TimeLayout)}
	switch {
	case seq < 1:
		c.fail("seq", "must be 1 or more, got %d", seq)
	case at.IsZero():
		c.fail("at", "must be set")
	}
}

func (c *checker) fail(field, format string, args ...any) {
	if c.err == nil {
		c.err = fieldError(c.event, field, format, args...)
	}
}

// text checks a string field: valid UTF-8 (encoding/json would silently
// replace bad bytes) and, if required, not empty.
func (c *checker) text(field, v string, required bool) string {
	switch {
	case !utf8.ValidString(v):
		c.fail(field, "must be valid UTF-8")
	case required && v == "":
		c.fail(field, "must not be empty")
	}
	return v
}

// ms checks a duration in milliseconds: 0 or more.
func (c *checker) ms(field string, v int64) int64 {
	if v < 0 {
		c.fail(field, "must be 0 or more, got %d", v)
	}
	return v
}

// serverWire validates ev and returns the value to marshal.
func serverWire(ev ServerEvent) (any, *Error) {
	var c checker
	var body any
	switch e := ev.(type) {
	case SessionStarted:
		c.start(TypeSessionStarted, e.Seq, e.At)
		body = struct {
			head
			CallID      string `json:"callId"`
			AssistantID string `json:"assistantId"`
			Protocol    string `json:"protocol"`
		}{c.head, c.text("callId", e.CallID, true), c.text("assistantId", e.AssistantID, true), Version}
	case TextDelta:
		c.start(TypeTextDelta, e.Seq, e.At)
		body = struct {
			head
			TurnID string `json:"turnId"`
			Text   string `json:"text"`
		}{c.head, c.text("turnId", e.TurnID, true), c.text("text", e.Text, true)}
	case TurnDone:
		c.start(TypeTurnDone, e.Seq, e.At)
		body = struct {
			head
			TurnID      string `json:"turnId"`
			Text        string `json:"text"`
			Interrupted bool   `json:"interrupted"`
		}{c.head, c.text("turnId", e.TurnID, true), c.text("text", e.Text, false), e.Interrupted}
	case Transcript:
		c.start(TypeTranscript, e.Seq, e.At)
		if e.Role != RoleUser && e.Role != RoleAssistant {
			c.fail("role", `must be "user" or "assistant", got %q`, e.Role)
		}
		body = struct {
			head
			Role   Role   `json:"role"`
			Text   string `json:"text"`
			TurnID string `json:"turnId,omitempty"`
			Final  bool   `json:"final"`
		}{c.head, e.Role, c.text("text", e.Text, false), c.text("turnId", e.TurnID, e.Final), e.Final}
	case SpeechStarted:
		c.start(TypeSpeechStarted, e.Seq, e.At)
		body = c.head
	case SpeechStopped:
		c.start(TypeSpeechStopped, e.Seq, e.At)
		body = c.head
	case AudioStart:
		c.start(TypeAudioStart, e.Seq, e.At)
		body = turnBody{c.head, c.text("turnId", e.TurnID, true)}
	case AudioDone:
		c.start(TypeAudioDone, e.Seq, e.At)
		body = turnBody{c.head, c.text("turnId", e.TurnID, true)}
	case AudioClear:
		c.start(TypeAudioClear, e.Seq, e.At)
		body = playedBody{c.head, c.text("turnId", e.TurnID, true), c.ms("playedMs", e.PlayedMs)}
	case AudioPause:
		c.start(TypeAudioPause, e.Seq, e.At)
		body = playedBody{c.head, c.text("turnId", e.TurnID, true), c.ms("playedMs", e.PlayedMs)}
	case AudioResume:
		c.start(TypeAudioResume, e.Seq, e.At)
		body = playedBody{c.head, c.text("turnId", e.TurnID, true), c.ms("playedMs", e.PlayedMs)}
	case CallEnded:
		c.start(TypeCallEnded, e.Seq, e.At)
		body = struct {
			head
			Outcome     string `json:"outcome"`
			EndedReason string `json:"endedReason"`
		}{c.head, c.text("outcome", e.Outcome, true), c.text("endedReason", e.EndedReason, true)}
	case ErrorEvent:
		c.start(TypeError, e.Seq, e.At)
		body = struct {
			head
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field,omitempty"`
			Fatal   bool   `json:"fatal"`
		}{c.head, c.text("code", e.Code, true), c.text("message", e.Message, true), c.text("field", e.Field, false), e.Fatal}
	case Pong:
		c.start(TypePong, e.Seq, e.At)
		body = struct {
			head
			ID string `json:"id,omitempty"`
		}{c.head, c.text("id", e.ID, false)}
	default:
		return nil, frameError(CodeUnknownType, "cannot encode %T as a server event", ev)
	}
	if c.err != nil {
		return nil, c.err
	}
	return body, nil
}

// DecodeServer parses one server text frame, for Go clients and tests. It is
// as strict as Decode (and never panics) but has no frame limit: members it
// does not know are ignored, known ones must have their documented type, and
// the result must pass Encode's checks.
func DecodeServer(frame []byte) (ServerEvent, error) {
	members, perr := parseFrame(frame)
	if perr != nil {
		return nil, perr
	}
	typ, perr := eventType(members, ServerTypes, "server")
	if perr != nil {
		return nil, perr
	}
	o := &object{event: typ, members: members}
	seq, _ := o.int("seq", true)
	var at time.Time
	if s, ok := o.string("at", true); ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			o.fail("at", "must be an RFC 3339 time, got %q", s)
		}
		at = t.UTC()
	}
	str := func(key string) string { s, _ := o.string(key, true); return s }
	boolean := func(key string) bool { b, _ := o.bool(key, true); return b }
	var ev ServerEvent
	switch typ {
	case TypeSessionStarted:
		e := SessionStarted{Seq: seq, At: at, CallID: str("callId"), AssistantID: str("assistantId")}
		if p := str("protocol"); o.err == nil && p != Version {
			o.fail("protocol", "must be %q, got %q", Version, p)
		}
		ev = e
	case TypeTextDelta:
		ev = TextDelta{Seq: seq, At: at, TurnID: str("turnId"), Text: str("text")}
	case TypeTurnDone:
		ev = TurnDone{Seq: seq, At: at, TurnID: str("turnId"), Text: str("text"), Interrupted: boolean("interrupted")}
	case TypeTranscript:
		e := Transcript{Seq: seq, At: at, Role: Role(str("role")), Text: str("text")}
		e.Final = boolean("final")
		e.TurnID, _ = o.string("turnId", e.Final) // a partial may have none
		ev = e
	case TypeSpeechStarted:
		ev = SpeechStarted{Seq: seq, At: at}
	case TypeSpeechStopped:
		ev = SpeechStopped{Seq: seq, At: at}
	case TypeAudioStart:
		ev = AudioStart{Seq: seq, At: at, TurnID: str("turnId")}
	case TypeAudioDone:
		ev = AudioDone{Seq: seq, At: at, TurnID: str("turnId")}
	case TypeAudioClear:
		e := AudioClear{Seq: seq, At: at, TurnID: str("turnId")}
		e.PlayedMs, _ = o.int("playedMs", true)
		ev = e
	case TypeAudioPause:
		e := AudioPause{Seq: seq, At: at, TurnID: str("turnId")}
		e.PlayedMs, _ = o.int("playedMs", true)
		ev = e
	case TypeAudioResume:
		e := AudioResume{Seq: seq, At: at, TurnID: str("turnId")}
		e.PlayedMs, _ = o.int("playedMs", true)
		ev = e
	case TypeCallEnded:
		ev = CallEnded{Seq: seq, At: at, Outcome: str("outcome"), EndedReason: str("endedReason")}
	case TypeError:
		e := ErrorEvent{Seq: seq, At: at, Code: str("code"), Message: str("message"), Fatal: boolean("fatal")}
		e.Field, _ = o.string("field", false)
		ev = e
	case TypePong:
		id, _ := o.string("id", false)
		ev = Pong{Seq: seq, At: at, ID: id}
	}
	if o.err != nil {
		return nil, o.err
	}
	if _, perr := serverWire(ev); perr != nil {
		return nil, perr
	}
	return ev, nil
}
