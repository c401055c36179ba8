package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/audio"
)

// The documents are the contract; these tests keep them and the codec in
// step: every example decodes, the example sessions obey the ordering rules,
// and every type, error code and close code is documented.

const (
	protocolDoc = "../../../docs/gateway-protocol.md"
	asyncAPIDoc = "../../../docs/asyncapi.yaml"
)

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// decodeAny decodes a client or a server frame, by its type.
func decodeAny(frame string) (client ClientEvent, server ServerEvent, err error) {
	var probe struct{ Type string }
	_ = json.Unmarshal([]byte(frame), &probe)
	if slices.Contains(ClientTypes, probe.Type) {
		client, err = Decode([]byte(frame))
		return client, nil, err
	}
	server, err = DecodeServer([]byte(frame))
	return nil, server, err
}

func TestDocJSONExamples(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, protocolDoc)
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(doc, -1)
	seen := map[string]bool{}
	for _, b := range blocks {
		frame := strings.TrimSpace(b[1])
		c, s, err := decodeAny(frame)
		if err != nil {
			t.Errorf("%s: example %s does not decode: %v", protocolDoc, frame, err)
			continue
		}
		if c != nil {
			seen[c.Type()] = true
		} else {
			seen[s.Type()] = true
		}
	}
	for _, typ := range slices.Concat(ClientTypes, ServerTypes) {
		if !seen[typ] {
			t.Errorf("%s has no ```json example of %s", protocolDoc, typ)
		}
		if !strings.Contains(doc, "### "+typ+"\n") {
			t.Errorf("%s has no section ### %s", protocolDoc, typ)
		}
	}
}

// TestDocSessions replays every ```text transcript in the protocol document:
// client frames decode (or are refused with exactly the error the next server
// line shows), server frames decode with consecutive seq and ordered times,
// and every turn follows the ordering rules (docSession.check).
func TestDocSessions(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, protocolDoc)
	blocks := regexp.MustCompile("(?s)```text\n(.*?)```").FindAllStringSubmatch(doc, -1)
	sessions, audioSessions := 0, 0
	for i, b := range blocks {
		ds := &docSession{t: t, name: fmt.Sprintf("%s text block %d", protocolDoc, i+1),
			deltas: map[string]string{}, done: map[string]TurnDone{}, audio: map[string]string{}}
		frames := 0
		for _, line := range strings.Split(b[1], "\n") {
			dir, frame, ok := strings.Cut(line, " ")
			if !ok || !strings.HasPrefix(frame, "{") || (dir != "→" && dir != "←") {
				continue // binary frames (▮) and comments
			}
			frames++
			if dir == "→" {
				ds.client(frame)
			} else {
				ds.server(frame)
			}
		}
		ds.end()
		if frames > 0 {
			sessions++
		}
		if ds.audioOn {
			audioSessions++
		}
	}
	if sessions < 4 || audioSessions < 1 {
		t.Errorf("%s: found %d example transcripts (%d with audio), want the booking session, the hangup, the interruption and the voice call with a barge-in",
			protocolDoc, sessions, audioSessions)
	}
}

// docSession checks one example transcript as a client would see it.
type docSession struct {
	t       *testing.T
	name    string
	lastSeq int64
	lastAt  time.Time
	pending error // the last client frame's decode error, until an error event shows it

	deltas     map[string]string   // turn → its deltas so far
	done       map[string]TurnDone // turns whose turn.done was sent
	unrecorded string              // the turn whose turn.done was sent and transcript not yet
	audioOn    bool                // the client sent textOnly false
	audio      map[string]string   // turn → "playing", "done" or "cleared"
	playing    string              // the turn whose audio is being sent
	paused     string              // the turn whose audio is paused (assistant.audio.pause)
	speech     bool                // between speech.started and speech.stopped
}

func (ds *docSession) errorf(format string, args ...any) {
	ds.t.Helper()
	ds.t.Errorf(ds.name+": "+format, args...)
}

func (ds *docSession) client(frame string) {
	ev, err := Decode([]byte(frame))
	if err != nil {
		ds.pending = err
		return
	}
	if u, ok := ev.(SessionUpdate); ok && u.TextOnly != nil && !*u.TextOnly {
		ds.audioOn = true
	}
}

func (ds *docSession) server(frame string) {
	ev, err := DecodeServer([]byte(frame))
	if err != nil {
		ds.errorf("server frame %s does not decode: %v", frame, err)
		return
	}
	seq, at := seqAt(ev)
	if ds.lastSeq != 0 && seq != ds.lastSeq+1 {
		ds.errorf("seq %d follows %d, want %d", seq, ds.lastSeq, ds.lastSeq+1)
	}
	if at.Before(ds.lastAt) {
		ds.errorf("seq %d at %v is before the previous event (%v)", seq, at, ds.lastAt)
	}
	ds.lastSeq, ds.lastAt = seq, at
	ds.check(ev, frame)
}

// check applies the ordering rules of "Turns, seq and transcripts" and
// "Audio" to one server event.
func (ds *docSession) check(ev ServerEvent, frame string) {
	switch e := ev.(type) {
	case SessionStarted:
		if e.Seq != 1 {
			ds.errorf("session.started has seq %d, want 1", e.Seq)
		}
	case ErrorEvent:
		want := ErrorEventFor(ds.pending)
		if ds.pending == nil || e.Code != want.Code || e.Message != want.Message || e.Field != want.Field || e.Fatal != want.Fatal {
			ds.errorf("error event %s does not match the codec's error for the frame before it: %v", frame, ds.pending)
		}
		ds.pending = nil
	case TextDelta:
		if _, over := ds.done[e.TurnID]; over {
			ds.errorf("delta for %s after its turn.done", e.TurnID)
		}
		ds.deltas[e.TurnID] += e.Text
	case TurnDone:
		if ds.audio[e.TurnID] == "cleared" {
			// What was heard: a prefix of what was sent.
			if !strings.HasPrefix(ds.deltas[e.TurnID], e.Text) {
				ds.errorf("turn.done %s text %q after a clear, want a prefix of its deltas %q", e.TurnID, e.Text, ds.deltas[e.TurnID])
			}
		} else if e.Text != ds.deltas[e.TurnID] {
			ds.errorf("turn.done %s text %q, want its deltas %q", e.TurnID, e.Text, ds.deltas[e.TurnID])
		}
		switch ds.audio[e.TurnID] {
		case "playing":
			ds.errorf("turn.done %s before its assistant.audio.done or .clear", e.TurnID)
		case "cleared":
			if !e.Interrupted {
				ds.errorf("turn.done %s after assistant.audio.clear has interrupted false", e.TurnID)
			}
		}
		ds.done[e.TurnID], ds.unrecorded = e, e.TurnID
	case Transcript:
		ds.transcript(e)
	case SpeechStarted, SpeechStopped:
		if !ds.audioOn {
			ds.errorf("%s in a text-only session", ev.Type())
		}
		if started := ev.Type() == TypeSpeechStarted; started == ds.speech {
			ds.errorf("%s at seq %d: speech.started and speech.stopped must alternate", ev.Type(), ds.lastSeq)
		}
		ds.speech = ev.Type() == TypeSpeechStarted
	case AudioStart:
		switch {
		case !ds.audioOn:
			ds.errorf("assistant.audio.start in a text-only session")
		case ds.playing != "":
			ds.errorf("assistant.audio.start %s while %s is still playing", e.TurnID, ds.playing)
		case ds.audio[e.TurnID] != "":
			ds.errorf("second assistant.audio.start for %s", e.TurnID)
		}
		if _, over := ds.done[e.TurnID]; over {
			ds.errorf("assistant.audio.start %s after its turn.done", e.TurnID)
		}
		ds.audio[e.TurnID], ds.playing = "playing", e.TurnID
	case AudioPause:
		switch {
		case ds.audio[e.TurnID] != "playing" || ds.playing != e.TurnID:
			ds.errorf("assistant.audio.pause %s while its audio is not playing", e.TurnID)
		case ds.paused != "":
			ds.errorf("assistant.audio.pause %s while %s is paused", e.TurnID, ds.paused)
		case !ds.speech:
			ds.errorf("assistant.audio.pause %s without the caller speaking (speech.started)", e.TurnID)
		}
		ds.paused = e.TurnID
	case AudioResume:
		if ds.paused != e.TurnID {
			ds.errorf("assistant.audio.resume %s without its assistant.audio.pause", e.TurnID)
		}
		ds.paused = ""
	case AudioDone, AudioClear:
		turn, state := docTurn(ev)
		if ds.audio[turn] != "playing" {
			ds.errorf("%s %s without a playing assistant.audio.start", ev.Type(), turn)
		}
		if ds.paused == turn && state == "done" {
			ds.errorf("assistant.audio.done %s while it is paused: a pause ends in a resume or a clear", turn)
		}
		if ds.paused == turn {
			ds.paused = ""
		}
		ds.audio[turn], ds.playing = state, ""
	}
}

func (ds *docSession) transcript(e Transcript) {
	switch {
	case !e.Final:
		if !ds.audioOn || e.Role != RoleUser {
			ds.errorf("non-final %s transcript %q outside an audio session's user speech", e.Role, e.Text)
		}
	case e.Role == RoleUser:
		// Transcript lines keep the order of turns, and a spoken turn is
		// final once the caller stopped and the assistant's audio is cut.
		if ds.unrecorded != "" {
			ds.errorf("user transcript %s before the transcript of assistant turn %s", e.TurnID, ds.unrecorded)
		}
		if ds.playing != "" || ds.speech {
			ds.errorf("final user transcript %s while audio plays or the caller speaks", e.TurnID)
		}
	default:
		d, ok := ds.done[e.TurnID]
		switch {
		case !ok:
			ds.errorf("assistant transcript %s before its turn.done", e.TurnID)
		case e.Text != d.Text:
			ds.errorf("assistant transcript %s text %q, want its turn.done text %q", e.TurnID, e.Text, d.Text)
		}
		ds.unrecorded = ""
	}
}

func (ds *docSession) end() {
	if ds.pending != nil {
		ds.errorf("a client frame is refused (%v) but no error event shows it", ds.pending)
	}
}

// docTurn returns the turn an audio.done or audio.clear ends and the state it
// leaves it in.
func docTurn(ev ServerEvent) (string, string) {
	if c, ok := ev.(AudioClear); ok {
		return c.TurnID, "cleared"
	}
	return ev.(AudioDone).TurnID, "done"
}

// seqAt returns any server event's Seq and At.
func seqAt(ev ServerEvent) (int64, time.Time) {
	v := reflect.ValueOf(ev)
	return v.FieldByName("Seq").Int(), v.FieldByName("At").Interface().(time.Time)
}

// The documents' `unsupported` examples show the messages the gateway sends
// (AudioUnavailable, AudioStaysOn, AudioLocked), word for word.
func TestDocUnsupportedMessages(t *testing.T) {
	t.Parallel()
	want := []string{AudioUnavailable().Message, AudioStaysOn().Message}
	for enc, rates := range sampleRates {
		for _, r := range rates {
			want = append(want, AudioLocked(Audio{enc, r}).Message)
		}
	}
	n := 0
	for _, path := range []string{protocolDoc, asyncAPIDoc} {
		for _, m := range regexp.MustCompile(`\{"type": ?"error".*\}`).FindAllString(readDoc(t, path), -1) {
			ev, err := DecodeServer([]byte(m))
			if err != nil {
				continue // TestDocJSONExamples and TestAsyncAPI report it
			}
			if e := ev.(ErrorEvent); e.Code == CodeUnsupported {
				n++
				if !slices.Contains(want, e.Message) {
					t.Errorf("%s: unsupported message %q is none the gateway sends: %q", path, e.Message, want)
				}
			}
		}
	}
	if n < 2 {
		t.Errorf("found %d examples of error unsupported, want one in each document", n)
	}
}

func TestDocCodes(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, protocolDoc)
	for _, code := range []int{CloseNormal, CloseGoingAway, CloseInternalError, CloseProtocolAbuse, CloseCallNotFound, CloseIdle, CloseCallEnded} {
		if !strings.Contains(doc, fmt.Sprintf("| `%d` |", code)) {
			t.Errorf("%s: close code %d is not in the close-code table", protocolDoc, code)
		}
	}
	for _, code := range []string{CodeInvalidJSON, CodeUnknownType, CodeInvalidField, CodeFrameTooLarge, CodeUnexpectedBinary, CodeTooManyErrors, CodeUnsupported, CodeInternal} {
		fatal := (&Error{Code: code}).Fatal()
		want := fmt.Sprintf("| `%s` | no |", code)
		if fatal {
			want = fmt.Sprintf("| `%s` | **yes** |", code)
		}
		if !strings.Contains(doc, want) {
			t.Errorf("%s: error code table lacks %q", protocolDoc, want)
		}
	}
	for _, n := range []string{"65,536", "4,000", "256", "32 levels", "20 within any 10 s"} {
		if !strings.Contains(doc, n) {
			t.Errorf("%s does not state the limit %q", protocolDoc, n)
		}
	}
	// What the document says of audio frames is internal/audio's behaviour.
	if audio.MaxWriteDuration != 2*time.Second || audio.FrameDuration != 20*time.Millisecond || DefaultAudio.Format().BytesPerFrame() != 640 {
		t.Errorf("an audio limit changed; update %s (Binary frames, Limits), %s and this test", protocolDoc, asyncAPIDoc)
	}
	for _, n := range []string{"**2 s**", "**20 ms**", "| 640 |", "| 1,920 |", "| 160 |"} {
		if !strings.Contains(doc, n) {
			t.Errorf("%s does not state the audio limit %q", protocolDoc, n)
		}
	}
	if MaxFrame != 65536 || MaxUserText != 4000 || MaxIDBytes != 256 || MaxDepth != 32 || BadFrameLimit != 20 || BadFrameWindow != 10*time.Second {
		t.Errorf("a limit changed; update %s, %s and this test", protocolDoc, asyncAPIDoc)
	}
}

// TestAsyncAPI checks the AsyncAPI document without a YAML parser: each
// message's name and `const` type are there, and every example payload (one
// JSON object on its line) decodes with the codec.
func TestAsyncAPI(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, asyncAPIDoc)
	if !strings.HasPrefix(doc, "asyncapi: 3.0.0\n") {
		t.Errorf("%s does not start with asyncapi: 3.0.0", asyncAPIDoc)
	}
	for _, typ := range slices.Concat(ClientTypes, ServerTypes) {
		for _, want := range []string{"name: " + typ + "\n", "const: " + typ + "\n"} {
			if !strings.Contains(doc, want) {
				t.Errorf("%s lacks %q", asyncAPIDoc, strings.TrimSpace(want))
			}
		}
	}
	examples := 0
	seen := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		_, frame, ok := strings.Cut(line, "payload: {")
		if !ok {
			continue
		}
		examples++
		frame = "{" + frame
		c, s, err := decodeAny(frame)
		switch {
		case err != nil:
			t.Errorf("%s: example %s does not decode: %v", asyncAPIDoc, frame, err)
		case c != nil:
			seen[c.Type()] = true
		default:
			seen[s.Type()] = true
		}
	}
	for _, typ := range slices.Concat(ClientTypes, ServerTypes) {
		if !seen[typ] {
			t.Errorf("%s has no example payload of %s", asyncAPIDoc, typ)
		}
	}
	var pe *Error
	if _, err := Decode([]byte(`{"type":"user.text","text":" "}`)); !errors.As(err, &pe) || pe.Message != `user.text: field "text" must not be blank` {
		t.Errorf("the documented blank-text error changed: %v", err)
	}
}
