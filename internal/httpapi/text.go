package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchboard/internal/apperr"
)

// The text rules every request body follows, decided here once for both
// stores: PostgreSQL refuses NUL and invalid UTF-8 in text (a 500 if they
// reach a query) while SQLite stores them, and encoding/json silently
// replaces invalid UTF-8 and lone surrogate escapes with U+FFFD and keeps the
// last of repeated keys. So before a JSON body is decoded, checkJSONText walks
// it once and refuses, naming the field:
//   - a string (value or key) holding NUL, raw or escaped as \u0000;
//   - a string holding bytes that are not UTF-8 (UTF-8-encoded surrogates included);
//   - a \u escape of a lone UTF-16 surrogate (\ud800 not followed by a low one);
//   - an object naming the same key twice (after unescaping).
//
// Raw JSON kept as sent (flows, tool parameters, schemas, contact metadata)
// is covered too: the walk covers the whole body.

// maxTextErrors bounds how many text errors one body reports.
const maxTextErrors = 100

// maxTextDepth stops the walk where encoding/json stops decoding, so a body
// of a million '[' costs no more than a small stack.
const maxTextDepth = 10000

// textProblem says what is wrong with text that arrived outside JSON (CSV
// cells, path and query values): "" when nothing.
func textProblem(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return problemNUL
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return problemUTF8
		}
		i += n
	}
	return ""
}

// frame is one open object or array of the walk.
type frame struct {
	array bool
	index int    // array: index of the current element
	key   []byte // object: the current key, decoded
	// keys holds the keys seen in this object, to find repeats; set is
	// used instead once the object has many keys.
	keys [][]byte
	set  map[string]struct{}
}

// textWalk is the state of one walk over a JSON body.
type textWalk struct {
	data  []byte
	i     int
	stack []frame
	errs  *apperr.Fields
	n     int // errors found
}

// checkJSONText walks data (one JSON value) and adds an error for every
// string and object that breaks the text rules. It stops silently where
// data is not JSON: syntax errors are encoding/json's to report.
func checkJSONText(data []byte, errs *apperr.Fields) {
	w := textWalk{data: data, errs: errs}
	w.run()
}

// pathOf names the position the frames lead to: "name", "contacts[2].name".
// The root object's members are the top-level fields.
func pathOf(frames []frame) string {
	var b strings.Builder
	for i := range frames {
		f := &frames[i]
		if f.array {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(f.index))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(f.key)
	}
	return b.String()
}

func (w *textWalk) add(field, msg string) {
	if w.n < maxTextErrors {
		w.errs.Add(field, "%s", msg)
	}
	w.n++
}

func (w *textWalk) ws() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *textWalk) push(array bool) bool {
	if len(w.stack) >= maxTextDepth {
		return false
	}
	if len(w.stack) < cap(w.stack) {
		// Reuse the key slice an earlier sibling at this depth left.
		w.stack = w.stack[:len(w.stack)+1]
		f := &w.stack[len(w.stack)-1]
		f.array, f.index, f.key, f.keys, f.set = array, 0, nil, f.keys[:0], nil
		return true
	}
	w.stack = append(w.stack, frame{array: array})
	return true
}

func (w *textWalk) pop() { w.stack = w.stack[:len(w.stack)-1] }

func (w *textWalk) run() {
values:
	for {
		// A value starts here.
		w.ws()
		if w.i >= len(w.data) {
			return
		}
		switch w.data[w.i] {
		case '{':
			w.i++
			if !w.push(false) {
				return
			}
			w.ws()
			if w.i < len(w.data) && w.data[w.i] == '}' {
				w.i++
				w.pop()
				break
			}
			if !w.member() {
				return
			}
			continue values
		case '[':
			w.i++
			if !w.push(true) {
				return
			}
			w.ws()
			if w.i < len(w.data) && w.data[w.i] == ']' {
				w.i++
				w.pop()
				break
			}
			continue values
		case '"':
			_, problem, ok := w.str(false)
			if !ok {
				return
			}
			if problem != "" {
				field := "body" // a document that is one string
				if len(w.stack) > 0 {
					field = pathOf(w.stack)
				}
				w.add(field, problem)
			}
		default:
			// A number, true, false or null: skip to its end.
		scalar:
			for w.i < len(w.data) {
				switch w.data[w.i] {
				case ',', '}', ']', ' ', '\t', '\n', '\r':
					break scalar
				}
				w.i++
			}
		}
		// After a value: close what ends here, then go on to the next element.
		for {
			if len(w.stack) == 0 {
				return
			}
			w.ws()
			if w.i >= len(w.data) {
				return
			}
			top := &w.stack[len(w.stack)-1]
			switch c := w.data[w.i]; {
			case c == ',':
				w.i++
				if top.array {
					top.index++
				} else if !w.member() {
					return
				}
				continue values
			case c == '}' && !top.array, c == ']' && top.array:
				w.i++
				w.pop()
			default:
				return
			}
		}
	}
}

// member reads `"key":` in the object on top of the stack and checks the key.
func (w *textWalk) member() bool {
	w.ws()
	if w.i >= len(w.data) || w.data[w.i] != '"' {
		return false
	}
	key, problem, ok := w.str(true)
	if !ok {
		return false
	}
	top := &w.stack[len(w.stack)-1]
	if problem != "" {
		field := "body"
		if len(w.stack) > 1 {
			field = pathOf(w.stack[:len(w.stack)-1])
		}
		w.add(field, "has a key that is not valid text: keys "+problem)
		key = []byte(strings.ToValidUTF8(strings.ReplaceAll(string(key), "\x00", "\uFFFD"), "\uFFFD"))
	}
	top.key = key
	if w.seen(top, key) {
		w.add(pathOf(w.stack), "is given more than once")
	}
	w.ws()
	if w.i >= len(w.data) || w.data[w.i] != ':' {
		return false
	}
	w.i++
	return true
}

// seen records key in the object f and reports whether it was there already.
func (w *textWalk) seen(f *frame, key []byte) bool {
	if f.set != nil {
		if _, ok := f.set[string(key)]; ok {
			return true
		}
		f.set[string(key)] = struct{}{}
		return false
	}
	for _, k := range f.keys {
		if bytes.Equal(k, key) {
			return true
		}
	}
	f.keys = append(f.keys, key)
	if len(f.keys) > 32 { // past a few dozen keys a map is cheaper than a scan
		f.set = make(map[string]struct{}, 2*len(f.keys))
		for _, k := range f.keys {
			f.set[string(k)] = struct{}{}
		}
	}
	return false
}

// Problems a string can have.
const (
	problemNUL       = "must not contain NUL (U+0000) characters"
	problemUTF8      = "must be valid UTF-8"
	problemSurrogate = `must not contain a lone UTF-16 surrogate escape (\u`
)

// str reads the string that starts at w.i (a '"'). It returns the string,
// decoded when decode is set (keys; a sub-slice of the body when it has no
// escapes), what is wrong with it ("" when nothing), and false if the data
// ends or stops being JSON inside the string.
func (w *textWalk) str(decode bool) ([]byte, string, bool) {
	w.i++ // the opening quote
	start := w.i
	escaped := false
	problem := ""
	note := func(p string) {
		if problem == "" {
			problem = p
		}
	}
	for w.i < len(w.data) {
		c := w.data[w.i]
		switch {
		case c == '"':
			raw := w.data[start:w.i]
			w.i++
			if !decode || !escaped {
				return raw, problem, true
			}
			var s string
			if err := json.Unmarshal(w.data[start-1:w.i], &s); err != nil {
				return raw, problem, true // not JSON: encoding/json reports it
			}
			return []byte(s), problem, true
		case c == '\\':
			escaped = true
			if w.i+1 >= len(w.data) {
				return nil, problem, false
			}
			if w.data[w.i+1] != 'u' {
				w.i += 2
				continue
			}
			r, ok := w.hex4(w.i + 2)
			if !ok {
				return nil, problem, false
			}
			w.i += 6
			switch {
			case r == 0:
				note(problemNUL)
			case r >= 0xDC00 && r <= 0xDFFF:
				note(problemSurrogate + strconv.FormatInt(int64(r), 16) + ")")
			case r >= 0xD800 && r <= 0xDBFF:
				// A high surrogate must be followed by an escaped low one.
				lo, ok := rune(0), false
				if w.i+1 < len(w.data) && w.data[w.i] == '\\' && w.data[w.i+1] == 'u' {
					lo, ok = w.hex4(w.i + 2)
				}
				if ok && lo >= 0xDC00 && lo <= 0xDFFF {
					w.i += 6
				} else {
					note(problemSurrogate + strconv.FormatInt(int64(r), 16) + ")")
				}
			}
		case c == 0:
			note(problemNUL)
			w.i++
		case c < utf8.RuneSelf:
			w.i++
		default:
			r, n := utf8.DecodeRune(w.data[w.i:])
			if r == utf8.RuneError && n == 1 {
				note(problemUTF8)
			}
			w.i += n
		}
	}
	return nil, problem, false
}

// hex4 reads the four hex digits of a \u escape at data[at:].
func (w *textWalk) hex4(at int) (rune, bool) {
	if at+4 > len(w.data) {
		return 0, false
	}
	var r rune
	for _, c := range w.data[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
