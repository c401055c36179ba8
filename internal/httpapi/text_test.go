package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"switchboard/internal/apperr"
)

// textErrors runs checkJSONText and returns "field: message" per error.
func textErrors(data string) []string {
	var errs apperr.Fields
	checkJSONText([]byte(data), &errs)
	var out []string
	for _, e := range errs {
		out = append(out, e.Field+": "+e.Message)
	}
	return out
}

func TestCheckJSONTextAccepts(t *testing.T) {
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"k%d":%d`, i, i)
		}
		b.WriteString("}")
		return b.String()
	}
	for _, in := range []string{
		`{}`,
		` { "a" : "b" } `,
		`{"name":"Ada Lovelace","n":1.5e3,"t":true,"f":false,"z":null,"neg":-0}`,
		`{"esc":"\" \\ \/ \b \f \n \r \t"}`,
		`{"accent":"\u00e9","raw":"é Ω 日本 😀"}`,
		`{"pair":"\ud83d\ude00","upper":"\uD83D\uDE00","two":"\ud83d\ude00\ud83d\ude01"}`,
		`{"bmp":"\uffff\ufffd\ue000"}`,
		`{"a":{"x":1},"b":{"x":2},"c":[{"x":1},{"x":2}]}`, // the same key in different objects
		`{"a":{"b":{"c":{"d":[[],[{}],{"x":"y"}]}}},"e":{}}`,
		`{"a":[1,"two",[3,"four"],{"five":5}],"b":[]}`,
		`{"flow":{"start":"greet","nodes":{"greet":{"type":"say","text":"Hi","next":"bye"},"bye":{"type":"end","text":"Bye"}}}}`,
		manyKeys(33), manyKeys(200), // past the point where repeats are found with a map
		`{"\u006eame":"x"}`, // an escaped key alone is fine
		`{"a":"b\\u0000"}`,  // an escaped backslash, then the text u0000: no NUL
	} {
		if got := textErrors(in); len(got) != 0 {
			t.Errorf("checkJSONText(%s) = %q, want no errors", in, got)
		}
	}
}

func TestCheckJSONTextRefuses(t *testing.T) {
	manyKeys := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString(`{"m":{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"` + dup + `":0}}`)
		return b.String()
	}
	nul := "name: " + problemNUL
	tests := []struct {
		in   string
		want []string
	}{
		// NUL, escaped or raw, in values and nested values.
		{`{"name":"a\u0000b"}`, []string{nul}},
		{"{\"name\":\"a\x00b\"}", []string{nul}},
		{`{"name":"\u0000"}`, []string{nul}},
		{`{"contacts":[{"phoneNumber":"+1"},{"phoneNumber":"+2"},{"name":"C\u0000"}]}`, []string{"contacts[2].name: " + problemNUL}},
		{`{"flow":{"nodes":{"greet":{"text":"hi\u0000"}}}}`, []string{"flow.nodes.greet.text: " + problemNUL}},
		{`{"a":[["x","\u0000"]]}`, []string{"a[0][1]: " + problemNUL}},
		{`{"endCallPhrases":["bye","\u0000"]}`, []string{"endCallPhrases[1]: " + problemNUL}},
		// Invalid UTF-8, UTF-8-encoded surrogates and overlong forms.
		{"{\"name\":\"a\xffb\"}", []string{"name: " + problemUTF8}},
		{"{\"name\":\"\xc3\x28\"}", []string{"name: " + problemUTF8}},
		{"{\"name\":\"\xed\xa0\x80\"}", []string{"name: " + problemUTF8}},
		{"{\"name\":\"\xc0\xaf\"}", []string{"name: " + problemUTF8}},
		{"{\"name\":\"\xe6\x97\"}", []string{"name: " + problemUTF8}}, // truncated 日
		// Lone surrogate escapes.
		{`{"name":"\ud800"}`, []string{"name: " + problemSurrogate + "d800)"}},
		{`{"name":"\uDBFF x"}`, []string{"name: " + problemSurrogate + "dbff)"}},
		{`{"name":"x\udc00"}`, []string{"name: " + problemSurrogate + "dc00)"}},
		{`{"name":"\ude00\ud83d"}`, []string{"name: " + problemSurrogate + "de00)"}},
		{`{"name":"\ud83d\ud83d\ude00"}`, []string{"name: " + problemSurrogate + "d83d)"}},
		{`{"name":"\ud83d\u0041"}`, []string{"name: " + problemSurrogate + "d83d)"}},
		{`{"name":"\ud83d\n"}`, []string{"name: " + problemSurrogate + "d83d)"}},
		// The first problem of a string is reported, once.
		{"{\"name\":\"\\u0000\xff\\ud800\"}", []string{nul}},
		// Repeated keys, after unescaping, at any depth.
		{`{"name":"a","name":"b"}`, []string{"name: is given more than once"}},
		{`{"name":"a","n\u0061me":"b"}`, []string{"name: is given more than once"}},
		{`{"a":1,"b":2,"a":3,"a":4}`, []string{"a: is given more than once", "a: is given more than once"}},
		{`{"contacts":[{"phoneNumber":"+1","phoneNumber":"+2"}]}`, []string{"contacts[0].phoneNumber: is given more than once"}},
		{`{"flow":{"nodes":{"greet":{},"greet":{}}}}`, []string{"flow.nodes.greet: is given more than once"}},
		{manyKeys(40, "k3"), []string{"m.k3: is given more than once"}},
		{manyKeys(40, "k39"), []string{"m.k39: is given more than once"}},
		// Keys with bad text: the object holding them is named.
		{`{"\u0000":1}`, []string{"body: has a key that is not valid text: keys " + problemNUL}},
		{`{"metadata":{"n\u0000":"x"}}`, []string{"metadata: has a key that is not valid text: keys " + problemNUL}},
		{"{\"metadata\":{\"\xff\":\"x\"}}", []string{"metadata: has a key that is not valid text: keys " + problemUTF8}},
		{`{"a":[{"\ud800":1}]}`, []string{"a[0]: has a key that is not valid text: keys " + problemSurrogate + "d800)"}},
		// Several fields at once, in body order.
		{`{"name":"\u0000","firstMessage":"\ud800","systemPrompt":"ok","systemPrompt":"again"}`,
			[]string{nul, "firstMessage: " + problemSurrogate + "d800)", "systemPrompt: is given more than once"}},
	}
	for _, tt := range tests {
		got := textErrors(tt.in)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("checkJSONText(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestCheckJSONTextBroken: on data that is not JSON the walk stops without
// panicking, having reported only what it found before the break.
func TestCheckJSONTextBroken(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":"\`, `{"a":"\u12`, `{"a":"\uZZZZ"}`, `{"a":[`, `{"a":[1,`,
		`{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `}`, `]]]`, `{"a":]`, `{"a":"x"]`, `[{"a":1]`, `"\ud800`,
		strings.Repeat("[", 100000), strings.Repeat(`{"a":`, 50000),
	} {
		got := textErrors(in)
		if len(got) != 0 {
			t.Errorf("checkJSONText(%.40q) = %q, want nothing", in, got)
		}
	}
	if got := textErrors(`{"a":"\u0000","b":`); len(got) != 1 || got[0] != "a: "+problemNUL {
		t.Errorf("checkJSONText of a truncated body = %q, want the NUL in a before the break", got)
	}
}

func TestCheckJSONTextBoundsErrors(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"a":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"\u0000"`)
	}
	b.WriteString("]}")
	if got := textErrors(b.String()); len(got) != maxTextErrors {
		t.Errorf("checkJSONText with 1000 bad strings reported %d errors, want %d", len(got), maxTextErrors)
	}
}

// TestParseObjectText: the text rules apply to every body parseObject reads,
// before anything else about it.
func TestParseObjectText(t *testing.T) {
	tests := []struct {
		in     string
		fields []string
	}{
		{`{"name":"a","name":"b"}`, []string{"name"}},
		{"{\"name\":\"a\x00\"}", []string{"name"}}, // not reported as a JSON syntax error
		{"{\"name\":\"a\x00\",", []string{"name"}},
		{`{"name":"ok"`, []string{"body"}},
		{"  \n{\"name\":\"\\ud800\"}", []string{"name"}},
	}
	for _, tt := range tests {
		_, err := parseObject([]byte(tt.in))
		var e *apperr.Error
		if err == nil || !asAppErr(err, &e) || e.Kind != apperr.Invalid {
			t.Errorf("parseObject(%q) = %v, want an invalid request", tt.in, err)
			continue
		}
		var got []string
		for _, f := range e.Fields {
			got = append(got, f.Field)
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.fields) {
			t.Errorf("parseObject(%q) fields = %q, want %q", tt.in, got, tt.fields)
		}
	}
	o, err := parseObject([]byte(`{"name":"Ada \ud83d\ude00","a":{"name":1}}`))
	if err != nil {
		t.Fatalf("parseObject of good text = %v", err)
	}
	if got := o.str("name", true); got != "Ada 😀" {
		t.Errorf("name = %q, want %q", got, "Ada 😀")
	}
}

func asAppErr(err error, e **apperr.Error) bool {
	return errors.As(err, e)
}

func TestTextProblem(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "Ada": "", "é 日本 😀": "", "\t\r\n": "",
		"a\x00": problemNUL, "\xff": problemUTF8, "\xed\xa0\x80": problemUTF8, "\xe6\x97": problemUTF8,
	} {
		if got := textProblem(in); got != want {
			t.Errorf("textProblem(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzCheckJSONText compares the walk with encoding/json on the rules it
// can judge: whenever encoding/json takes data as JSON, a NUL in a decoded
// string, a key repeated in an object, or bytes that are not UTF-8 must be
// reported, and none may be reported when there are none of these (and no
// surrogate escapes, which encoding/json cannot show).
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, `{"a":"\u0000"}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"a":{"b":[{"c":"\ud800"}]}}`,
		`{"\u0000":1}`, `{"a":"\ud83d\ude00"}`, `{"a":[[],{}],"b":{"a":1}}`, `{"k":"\\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var errs apperr.Fields
		checkJSONText(data, &errs) // must not panic, whatever data is
		if !json.Valid(data) {
			return
		}
		nul, dup := referenceText(t, data)
		bad := nul || dup || !utf8.Valid(data)
		if bad && len(errs) == 0 {
			t.Fatalf("checkJSONText(%q) reported nothing; encoding/json sees NUL %v, a repeated key %v, valid UTF-8 %v", data, nul, dup, utf8.Valid(data))
		}
		if !bad && len(errs) > 0 && !bytes.Contains(bytes.ToLower(data), []byte(`\ud`)) {
			t.Fatalf("checkJSONText(%q) = %v, but encoding/json sees no NUL, no repeated key and valid UTF-8", data, errs)
		}
	})
}

// referenceText walks valid JSON with encoding/json's tokenizer and reports
// whether a decoded string holds NUL and whether an object repeats a key.
func referenceText(t *testing.T, data []byte) (nul, dup bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("Token on valid JSON %q: %v", data, err)
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &level{object: v == '{', keys: map[string]bool{}, key: v == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			nul = nul || strings.IndexByte(v, 0) >= 0
			if top != nil && top.object && top.key {
				dup = dup || top.keys[v]
				top.keys[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// contactsBody is a contacts upload of n contacts with metadata.
func contactsBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"contacts":[`)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"Contact %d Lovelace","phoneNumber":"+1415555%04d","timezone":"America/Los_Angeles","metadata":{"plan":"gold","note":"née \u00e9 日本"}}`, i, i)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// BenchmarkCheckJSONText is the walk alone over a 1,000-contact upload;
// BenchmarkParseContacts is what a contacts upload costs to decode (walk
// included), to see the walk's share.
func BenchmarkCheckJSONText(b *testing.B) {
	body := contactsBody(1000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		var errs apperr.Fields
		checkJSONText(body, &errs)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

func BenchmarkParseContacts(b *testing.B) {
	body := contactsBody(1000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := contactsFromJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}
