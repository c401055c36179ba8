package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
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
// and every assistant turn is deltas, then turn.done with their concatenation,
// then its transcript.
func TestDocSessions(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, protocolDoc)
	blocks := regexp.MustCompile("(?s)```text\n(.*?)```").FindAllStringSubmatch(doc, -1)
	sessions := 0
	for i, b := range blocks {
		name := fmt.Sprintf("%s text block %d", protocolDoc, i+1)
		var (
			lastSeq   int64
			lastAt    time.Time
			pendingEr error // the last client frame's decode error, until an error event shows it
			deltas    = map[string]string{}
			done      = map[string]string{}
			frames    int
		)
		for _, line := range strings.Split(b[1], "\n") {
			dir, frame, ok := strings.Cut(line, " ")
			if !ok || !strings.HasPrefix(frame, "{") || (dir != "→" && dir != "←") {
				continue
			}
			frames++
			if dir == "→" {
				if _, err := Decode([]byte(frame)); err != nil {
					pendingEr = err
				}
				continue
			}
			ev, err := DecodeServer([]byte(frame))
			if err != nil {
				t.Errorf("%s: server frame %s does not decode: %v", name, frame, err)
				continue
			}
			seq, at := reflectSeqAt(ev)
			if lastSeq != 0 && seq != lastSeq+1 {
				t.Errorf("%s: seq %d follows %d, want %d", name, seq, lastSeq, lastSeq+1)
			}
			if at.Before(lastAt) {
				t.Errorf("%s: seq %d at %v is before the previous event (%v)", name, seq, at, lastAt)
			}
			lastSeq, lastAt = seq, at
			switch e := ev.(type) {
			case SessionStarted:
				if seq != 1 {
					t.Errorf("%s: session.started has seq %d, want 1", name, seq)
				}
			case ErrorEvent:
				want := ErrorEventFor(pendingEr)
				if pendingEr == nil || e.Code != want.Code || e.Message != want.Message || e.Field != want.Field || e.Fatal != want.Fatal {
					t.Errorf("%s: error event %s does not match the codec's error for the frame before it: %v", name, frame, pendingEr)
				}
				pendingEr = nil
			case TextDelta:
				if _, over := done[e.TurnID]; over {
					t.Errorf("%s: delta for %s after its turn.done", name, e.TurnID)
				}
				deltas[e.TurnID] += e.Text
			case TurnDone:
				if e.Text != deltas[e.TurnID] {
					t.Errorf("%s: turn.done %s text %q, want its deltas %q", name, e.TurnID, e.Text, deltas[e.TurnID])
				}
				done[e.TurnID] = e.Text
			case Transcript:
				if e.Role == RoleAssistant && e.Text != done[e.TurnID] {
					t.Errorf("%s: assistant transcript %s text %q, want its turn.done text %q", name, e.TurnID, e.Text, done[e.TurnID])
				}
				if !e.Final {
					t.Errorf("%s: transcript %s is not final in a text session", name, e.TurnID)
				}
			}
		}
		if pendingEr != nil {
			t.Errorf("%s: a client frame is refused (%v) but no error event shows it", name, pendingEr)
		}
		if frames > 0 {
			sessions++
		}
	}
	if sessions < 3 {
		t.Errorf("%s: found %d example transcripts, want the booking session, the hangup and the interruption", protocolDoc, sessions)
	}
}

func reflectSeqAt(ev ServerEvent) (int64, time.Time) {
	switch e := ev.(type) {
	case SessionStarted:
		return e.Seq, e.At
	case TextDelta:
		return e.Seq, e.At
	case TurnDone:
		return e.Seq, e.At
	case Transcript:
		return e.Seq, e.At
	case CallEnded:
		return e.Seq, e.At
	case ErrorEvent:
		return e.Seq, e.At
	case Pong:
		return e.Seq, e.At
	}
	return 0, time.Time{}
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
