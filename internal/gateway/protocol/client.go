package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Client event types.
const (
	TypeSessionUpdate = "session.update"
	TypeUserText      = "user.text"
	TypeHangup        = "hangup"
	TypePing          = "ping"
	TypePlaybackMark  = "playback.mark"
)

// ClientTypes lists the client event types of this version, in the order
// the documentation gives them.
var ClientTypes = []string{TypeSessionUpdate, TypeUserText, TypeHangup, TypePing, TypePlaybackMark}

// ClientEvent is one decoded client frame: SessionUpdate, UserText, Hangup,
// Ping or PlaybackMark (values, not pointers).
type ClientEvent interface{ Type() string }

// SessionUpdate changes the session's settings. Every field is optional and
// an absent one leaves the setting as it was, so a client sends only what it
// changes.
type SessionUpdate struct {
	// TextOnly asks for a session without audio (true) or with it (false).
	// Sessions start text-only; audio is opt-in, so text clients never see
	// a binary frame they did not ask for. Once audio is on it stays on:
	// true is then answered with AudioStaysOn.
	TextOnly *bool `json:"textOnly,omitempty"`
	// Audio is the format of binary audio frames in both directions, used
	// once the session is not text-only. It may change until the first
	// binary frame of the session (either direction); after that a different
	// format is answered with AudioLocked and the old one stays.
	Audio *Audio `json:"audio,omitempty"`
	// Metadata is free-form client context, a JSON object kept compact and
	// never interpreted by the protocol. It replaces earlier metadata.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Type returns "session.update".
func (SessionUpdate) Type() string { return TypeSessionUpdate }

// UserText is something the user typed, in a text session or an audio
// one. The assistant answers it as one user turn.
type UserText struct {
	// Text is not blank and at most MaxUserText bytes.
	Text string `json:"text"`
}

// Type returns "user.text".
func (UserText) Type() string { return TypeUserText }

// Hangup ends the call: call.ended (completed, customer-ended-call) follows,
// then the server closes with CloseNormal.
type Hangup struct{}

// Type returns "hangup".
func (Hangup) Type() string { return TypeHangup }

// Ping asks for a pong with the same id: an application-level keep-alive and
// round-trip probe, since browsers cannot send websocket ping frames.
type Ping struct {
	// ID is optional, at most MaxIDBytes, echoed in the pong.
	ID string `json:"id,omitempty"`
}

// Type returns "ping".
func (Ping) Type() string { return TypePing }

// PlaybackMark tells how much of an assistant turn's audio the client has
// played, so that on interruption the transcript keeps only what the user
// heard. Clients of audio sessions send it about every 200 ms while a turn
// plays and once when it ends; PlayedMs is cumulative for the turn. Marks in
// text sessions, and for turns whose audio is over, are ignored.
type PlaybackMark struct {
	TurnID   string `json:"turnId"`
	PlayedMs int64  `json:"playedMs"`
}

// Type returns "playback.mark".
func (PlaybackMark) Type() string { return TypePlaybackMark }

// Decode parses one client text frame. It never panics. Every rejection is
// an *Error: CodeFrameTooLarge (fatal), CodeInvalidJSON, CodeUnknownType or
// CodeInvalidField, whose message names the event and the field. Members a
// known event does not define are ignored; a defined member of the wrong JSON
// type is an error. null counts as absent. Only the first problem is reported.
func Decode(frame []byte) (ClientEvent, error) {
	ev, err := decodeClient(frame)
	if err != nil {
		return nil, err
	}
	return ev, nil
}

func decodeClient(frame []byte) (ClientEvent, *Error) {
	if len(frame) > MaxFrame {
		return nil, frameError(CodeFrameTooLarge, "frame is %d bytes; the limit is %d", len(frame), MaxFrame)
	}
	members, perr := parseFrame(frame)
	if perr != nil {
		return nil, perr
	}
	typ, perr := eventType(members, ClientTypes, "client")
	if perr != nil {
		return nil, perr
	}
	o := &object{event: typ, members: members}
	var ev ClientEvent
	switch typ {
	case TypeSessionUpdate:
		ev = decodeSessionUpdate(o)
	case TypeUserText:
		text, ok := o.string("text", true)
		switch {
		case !ok:
		case strings.TrimSpace(text) == "":
			o.fail("text", "must not be blank")
		case len(text) > MaxUserText:
			o.fail("text", "must be at most %d bytes of UTF-8, got %d", MaxUserText, len(text))
		}
		ev = UserText{Text: text}
	case TypeHangup:
		ev = Hangup{}
	case TypePing:
		ev = Ping{ID: o.id("id", false)}
	case TypePlaybackMark:
		m := PlaybackMark{TurnID: o.id("turnId", true)}
		n, ok := o.int("playedMs", true)
		if ok && n < 0 {
			o.fail("playedMs", "must be 0 or more, got %d", n)
		}
		m.PlayedMs = n
		ev = m
	}
	if o.err != nil {
		return nil, o.err
	}
	return ev, nil
}

func decodeSessionUpdate(o *object) ClientEvent {
	var u SessionUpdate
	if b, ok := o.bool("textOnly", false); ok {
		u.TextOnly = &b
	}
	if a, ok := o.object("audio", false); ok {
		u.Audio = decodeAudio(a)
		o.merge(a)
	}
	u.Metadata = o.rawObject("metadata")
	return u
}

func decodeAudio(a *object) *Audio {
	enc, ok := a.string("encoding", true)
	if !ok {
		return nil
	}
	rates, known := sampleRates[Encoding(enc)]
	if !known {
		a.fail("encoding", `must be "pcm16" or "mulaw", got %q`, enc)
		return nil
	}
	out := &Audio{Encoding: Encoding(enc), SampleRate: defaultRate[Encoding(enc)]}
	if n, ok := a.int("sampleRate", false); ok {
		if !slices.ContainsFunc(rates, func(r int) bool { return int64(r) == n }) {
			a.fail("sampleRate", "must be one of %s for %s, got %d", oneOf(rates), enc, n)
			return nil
		}
		out.SampleRate = int(n)
	}
	return out
}

// eventType reads the "type" member and checks it against known.
func eventType(members map[string]json.RawMessage, known []string, side string) (string, *Error) {
	raw, ok := members["type"]
	if !ok || kind(raw) == "null" {
		return "", &Error{Code: CodeInvalidField, Field: "type",
			Message: `field "type" is required: every frame is a JSON object with a "type"`}
	}
	var typ string
	if kind(raw) != "string" || json.Unmarshal(raw, &typ) != nil {
		return "", &Error{Code: CodeInvalidField, Field: "type",
			Message: fmt.Sprintf(`field "type" must be a string, got %s`, kind(raw))}
	}
	if !slices.Contains(known, typ) {
		return "", &Error{Code: CodeUnknownType, Field: "type",
			Message: fmt.Sprintf(`field "type" names no %s event: %q; %s %s events are %s`, side, typ, Version, side, oneOf(known))}
	}
	return typ, nil
}

// EncodeClient renders a client event as a text frame, then checks it with
// Decode, so a Go client (tests, load tools) never sends a frame the server
// would refuse. The error is an *Error, as Decode's.
func EncodeClient(ev ClientEvent) ([]byte, error) {
	var body any
	switch e := ev.(type) {
	case SessionUpdate:
		body = struct {
			Type string `json:"type"`
			SessionUpdate
		}{TypeSessionUpdate, e}
	case UserText:
		body = struct {
			Type string `json:"type"`
			UserText
		}{TypeUserText, e}
	case Hangup:
		body = struct {
			Type string `json:"type"`
		}{TypeHangup}
	case Ping:
		body = struct {
			Type string `json:"type"`
			Ping
		}{TypePing, e}
	case PlaybackMark:
		body = struct {
			Type string `json:"type"`
			PlaybackMark
		}{TypePlaybackMark, e}
	default:
		return nil, frameError(CodeUnknownType, "cannot encode %T as a client event", ev)
	}
	b, err := marshal(body)
	if err != nil {
		return nil, frameError(CodeInvalidJSON, "%s: %v", ev.Type(), err)
	}
	if _, perr := decodeClient(b); perr != nil {
		return nil, perr
	}
	return b, nil
}

// marshal renders v as compact JSON without HTML escaping (& < > stay as
// they are, as in the REST API) and without a trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
}
