// Package sse reads server-sent event streams (the WHATWG "text/event-stream"
// format) as both LLM APIs send them, with every line and event bounded so a
// hostile or broken server cannot make the reader hold more than a few
// megabytes.
package sse

import (
	"bytes"
	"errors"
	"io"
)

// DefaultMaxLen bounds one line and one event's data: 1 MiB, far above any
// real chunk (a few hundred bytes) yet small enough to be harmless.
const DefaultMaxLen = 1 << 20

// ErrTooLong means a line or an event's data exceeded the reader's bound.
// The stream cannot be resynchronized after it, so every later Next returns it.
var ErrTooLong = errors.New("sse: line or event exceeds the size limit")

// Event is one dispatched event.
type Event struct {
	// Type is the "event:" field, "message" when the event had none.
	Type string
	// Data is the "data:" fields joined by newlines.
	Data string
	// ID is the last "id:" seen on the stream.
	ID string
}

// Reader splits a stream into events. Lines may end in LF, CRLF or CR;
// comments (lines starting with ':') and unknown fields are skipped; a
// leading byte-order mark is dropped. At the end of the input an event
// missing its closing blank line is discarded, as the specification says,
// so a cut-off stream never yields half an event.
type Reader struct {
	src        io.Reader
	srcErr     error // the source's error, returned once buf is drained
	buf        []byte
	start, end int // the unread part of buf
	max        int
	line       []byte
	data       []byte
	typ        string
	id         string
	skipLF     bool // the last line ended in CR; a following LF belongs to it
	begun      bool // the first line, which may start with a byte-order mark, is read
	err        error
}

// NewReader returns a Reader over r that refuses lines and events longer
// than maxLen bytes (DefaultMaxLen when maxLen <= 0).
func NewReader(r io.Reader, maxLen int) *Reader {
	if maxLen <= 0 {
		maxLen = DefaultMaxLen
	}
	return &Reader{src: r, buf: make([]byte, 4096), max: maxLen}
}

// Next returns the next event. It returns io.EOF at the end of the input,
// ErrTooLong past the bound, or the underlying reader's error; once it has
// returned an error it returns the same error again.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	for {
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return Event{}, err
		}
		if !r.begun {
			r.begun = true
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
		}
		if len(line) == 0 {
			if len(r.data) == 0 {
				r.typ = ""
				continue
			}
			ev := Event{Type: r.typ, Data: string(r.data[:len(r.data)-1]), ID: r.id}
			if ev.Type == "" {
				ev.Type = "message"
			}
			r.typ, r.data = "", r.data[:0]
			return ev, nil
		}
		if err := r.field(line); err != nil {
			r.err = err
			return Event{}, err
		}
	}
}

// field applies one non-empty line to the event being built.
func (r *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value, found := bytes.Cut(line, []byte{':'})
	if found && len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	switch string(name) {
	case "event":
		r.typ = string(value)
	case "data":
		return r.appendData(value)
	case "error":
		// Not in the specification: llama.cpp's server writes "error: {...}"
		// instead of a data line when generation fails. Reading it as an
		// error event keeps the server's message instead of losing it.
		r.typ = "error"
		return r.appendData(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.id = string(value)
		}
	}
	// "retry" and unknown fields are ignored.
	return nil
}

func (r *Reader) appendData(value []byte) error {
	if len(r.data)+len(value)+1 > r.max {
		return ErrTooLong
	}
	r.data = append(r.data, value...)
	r.data = append(r.data, '\n')
	return nil
}

// readLine returns the next line without its terminator (LF, CRLF or CR).
// The returned slice is valid until the next call. An unterminated last line
// is dropped: the input ended mid-line, and io.EOF (or the read error) is
// returned instead.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	empty := 0
	for {
		if r.start == r.end {
			if r.srcErr != nil {
				return nil, r.srcErr
			}
			n, err := r.src.Read(r.buf)
			r.start, r.end, r.srcErr = 0, n, err
			if n == 0 && err == nil {
				if empty++; empty >= 100 {
					return nil, io.ErrNoProgress
				}
			}
			continue
		}
		chunk := r.buf[r.start:r.end]
		if r.skipLF {
			r.skipLF = false
			if chunk[0] == '\n' {
				r.start++
				continue
			}
		}
		i := bytes.IndexAny(chunk, "\r\n")
		if i < 0 {
			if err := r.grow(chunk); err != nil {
				return nil, err
			}
			r.start = r.end
			continue
		}
		if err := r.grow(chunk[:i]); err != nil {
			return nil, err
		}
		r.start += i + 1
		r.skipLF = chunk[i] == '\r'
		return r.line, nil
	}
}

func (r *Reader) grow(b []byte) error {
	if len(r.line)+len(b) > r.max {
		return ErrTooLong
	}
	r.line = append(r.line, b...)
	return nil
}
