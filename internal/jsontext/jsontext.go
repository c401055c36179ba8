// Package jsontext holds the text rules every JSON document from a client
// follows, decided once for the REST API and the websocket gateway and for
// both stores: PostgreSQL refuses NUL and invalid UTF-8 in text (an error if
// they reach a query) while SQLite stores them, and encoding/json silently
// replaces invalid UTF-8 and lone surrogate escapes with U+FFFD and keeps the
// last of repeated keys. So before a document is decoded, Check walks it
// once and reports, by the field that has them:
//   - a string (value or key) holding NUL, raw or escaped as \u0000;
//   - a string holding bytes that are not UTF-8 (UTF-8-encoded surrogates included);
//   - a \u escape of a lone UTF-16 surrogate (\ud800 not followed by a low one);
//   - an object naming the same key twice (after unescaping);
//   - nesting deeper than a limit.
//
// The walk covers the whole document, raw JSON that is kept as sent (flows,
// tool parameters, metadata) included. It does not check syntax: where the
// data stops being JSON the walk stops, silently, having reported what it
// found before; reporting the syntax error is the decoder's job. It imports
// no transport: each caller maps a Problem to its own error shape.
package jsontext

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind is what is wrong.
type Kind uint8

// The kinds of Problem.
const (
	// NUL: a string holds U+0000, raw or escaped.
	NUL Kind = iota + 1
	// InvalidUTF8: a string holds bytes that are not UTF-8.
	InvalidUTF8
	// LoneSurrogate: a string holds a \u escape of a lone UTF-16 surrogate.
	LoneSurrogate
	// BadKey: a key of the object at Path has one of the three problems
	// above (Problem.Key says which). The key itself cannot name a field.
	BadKey
	// Repeated: the object holding Path names that key more than once.
	Repeated
	// TooDeep: objects and arrays nest deeper than Limits.MaxDepth; the
	// walk stops there. Path is always "" (the document as a whole).
	TooDeep
)

// Rule is the rule a string with this kind of problem breaks, as a
// predicate for a message ("name must be valid UTF-8"). It covers the
// kinds that text outside JSON (a CSV cell) can have too: NUL and
// InvalidUTF8.
func (k Kind) Rule() string {
	switch k {
	case NUL:
		return "must not contain NUL (U+0000) characters"
	case InvalidUTF8:
		return "must be valid UTF-8"
	case LoneSurrogate:
		return `must not contain a lone UTF-16 surrogate escape`
	case BadKey:
		return "has a key that is not valid text"
	case Repeated:
		return "is given more than once"
	case TooDeep:
		return "nests objects and arrays too deep"
	}
	return "is not valid"
}

// Problem is one break of the rules.
type Problem struct {
	// Path names the field: "name", "contacts[2].name", "flow.nodes.greet";
	// "" is the document itself (a key of the root object, or TooDeep).
	// Past a dozen levels the middle of the path is elided with "…", so a
	// deep document cannot make error messages large.
	Path string
	Kind Kind
	// Key is what is wrong with the key, when Kind is BadKey.
	Key Kind
	// Surrogate is the lone surrogate, when Kind (or Key) is LoneSurrogate.
	Surrogate rune
	// Depth is the limit passed, when Kind is TooDeep.
	Depth int
}

// Message is the problem as a predicate of its field, e.g. "must not
// contain NUL (U+0000) characters", "is given more than once".
func (p Problem) Message() string {
	switch p.Kind {
	case LoneSurrogate:
		return surrogateRule(p.Surrogate)
	case BadKey:
		what := p.Key.Rule()
		if p.Key == LoneSurrogate {
			what = surrogateRule(p.Surrogate)
		}
		return "has a key that is not valid text: keys " + what
	case TooDeep:
		return "nests objects and arrays deeper than " + strconv.Itoa(p.Depth) + " levels"
	}
	return p.Kind.Rule()
}

func surrogateRule(r rune) string {
	return `must not contain a lone UTF-16 surrogate escape (\u` + strconv.FormatInt(int64(r), 16) + ")"
}

// Limits bound a walk.
type Limits struct {
	// MaxDepth is the deepest nesting of objects and arrays allowed; one
	// level more is a TooDeep problem and ends the walk. 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// MaxProblems ends the walk once this many problems are found, so a
	// document full of bad strings costs no more than one with a few.
	// 0 means 1.
	MaxProblems int
}

// DefaultMaxDepth is encoding/json's own limit: a document it would
// decode is never TooDeep.
const DefaultMaxDepth = 10000

// maxPathFrames is how many levels a Path shows before its middle is
// elided: the first and last maxPathFrames/2.
const maxPathFrames = 16

// Check walks data (one JSON value) and returns its problems in document
// order, at most lim.MaxProblems. It never panics, whatever data is.
func Check(data []byte, lim Limits) []Problem {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	if lim.MaxProblems <= 0 {
		lim.MaxProblems = 1
	}
	w := walk{data: data, lim: lim}
	w.run()
	return w.problems
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

// walk is the state of one walk over a document.
type walk struct {
	data     []byte
	lim      Limits
	i        int
	stack    []frame
	problems []Problem
}

// full reports whether the walk has found all the problems it may.
func (w *walk) full() bool { return len(w.problems) >= w.lim.MaxProblems }

// add records a problem at the position frames lead to. The path is built
// here, only for a problem that is kept.
func (w *walk) add(frames []frame, p Problem) {
	if w.full() {
		return
	}
	p.Path = pathOf(frames)
	w.problems = append(w.problems, p)
}

// pathOf names the position the frames lead to: "name", "contacts[2].name".
// The root object's members are the top-level fields.
func pathOf(frames []frame) string {
	var b strings.Builder
	if len(frames) <= maxPathFrames {
		writePath(&b, frames)
		return b.String()
	}
	half := maxPathFrames / 2
	writePath(&b, frames[:half])
	b.WriteString("…")
	writePath(&b, frames[len(frames)-half:])
	return b.String()
}

func writePath(b *strings.Builder, frames []frame) {
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
}

func (w *walk) ws() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// push opens an object or array; past the depth limit it records TooDeep
// and reports false (the walk ends).
func (w *walk) push(array bool) bool {
	if len(w.stack) >= w.lim.MaxDepth {
		w.add(nil, Problem{Kind: TooDeep, Depth: w.lim.MaxDepth})
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

func (w *walk) pop() { w.stack = w.stack[:len(w.stack)-1] }

func (w *walk) run() {
values:
	for !w.full() {
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
			_, p, ok := w.str(false)
			if !ok {
				return
			}
			if p.Kind != 0 {
				w.add(w.stack, p)
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
func (w *walk) member() bool {
	w.ws()
	if w.i >= len(w.data) || w.data[w.i] != '"' {
		return false
	}
	key, p, ok := w.str(true)
	if !ok {
		return false
	}
	top := &w.stack[len(w.stack)-1]
	if p.Kind != 0 {
		w.add(w.stack[:len(w.stack)-1], Problem{Kind: BadKey, Key: p.Kind, Surrogate: p.Surrogate})
		key = []byte(strings.ToValidUTF8(strings.ReplaceAll(string(key), "\x00", "\uFFFD"), "\uFFFD"))
	}
	top.key = key
	if seen(top, key) {
		w.add(w.stack, Problem{Kind: Repeated})
	}
	w.ws()
	if w.i >= len(w.data) || w.data[w.i] != ':' {
		return false
	}
	w.i++
	return true
}

// seen records key in the object f and reports whether it was there already.
func seen(f *frame, key []byte) bool {
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

// str reads the string that starts at w.i (a '"'). It returns the string,
// decoded when decode is set (keys; a sub-slice of the data when it has no
// escapes), its first problem (Kind 0 when none), and false if the data
// ends or stops being JSON inside the string.
func (w *walk) str(decode bool) ([]byte, Problem, bool) {
	w.i++ // the opening quote
	start := w.i
	escaped := false
	var p Problem
	note := func(k Kind, r rune) {
		if p.Kind == 0 {
			p = Problem{Kind: k, Surrogate: r}
		}
	}
	for w.i < len(w.data) {
		c := w.data[w.i]
		switch {
		case c == '"':
			raw := w.data[start:w.i]
			w.i++
			if !decode || !escaped {
				return raw, p, true
			}
			var s string
			if err := json.Unmarshal(w.data[start-1:w.i], &s); err != nil {
				return raw, p, true // not JSON: the decoder reports it
			}
			return []byte(s), p, true
		case c == '\\':
			escaped = true
			if w.i+1 >= len(w.data) {
				return nil, p, false
			}
			if w.data[w.i+1] != 'u' {
				w.i += 2
				continue
			}
			r, ok := w.hex4(w.i + 2)
			if !ok {
				return nil, p, false
			}
			w.i += 6
			switch {
			case r == 0:
				note(NUL, 0)
			case r >= 0xDC00 && r <= 0xDFFF:
				note(LoneSurrogate, r)
			case r >= 0xD800 && r <= 0xDBFF:
				// A high surrogate must be followed by an escaped low one.
				lo, ok := rune(0), false
				if w.i+1 < len(w.data) && w.data[w.i] == '\\' && w.data[w.i+1] == 'u' {
					lo, ok = w.hex4(w.i + 2)
				}
				if ok && lo >= 0xDC00 && lo <= 0xDFFF {
					w.i += 6
				} else {
					note(LoneSurrogate, r)
				}
			}
		case c == 0:
			note(NUL, 0)
			w.i++
		case c < utf8.RuneSelf:
			w.i++
		default:
			r, n := utf8.DecodeRune(w.data[w.i:])
			if r == utf8.RuneError && n == 1 {
				note(InvalidUTF8, 0)
			}
			w.i += n
		}
	}
	return nil, p, false
}

// hex4 reads the four hex digits of a \u escape at data[at:].
func (w *walk) hex4(at int) (rune, bool) {
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

// TextProblem says what is wrong with a piece of plain text, such as a CSV
// cell or header, under the same rules: "" when nothing. (Plain text has
// no escapes, so no lone surrogates either.)
func TextProblem(s string) string {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return NUL.Rule()
	case !utf8.ValidString(s):
		return InvalidUTF8.Rule()
	}
	return ""
}
