package sse

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll returns every event of input and the error that ended the stream.
func readAll(r io.Reader, maxLen int) ([]Event, error) {
	rd := NewReader(r, maxLen)
	var evs []Event
	for {
		ev, err := rd.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	msg := func(data string) Event { return Event{Type: "message", Data: data} }
	tests := []struct {
		name  string
		input string
		want  []Event
	}{
		{"openai chunk", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{msg(`{"a":1}`), msg("[DONE]")}},
		{"named events", "event: ping\ndata: {\"type\": \"ping\"}\n\n", []Event{{Type: "ping", Data: `{"type": "ping"}`}}},
		{"no space after colon", "data:x\n\n", []Event{msg("x")}},
		{"only the first space is dropped", "data:  x\n\n", []Event{msg(" x")}},
		{"multi-line data", "data: a\ndata: b\ndata\n\n", []Event{msg("a\nb\n")}},
		{"empty data field dispatches", "data:\n\n", []Event{msg("")}},
		{"comments skipped", ": keep-alive\n: OPENROUTER PROCESSING\ndata: x\n\n", []Event{msg("x")}},
		{"CRLF", "event: e\r\ndata: x\r\n\r\n", []Event{{Type: "e", Data: "x"}}},
		{"bare CR", "data: x\rdata: y\r\r", []Event{msg("x\ny")}},
		{"mixed terminators", "data: a\r\n\rdata: b\n\n", []Event{msg("a"), msg("b")}},
		{"BOM", "\xEF\xBB\xBFdata: x\n\n", []Event{msg("x")}},
		{"event without data is not dispatched", "event: e\n\ndata: x\n\n", []Event{msg("x")}},
		{"id persists", "id: 7\ndata: a\n\ndata: b\n\n", []Event{{Type: "message", Data: "a", ID: "7"}, {Type: "message", Data: "b", ID: "7"}}},
		{"unknown fields and retry ignored", "retry: 10\nfoo: bar\ndata: x\n\n", []Event{msg("x")}},
		{"llama.cpp error line", "error: {\"code\":500}\n\n", []Event{{Type: "error", Data: `{"code":500}`}}},
		{"unterminated event discarded", "data: a\n\ndata: b\n", []Event{msg("a")}},
		{"unterminated line discarded", "data: a\n\ndata: {\"cut", []Event{msg("a")}},
		{"empty input", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []struct {
				name string
				r    io.Reader
			}{
				{"whole", strings.NewReader(tt.input)},
				{"one byte at a time", iotest.OneByteReader(strings.NewReader(tt.input))},
			} {
				got, err := readAll(r.r, 0)
				if !errors.Is(err, io.EOF) {
					t.Errorf("Next(%q) [%s]: ended with %v, want io.EOF", tt.input, r.name, err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Next(%q) [%s]:\n got %q\nwant %q", tt.input, r.name, got, tt.want)
				}
			}
		})
	}
}

func TestReaderBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  []Event
	}{
		{"line at the limit", "data:" + strings.Repeat("x", 11) + "\n\n", []Event{{Type: "message", Data: strings.Repeat("x", 11)}}},
		{"line over the limit", "data: " + strings.Repeat("x", 11) + "\n\n", nil},
		{"comment over the limit", ":" + strings.Repeat("x", 16) + "\n\n", nil},
		{"event data over the limit", "data: 12345\ndata: 12345\ndata: 12345\n\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readAll(strings.NewReader(tt.input), 16)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Next(%q) max 16: got %q, want %q", tt.input, got, tt.want)
			}
			wantErr := io.EOF
			if tt.want == nil {
				wantErr = ErrTooLong
			}
			if !errors.Is(err, wantErr) {
				t.Errorf("Next(%q) max 16: ended with %v, want %v", tt.input, err, wantErr)
			}
		})
	}
}

// TestReaderEndlessLine checks that a server sending one line forever is cut
// off at the bound rather than buffered.
func TestReaderEndlessLine(t *testing.T) {
	t.Parallel()
	endless := io.MultiReader(strings.NewReader("data: "), &repeatReader{b: 'x'})
	rd := NewReader(endless, 1<<16)
	if _, err := rd.Next(); !errors.Is(err, ErrTooLong) {
		t.Fatalf("Next(endless line) = %v, want ErrTooLong", err)
	}
	if _, err := rd.Next(); !errors.Is(err, ErrTooLong) {
		t.Errorf("Next after ErrTooLong = %v, want ErrTooLong again", err)
	}
}

type repeatReader struct{ b byte }

func (r *repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.b
	}
	return len(p), nil
}

func TestReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	in := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom))
	got, err := readAll(in, 0)
	if want := []Event{{Type: "message", Data: "a"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("events before the error: got %q, want %q", got, want)
	}
	if !errors.Is(err, boom) {
		t.Errorf("error = %v, want %v", err, boom)
	}
}

// FuzzReader checks that no input panics the reader, that every event
// respects the bound, and that how the input is split into reads does not
// change the events.
func FuzzReader(f *testing.F) {
	for _, seed := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\"}\r\n\r\n",
		": comment\rdata: x\r\r",
		"\xEF\xBB\xBFid: 1\nretry: 5\nerror: {}\n\n",
		"data: a\ndata: b\n\ndata: cut",
		"data:" + strings.Repeat("y", 100) + "\n\n",
	} {
		f.Add([]byte(seed))
	}
	const maxLen = 64
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, errWhole := readAll(bytes.NewReader(in), maxLen)
		split, errSplit := readAll(iotest.OneByteReader(bytes.NewReader(in)), maxLen)
		for _, ev := range whole {
			if len(ev.Data) > maxLen || len(ev.Type) > maxLen || len(ev.ID) > maxLen {
				t.Fatalf("event over the %d-byte bound: %q", maxLen, ev)
			}
		}
		if !reflect.DeepEqual(whole, split) || !errors.Is(errWhole, errSplit) {
			t.Fatalf("reads split differently give different events:\nwhole %q, %v\nsplit %q, %v", whole, errWhole, split, errSplit)
		}
	})
}
