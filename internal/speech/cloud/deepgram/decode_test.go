package deepgram

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"switchboard/internal/speech"
)

// result is a Results message as Deepgram writes it.
func result(text string, conf, dur float64, isFinal, speechFinal, fromFinalize bool) string {
	return fmt.Sprintf(`{"type":"Results","channel_index":[0,1],"duration":%v,"start":0,"is_final":%v,"speech_final":%v,"from_finalize":%v,`+
		`"channel":{"alternatives":[{"transcript":%q,"confidence":%v,"words":[]}]},"metadata":{"request_id":"r","model_info":{"name":"n","version":"v","arch":"a"},"model_uuid":"u"}}`,
		dur, isFinal, speechFinal, fromFinalize, text, conf)
}

func TestAssembler(t *testing.T) {
	partial := func(text string, conf float64) speech.Transcript {
		return speech.Transcript{Text: text, Confidence: conf}
	}
	final := func(text string, conf float64) speech.Transcript {
		return speech.Transcript{Text: text, Final: true, Confidence: conf}
	}
	tests := []struct {
		name     string
		messages []string
		want     []speech.Transcript
	}{
		{
			name: "interims then endpointing",
			messages: []string{
				result("book", 0.9, 0.3, false, false, false),
				result("book a table", 0.8, 0.9, false, false, false),
				result("Book a table.", 0.95, 1.0, true, true, false),
			},
			want: []speech.Transcript{partial("book", 0.9), partial("book a table", 0.8), final("Book a table.", 0.95)},
		},
		{
			name: "segments joined, weighted by duration, until speech_final",
			messages: []string{
				result("For four", 0.9, 1, true, false, false),
				result("people", 0.5, 1, false, false, false),
				result("people at seven.", 0.6, 3, true, true, false),
			},
			want: []speech.Transcript{partial("For four", 0.9), partial("For four people", 0.7), final("For four people at seven.", 0.675)},
		},
		{
			name: "Finalize answers an empty utterance with an empty final",
			messages: []string{
				result("", 0, 0, true, false, true),
			},
			want: []speech.Transcript{final("", 0)},
		},
		{
			name: "from_finalize closes the segments so far",
			messages: []string{
				result("Yes", 0.99, 0.5, true, false, false),
				result("please", 0.9, 0.5, true, false, true),
			},
			want: []speech.Transcript{partial("Yes", 0.99), final("Yes please", 0.945)},
		},
		{
			name: "UtteranceEnd closes segments that never got speech_final",
			messages: []string{
				result("Tuesday", 0.8, 1, true, false, false),
				`{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.1}`,
				`{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.1}`,
			},
			want: []speech.Transcript{partial("Tuesday", 0.8), final("Tuesday", 0.8)},
		},
		{
			name: "silence: empty interims and an empty speech_final say nothing",
			messages: []string{
				result("", 0, 1, false, false, false),
				result("", 0, 1, true, true, false),
				`{"type":"SpeechStarted","channel":[0,1],"timestamp":9.54}`,
				`{"type":"Metadata","request_id":"r","duration":3.2,"channels":1}`,
				`{"type":"SomethingNew","x":1}`,
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		var a assembler
		var got []speech.Transcript
		for _, raw := range tt.messages {
			m, err := decodeMessage([]byte(raw))
			if err != nil {
				t.Fatalf("%s: decodeMessage(%s): %v", tt.name, raw, err)
			}
			if tr, ok := a.apply(m); ok {
				tr.Confidence = float64(int(tr.Confidence*1000+0.5)) / 1000
				got = append(got, tr)
			}
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestDecodeMessageRejects(t *testing.T) {
	for _, raw := range []string{
		`not json`,
		`[1,2]`,
		`{"type":"Results"}`,
		`{"type":"Results","channel":[0,1]}`,
		`{"type":"Results","channel":{"alternatives":"x"}}`,
	} {
		if _, err := decodeMessage([]byte(raw)); err == nil {
			t.Errorf("decodeMessage(%s) = nil error, want one", raw)
		}
	}
}

func TestParseError(t *testing.T) {
	tests := []struct {
		body, code, msg string
		ok              bool
	}{
		{`{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"x"}`, "INVALID_AUTH", "Invalid credentials.", true},
		{`{"category":"INVALID_JSON","message":"Invalid JSON submitted.","details":"missing field text","request_id":"x"}`, "INVALID_JSON", "Invalid JSON submitted: missing field text", true},
		{`{"request_id":"x"}`, "", "", false},
		{`Bad Gateway`, "", "", false},
	}
	for _, tt := range tests {
		code, msg, ok := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg || ok != tt.ok {
			t.Errorf("parseError(%s) = %q, %q, %v; want %q, %q, %v", tt.body, code, msg, ok, tt.code, tt.msg, tt.ok)
		}
	}
}

// FuzzDecode feeds arbitrary server messages, one per line, through the
// decoder and the assembler. They must not panic, and must keep their
// promises: partials carry text, confidences are within [0, 1], texts are
// trimmed valid UTF-8, and a final leaves no segment behind.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]string{
		{result("book", 0.9, 0.3, false, false, false), result("Book a table.", 0.95, 1, true, true, false)},
		{result("For four", 0.9, 1, true, false, false), `{"type":"UtteranceEnd","channel":[0,1],"last_word_end":2.1}`},
		{result("", 0, 0, true, false, true)},
		{`{"type":"Results","channel":{"alternatives":[]},"is_final":true,"speech_final":true}`},
		{`{"type":"Results","duration":-1e308,"channel":{"alternatives":[{"transcript":" x ","confidence":1e308}]},"is_final":true}`},
		{`{"type":"Metadata"}`, `{"type":1}`, `null`},
	} {
		f.Add(strings.Join(seed, "\n"))
	}
	f.Fuzz(func(t *testing.T, stream string) {
		var a assembler
		for _, line := range bytes.Split([]byte(stream), []byte("\n")) {
			m, err := decodeMessage(line)
			if err != nil {
				continue
			}
			tr, ok := a.apply(m)
			if !ok {
				continue
			}
			if !(tr.Confidence >= 0 && tr.Confidence <= 1) {
				t.Fatalf("message %s: confidence %v outside [0, 1]", line, tr.Confidence)
			}
			if !utf8.ValidString(tr.Text) || strings.TrimSpace(tr.Text) != tr.Text {
				t.Fatalf("message %s: text %q not trimmed valid UTF-8", line, tr.Text)
			}
			if !tr.Final && tr.Text == "" {
				t.Fatalf("message %s: empty partial", line)
			}
			if tr.Final && len(a.segments) != 0 {
				t.Fatalf("message %s: final left %d segments behind", line, len(a.segments))
			}
		}
	})
}
