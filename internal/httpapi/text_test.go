package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/jsonobj"
	"switchboard/internal/jsontext"
)

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
		{`{"\u0000":1}`, []string{"body"}},
		{`{"a":` + strings.Repeat("[", 10001), []string{"body"}},
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
	if got := o.Str("name", true); got != "Ada 😀" {
		t.Errorf("name = %q, want %q", got, "Ada 😀")
	}
}

func asAppErr(err error, e **apperr.Error) bool {
	return errors.As(err, e)
}

func TestTextProblem(t *testing.T) {
	for in, want := range map[string]string{
		"": "", "Ada": "", "é 日本 😀": "", "\t\r\n": "",
		"a\x00": nulRule, "\xff": utf8Rule, "\xed\xa0\x80": utf8Rule, "\xe6\x97": utf8Rule, "\x00\xff": nulRule,
	} {
		if got := jsontext.TextProblem(in); got != want {
			t.Errorf("jsontext.TextProblem(%q) = %q, want %q", in, got, want)
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

func BenchmarkParseContacts(b *testing.B) {
	body := contactsBody(1000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, err := contactsFromJSON(body); err != nil {
			b.Fatal(err)
		}
	}
}

const (
	nulRule  = "must not contain NUL (U+0000) characters"
	utf8Rule = "must be valid UTF-8"
)

// TestParseObjectTextBounded: a 1 MiB body nested ~10,000 deep and full of
// bad strings is refused with at most jsonobj.MaxTextErrors errors, at a bounded
// cost in memory (the walk used to build the 10,000-level path of every
// bad string: 17 GB and 5.6 s of CPU for this body).
func TestParseObjectTextBounded(t *testing.T) {
	const depth = 9990
	var b strings.Builder
	b.WriteString(`{"a":`)
	b.WriteString(strings.Repeat("[", depth))
	for b.Len() < MaxBody-depth-20 {
		b.WriteString(`"\u0000",`)
	}
	b.WriteString(`"\u0000"`)
	b.WriteString(strings.Repeat("]", depth))
	b.WriteString("}")
	body := []byte(b.String())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := parseObject(body)
	runtime.ReadMemStats(&after)
	var e *apperr.Error
	if !asAppErr(err, &e) || e.Kind != apperr.Invalid || len(e.Fields) != jsonobj.MaxTextErrors || e.Fields[0].Message != nulRule {
		t.Errorf("parseObject(1 MiB, %d deep, all NUL) = %v, want %d errors: %s", depth, err, jsonobj.MaxTextErrors, nulRule)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*MaxBody {
		t.Errorf("parseObject(1 MiB, %d deep) allocated %d bytes, want at most %d (4× the body)", depth, alloc, 4*MaxBody)
	}
}
