package httpapi

import (
	"switchboard/internal/apperr"
	"switchboard/internal/jsontext"
)

// The text rules every request body follows are package jsontext's, shared
// with the gateway: before a JSON body is decoded, checkJSONText refuses,
// naming the field, a string (value or key) holding NUL or bytes that are
// not UTF-8 or a lone surrogate escape, and an object naming the same key
// twice. CSV bodies follow the same rules cell by cell (jsontext.TextProblem).

// maxTextErrors bounds how many text errors one body reports; the walk
// stops at the bound, so a body full of bad strings costs no more.
const maxTextErrors = 100

// checkJSONText walks data (one JSON value) and adds an error for every
// string and object that breaks the text rules (the document itself, as
// for a key of the root object or nesting past encoding/json's limit, is
// the field "body"). It says nothing where data is not JSON: syntax errors
// are encoding/json's to report.
func checkJSONText(data []byte, errs *apperr.Fields) {
	for _, p := range jsontext.Check(data, jsontext.Limits{MaxProblems: maxTextErrors}) {
		field := p.Path
		if field == "" {
			field = "body"
		}
		errs.Add(field, "%s", p.Message())
	}
}
