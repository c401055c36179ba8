package jsontext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// problems runs Check with room for 100 problems and returns
// "path: message" per problem; the document itself is "$".
func problems(data string) []string {
	var out []string
	for _, p := range Check([]byte(data), Limits{MaxProblems: 100}) {
		path := p.Path
		if path == "" {
			path = "$"
		}
		out = append(out, path+": "+p.Message())
	}
	return out
}

const (
	nulRule  = "must not contain NUL (U+0000) characters"
	utf8Rule = "must be valid UTF-8"
	lone     = `must not contain a lone UTF-16 surrogate escape (\u`
)

func TestCheckAccepts(t *testing.T) {
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
		`"just a string"`, `[1,"x",{}]`, `42`,
	} {
		if got := problems(in); len(got) != 0 {
			t.Errorf("Check(%s) = %q, want no problems", in, got)
		}
	}
}

func TestCheckRefuses(t *testing.T) {
	manyKeys := func(n int, dup string) string {
		var b strings.Builder
		b.WriteString(`{"m":{`)
		for i := range n {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"` + dup + `":0}}`)
		return b.String()
	}
	nul := "name: " + nulRule
	tests := []struct {
		in   string
		want []string
	}{
		// NUL, escaped or raw, in values and nested values.
		{`{"name":"a\u0000b"}`, []string{nul}},
		{"{\"name\":\"a\x00b\"}", []string{nul}},
		{`{"name":"\u0000"}`, []string{nul}},
		{`{"contacts":[{"phoneNumber":"+1"},{"phoneNumber":"+2"},{"name":"C\u0000"}]}`, []string{"contacts[2].name: " + nulRule}},
		{`{"flow":{"nodes":{"greet":{"text":"hi\u0000"}}}}`, []string{"flow.nodes.greet.text: " + nulRule}},
		{`{"a":[["x","\u0000"]]}`, []string{"a[0][1]: " + nulRule}},
		{`{"endCallPhrases":["bye","\u0000"]}`, []string{"endCallPhrases[1]: " + nulRule}},
		{`"\u0000"`, []string{"$: " + nulRule}},
		// Invalid UTF-8, UTF-8-encoded surrogates and overlong forms.
		{"{\"name\":\"a\xffb\"}", []string{"name: " + utf8Rule}},
		{"{\"name\":\"\xc3\x28\"}", []string{"name: " + utf8Rule}},
		{"{\"name\":\"\xed\xa0\x80\"}", []string{"name: " + utf8Rule}},
		{"{\"name\":\"\xc0\xaf\"}", []string{"name: " + utf8Rule}},
		{"{\"name\":\"\xe6\x97\"}", []string{"name: " + utf8Rule}}, // truncated 日
		// Lone surrogate escapes.
		{`{"name":"\ud800"}`, []string{"name: " + lone + "d800)"}},
		{`{"name":"\uDBFF x"}`, []string{"name: " + lone + "dbff)"}},
		{`{"name":"x\udc00"}`, []string{"name: " + lone + "dc00)"}},
		{`{"name":"\ude00\ud83d"}`, []string{"name: " + lone + "de00)"}},
		{`{"name":"\ud83d\ud83d\ude00"}`, []string{"name: " + lone + "d83d)"}},
		{`{"name":"\ud83d\u0041"}`, []string{"name: " + lone + "d83d)"}},
		{`{"name":"\ud83d\n"}`, []string{"name: " + lone + "d83d)"}},
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
		{`{"\u0000":1}`, []string{"$: has a key that is not valid text: keys " + nulRule}},
		{`{"metadata":{"n\u0000":"x"}}`, []string{"metadata: has a key that is not valid text: keys " + nulRule}},
		{"{\"metadata\":{\"\xff\":\"x\"}}", []string{"metadata: has a key that is not valid text: keys " + utf8Rule}},
		{`{"a":[{"\ud800":1}]}`, []string{"a[0]: has a key that is not valid text: keys " + lone + "d800)"}},
		// Several fields at once, in document order.
		{`{"name":"\u0000","firstMessage":"\ud800","systemPrompt":"ok","systemPrompt":"again"}`,
			[]string{nul, "firstMessage: " + lone + "d800)", "systemPrompt: is given more than once"}},
		// Paths past 16 levels are elided in the middle.
		{`{"a":` + strings.Repeat("[", 20) + `"\u0000"` + strings.Repeat("]", 20) + `}`,
			[]string{"a[0][0][0][0][0][0][0]…[0][0][0][0][0][0][0][0]: " + nulRule}},
	}
	for _, tt := range tests {
		got := problems(tt.in)
		if fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Check(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestCheckBroken: on data that is not JSON the walk stops without
// panicking, having reported only what it found before the break.
func TestCheckBroken(t *testing.T) {
	for _, in := range []string{
		``, `{`, `{"`, `{"a`, `{"a"`, `{"a":`, `{"a":"`, `{"a":"\`, `{"a":"\u12`, `{"a":"\uZZZZ"}`, `{"a":[`, `{"a":[1,`,
		`{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `}`, `]]]`, `{"a":]`, `{"a":"x"]`, `[{"a":1]`, `"\ud800`,
	} {
		if got := problems(in); len(got) != 0 {
			t.Errorf("Check(%.40q) = %q, want nothing", in, got)
		}
	}
	if got := problems(`{"a":"\u0000","b":`); len(got) != 1 || got[0] != "a: "+nulRule {
		t.Errorf("Check of a truncated document = %q, want the NUL in a before the break", got)
	}
}

// TestCheckDepth: one level past MaxDepth is a TooDeep problem of the
// document as a whole, and the walk ends there; MaxDepth levels are fine.
func TestCheckDepth(t *testing.T) {
	nest := func(n int) string { return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}` }
	if got := Check([]byte(nest(32)), Limits{MaxDepth: 32}); len(got) != 0 {
		t.Errorf("Check(32 levels, MaxDepth 32) = %v, want nothing", got)
	}
	got := Check([]byte(nest(33)+`,"b":"\u0000"`), Limits{MaxDepth: 32, MaxProblems: 10})
	if len(got) != 1 || got[0].Kind != TooDeep || got[0].Path != "" || got[0].Message() != "nests objects and arrays deeper than 32 levels" {
		t.Errorf("Check(33 levels, MaxDepth 32) = %+v, want one TooDeep of the document, deeper than 32", got)
	}
	for _, in := range []string{strings.Repeat("[", 100000), strings.Repeat(`{"a":`, 50000)} {
		got := Check([]byte(in), Limits{})
		if len(got) != 1 || got[0].Kind != TooDeep || got[0].Depth != DefaultMaxDepth {
			t.Errorf("Check(%.20q…) = %+v, want TooDeep past %d", in, got, DefaultMaxDepth)
		}
	}
}

// TestCheckStopsAtMaxProblems: the walk reports at most MaxProblems, and
// MaxProblems 0 means the first problem only.
func TestCheckStopsAtMaxProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"a":[`)
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"\u0000"`)
	}
	b.WriteString("]}")
	if got := Check([]byte(b.String()), Limits{MaxProblems: 100}); len(got) != 100 || got[99].Path != "a[99]" {
		t.Errorf("Check(1000 bad strings, MaxProblems 100) = %d problems (last %+v), want 100, the last at a[99]", len(got), got[len(got)-1])
	}
	if got := Check([]byte(b.String()), Limits{}); len(got) != 1 || got[0].Path != "a[0]" {
		t.Errorf("Check(1000 bad strings, MaxProblems 0) = %+v, want the first, at a[0]", got)
	}
}

// TestCheckDeepFloodBounded: a 1 MiB document nested ~10,000 deep and
// full of bad strings costs a bounded amount of memory (it used to build
// the 10,000-level path of every bad string: gigabytes and seconds).
func TestCheckDeepFloodBounded(t *testing.T) {
	const size, depth = 1 << 20, 9990
	var b strings.Builder
	b.WriteString(`{"a":`)
	b.WriteString(strings.Repeat("[", depth))
	for b.Len() < size-depth-20 {
		b.WriteString(`"\u0000",`)
	}
	b.WriteString(`"\u0000"`)
	b.WriteString(strings.Repeat("]", depth))
	b.WriteString("}")
	data := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := Check(data, Limits{MaxProblems: 100})
	runtime.ReadMemStats(&after)
	if len(got) != 100 {
		t.Errorf("Check(1 MiB, %d deep) = %d problems, want 100", depth, len(got))
	}
	for _, p := range got {
		if len(p.Path) > 100 {
			t.Fatalf("Check(1 MiB, %d deep) named a path of %d bytes, want it elided", depth, len(p.Path))
		}
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*size {
		t.Errorf("Check(1 MiB, %d deep) allocated %d bytes, want at most %d (4× the document)", depth, alloc, 4*size)
	}
}

func TestKindRule(t *testing.T) {
	for k, want := range map[Kind]string{NUL: nulRule, InvalidUTF8: utf8Rule, Repeated: "is given more than once"} {
		if got := k.Rule(); got != want {
			t.Errorf("%d.Rule() = %q, want %q", k, got, want)
		}
	}
}

// FuzzCheck compares the walk with encoding/json on the rules it can
// judge: whenever encoding/json takes data as JSON, a NUL in a decoded
// string, a key repeated in an object, or bytes that are not UTF-8 must be
// reported, and none may be reported when there are none of these (and no
// surrogate escapes, which encoding/json cannot show).
// `go test -run '^$' -fuzz FuzzCheck ./internal/jsontext/`.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":"b"}`, `{"a":"\u0000"}`, "{\"a\":\"\xff\"}", `{"a":1,"a":2}`, `{"a":{"b":[{"c":"\ud800"}]}}`,
		`{"\u0000":1}`, `{"a":"\ud83d\ude00"}`, `{"a":[[],{}],"b":{"a":1}}`, `{"k":"\\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := Check(data, Limits{MaxProblems: 100}) // must not panic, whatever data is
		if !json.Valid(data) {
			return
		}
		nul, dup := referenceText(t, data)
		bad := nul || dup || !utf8.Valid(data)
		if bad && len(got) == 0 {
			t.Fatalf("Check(%q) reported nothing; encoding/json sees NUL %v, a repeated key %v, valid UTF-8 %v", data, nul, dup, utf8.Valid(data))
		}
		if !bad && len(got) > 0 && !bytes.Contains(bytes.ToLower(data), []byte(`\ud`)) {
			t.Fatalf("Check(%q) = %+v, but encoding/json sees no NUL, no repeated key and valid UTF-8", data, got)
		}
	})
}

// referenceText walks valid JSON with encoding/json's tokenizer and reports
// whether a decoded string holds NUL and whether an object repeats a key.
func referenceText(t *testing.T, data []byte) (nul, dup bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // 1e400 is valid JSON, if no float64
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

// contacts is a contacts upload of n contacts with metadata.
func contacts(n int) []byte {
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

// BenchmarkCheck is the walk alone over a 1,000-contact upload (see
// httpapi's BenchmarkParseContacts for its share of decoding one).
func BenchmarkCheck(b *testing.B) {
	data := contacts(1000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if p := Check(data, Limits{MaxProblems: 100}); len(p) > 0 {
			b.Fatal(p)
		}
	}
}
