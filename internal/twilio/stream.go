package twilio

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The Media Streams wire protocol ("Media Streams - WebSocket Messages",
// https://www.twilio.com/docs/voice/media-streams/websocket-messages).
// Every frame is a JSON text message with an "event": from Twilio
// connected, start, media, dtmf, mark and stop; to Twilio media, mark and
// clear (bidirectional streams only: <Connect><Stream>).

// Bounds of what a stream may send us.
const (
	// maxStreamMessage bounds one websocket message: a start message with
	// its customParameters, or a media message, is well under it.
	maxStreamMessage = 64 << 10
	// maxMediaPayload bounds the audio of one media message: one second
	// of μ-law (Twilio sends 20 ms chunks).
	maxMediaPayload = 8000
	// maxMarkName bounds a mark name echoed back.
	maxMarkName = 256
)

// streamMessage is one message either way; only the member named by Event
// is set.
type streamMessage struct {
	Event          string `json:"event"`
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	StreamSid      string `json:"streamSid,omitempty"`
	// connected
	Protocol string `json:"protocol,omitempty"`
	Version  string `json:"version,omitempty"`

	Start *streamStart `json:"start,omitempty"`
	Media *streamMedia `json:"media,omitempty"`
	Mark  *streamMark  `json:"mark,omitempty"`
	DTMF  *streamDTMF  `json:"dtmf,omitempty"`
	Stop  *streamStop  `json:"stop,omitempty"`
}

type streamStart struct {
	StreamSid        string            `json:"streamSid"`
	AccountSid       string            `json:"accountSid"`
	CallSid          string            `json:"callSid"`
	Tracks           []string          `json:"tracks"`
	CustomParameters map[string]string `json:"customParameters"`
	MediaFormat      struct {
		Encoding   string `json:"encoding"`
		SampleRate int    `json:"sampleRate"`
		Channels   int    `json:"channels"`
	} `json:"mediaFormat"`
}

type streamMedia struct {
	Track     string `json:"track,omitempty"`
	Chunk     string `json:"chunk,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
	Payload   string `json:"payload"`
}

type streamMark struct {
	Name string `json:"name"`
}

type streamDTMF struct {
	Track string `json:"track,omitempty"`
	Digit string `json:"digit"`
}

type streamStop struct {
	AccountSid string `json:"accountSid"`
	CallSid    string `json:"callSid"`
}

// errUnknownEvent is a message of an event this side does not know: it is
// counted and skipped (Twilio may add events).
var errUnknownEvent = errors.New("twilio: unknown stream event")

// decodeStreamMessage parses one message from Twilio and checks the member
// its event needs; for media it also decodes the payload (μ-law bytes).
// Nothing it is given makes it panic (FuzzStreamMessage).
func decodeStreamMessage(b []byte) (streamMessage, []byte, error) {
	var m streamMessage
	if len(b) > maxStreamMessage {
		return m, nil, fmt.Errorf("twilio: stream message of %d bytes, at most %d", len(b), maxStreamMessage)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, nil, fmt.Errorf("twilio: stream message is not JSON: %w", err)
	}
	switch m.Event {
	case "connected", "stop":
		return m, nil, nil
	case "start":
		if m.Start == nil || m.Start.CallSid == "" || m.Start.StreamSid == "" {
			return m, nil, errors.New("twilio: start message without start.callSid and start.streamSid")
		}
		return m, nil, nil
	case "media":
		if m.Media == nil || m.Media.Payload == "" {
			return m, nil, errors.New("twilio: media message without a payload")
		}
		if t := m.Media.Track; t != "" && t != "inbound" {
			return m, nil, fmt.Errorf("twilio: media of track %q, want inbound", t)
		}
		if base64.StdEncoding.DecodedLen(len(m.Media.Payload)) > maxMediaPayload+3 {
			return m, nil, fmt.Errorf("twilio: media payload over %d bytes", maxMediaPayload)
		}
		audio, err := base64.StdEncoding.DecodeString(m.Media.Payload)
		if err != nil {
			return m, nil, fmt.Errorf("twilio: media payload is not base64: %w", err)
		}
		return m, audio, nil
	case "dtmf":
		if m.DTMF == nil || len(m.DTMF.Digit) != 1 || !validDigit(m.DTMF.Digit[0]) {
			return m, nil, errors.New("twilio: dtmf message without one digit of 0-9 * # A-D")
		}
		return m, nil, nil
	case "mark":
		if m.Mark == nil || m.Mark.Name == "" || len(m.Mark.Name) > maxMarkName {
			return m, nil, errors.New("twilio: mark message without a name")
		}
		return m, nil, nil
	}
	return m, nil, fmt.Errorf("%w %q", errUnknownEvent, m.Event)
}

// Outgoing messages are written by hand: media goes out 50 times a second
// and its only free text is the stream SID, checked at start to be a SID.

// appendMedia appends {"event":"media","streamSid":…,"media":{"payload":…}}.
func appendMedia(b []byte, streamSid string, audio []byte) []byte {
	b = append(b, `{"event":"media","streamSid":"`...)
	b = append(b, streamSid...)
	b = append(b, `","media":{"payload":"`...)
	b = base64.StdEncoding.AppendEncode(b, audio)
	return append(b, `"}}`...)
}

// appendMark appends {"event":"mark","streamSid":…,"mark":{"name":…}}.
func appendMark(b []byte, streamSid, name string) []byte {
	b = append(b, `{"event":"mark","streamSid":"`...)
	b = append(b, streamSid...)
	b = append(b, `","mark":{"name":`...)
	q, _ := json.Marshal(name) // a string always marshals
	b = append(b, q...)
	return append(b, `}}`...)
}

// appendClear appends {"event":"clear","streamSid":…}.
func appendClear(b []byte, streamSid string) []byte {
	b = append(b, `{"event":"clear","streamSid":"`...)
	b = append(b, streamSid...)
	return append(b, `"}`...)
}

// Mark names: the line sends a mark after each frame of the assistant's
// audio, named for the turn and how much of it has been sent, so Twilio's
// echo (when playback reaches it) tells how much the caller has heard:
// "sb:<ms>:<turnID>" (the turn id last, so it may hold colons).
const markPrefix = "sb:"

func markName(turnID string, ms int64) string {
	return markPrefix + strconv.FormatInt(ms, 10) + ":" + turnID
}

// parseMark reads a mark name of markName; ok is false for any other.
func parseMark(name string) (turnID string, ms int64, ok bool) {
	rest, found := strings.CutPrefix(name, markPrefix)
	if !found {
		return "", 0, false
	}
	n, turnID, found := strings.Cut(rest, ":")
	if !found || turnID == "" {
		return "", 0, false
	}
	ms, err := strconv.ParseInt(n, 10, 64)
	if err != nil || ms < 0 {
		return "", 0, false
	}
	return turnID, ms, true
}
