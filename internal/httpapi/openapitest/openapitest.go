// Package openapitest checks HTTP exchanges against an OpenAPI 3.1
// document, for tests: every answer a test receives is held to what the
// document promises for its operation (its status is one the operation
// lists, its Content-Type one of that response's media types, its JSON
// body valid under that response's schema, its required headers present),
// and every request body the server accepted is held to the operation's
// request schema (CheckExchange). So the document cannot drift from the handlers without a
// test failing. It owns no server and imports nothing of this module: the
// document comes in as bytes (httpapi.OpenAPI()).
//
// Exchanges whose path is no operation's path (/healthz, the dashboard,
// the websocket gateway, an unknown /v1 path) and methods a path item does
// not have (the server's 405) are not the document's business and are
// left alone. Operations are found the way the server's router finds
// them: a literal segment is preferred to a {parameter}, from the left.
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// docURL names the document inside the schema compiler, and so in
// schema errors.
const docURL = "urn:switchboard:openapi.json"

// maxValidated bounds the JSON bodies decoded for validation; larger ones
// are only checked for their media type.
const maxValidated = 8 << 20

// Validator holds a parsed document and its compiled schemas; it is safe
// for concurrent use.
type Validator struct {
	paths []pathItem
}

// pathItem is one entry of the document's paths, split into segments.
type pathItem struct {
	template string
	segs     []string // "" marks a {parameter}
	ops      map[string]*operation
}

// operation is what the checks need of one operation.
type operation struct {
	method, template, id string
	responses            map[string]*response // "200", "2XX", "default"
	requestRequired      bool
	request              map[string]*jsonschema.Schema // media type → schema (nil: not JSON or no schema)
	hasRequest           bool
}

// response is one documented response.
type response struct {
	content map[string]*jsonschema.Schema // media type → schema (nil for non-JSON)
	headers []string                      // required headers
}

// New parses doc (OpenAPI 3.1, JSON) and compiles every response and
// request schema it names.
func New(doc []byte) (*Validator, error) {
	var tree map[string]any
	if err := json.Unmarshal(doc, &tree); err != nil {
		return nil, fmt.Errorf("openapitest: the document is not JSON: %w", err)
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("openapitest: the document is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // date-time and uri are promises too
	if err := c.AddResource(docURL, res); err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	b := builder{tree: tree, c: c}
	paths, _ := tree["paths"].(map[string]any)
	v := &Validator{}
	for tmpl, raw := range paths {
		item, _ := raw.(map[string]any)
		pi := pathItem{template: tmpl, ops: map[string]*operation{}}
		for _, s := range strings.Split(strings.TrimPrefix(tmpl, "/"), "/") {
			if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
				s = ""
			}
			pi.segs = append(pi.segs, s)
		}
		for method, rawOp := range item {
			if !slices.Contains(methods, method) {
				continue
			}
			op, err := b.operation(strings.ToUpper(method), tmpl, rawOp)
			if err != nil {
				return nil, err
			}
			pi.ops[op.method] = op
		}
		v.paths = append(v.paths, pi)
	}
	return v, nil
}

// methods are the keys of a path item that name operations.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// builder compiles the schemas of the document's operations.
type builder struct {
	tree map[string]any
	c    *jsonschema.Compiler
}

func (b *builder) operation(method, tmpl string, raw any) (*operation, error) {
	m, _ := raw.(map[string]any)
	at := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method)
	op := &operation{method: method, template: tmpl, responses: map[string]*response{}}
	op.id, _ = m["operationId"].(string)
	rs, _ := m["responses"].(map[string]any)
	for status, r := range rs {
		loc, obj, err := b.deref(at+"/responses/"+escape(status), r)
		if err != nil {
			return nil, fmt.Errorf("openapitest: %s %s: response %s: %w", method, tmpl, status, err)
		}
		resp := &response{}
		if resp.content, err = b.content(loc, obj); err != nil {
			return nil, fmt.Errorf("openapitest: %s %s: response %s: %w", method, tmpl, status, err)
		}
		hs, _ := obj["headers"].(map[string]any)
		for name, h := range hs {
			_, ho, err := b.deref(loc+"/headers/"+escape(name), h)
			if err != nil {
				return nil, fmt.Errorf("openapitest: %s %s: response %s: header %s: %w", method, tmpl, status, name, err)
			}
			if req, _ := ho["required"].(bool); req {
				resp.headers = append(resp.headers, name)
			}
		}
		op.responses[strings.ToUpper(status)] = resp
	}
	if rb, ok := m["requestBody"]; ok {
		loc, obj, err := b.deref(at+"/requestBody", rb)
		if err != nil {
			return nil, fmt.Errorf("openapitest: %s %s: requestBody: %w", method, tmpl, err)
		}
		op.hasRequest = true
		op.requestRequired, _ = obj["required"].(bool)
		if op.request, err = b.content(loc, obj); err != nil {
			return nil, fmt.Errorf("openapitest: %s %s: requestBody: %w", method, tmpl, err)
		}
	}
	return op, nil
}

// content compiles the schema of each JSON media type of a response or
// request body object found at loc; other media types map to nil.
func (b *builder) content(loc string, obj map[string]any) (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	content, _ := obj["content"].(map[string]any)
	for mt, raw := range content {
		out[mt] = nil
		media, _ := raw.(map[string]any)
		if _, ok := media["schema"]; !ok || !isJSON(mt) {
			continue
		}
		s, err := b.c.Compile(docURL + "#" + loc + "/content/" + escape(mt) + "/schema")
		if err != nil {
			return nil, fmt.Errorf("media type %s: %w", mt, err)
		}
		out[mt] = s
	}
	return out, nil
}

// deref follows v's $ref, if it has one, to a component; it returns the
// JSON pointer of the object it ends at and the object.
func (b *builder) deref(loc string, v any) (string, map[string]any, error) {
	for range 8 {
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil, fmt.Errorf("%s is not an object", loc)
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return loc, m, nil
		}
		frag, _ := strings.CutPrefix(ref, "#")
		var err error
		if v, err = Resolve(b.tree, ref); err != nil {
			return "", nil, fmt.Errorf("$ref %q: %w", ref, err)
		}
		loc = frag
	}
	return "", nil, fmt.Errorf("%s: $ref chain too long", loc)
}

// Resolve follows a local reference ("#/components/schemas/Call", a JSON
// pointer written as a URL fragment) in a decoded document.
func Resolve(tree any, ref string) (any, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, errors.New("only local references are used")
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, err
	}
	cur := tree
	if frag == "" {
		return cur, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("cannot descend into %s", tok)
		}
		if cur, ok = m[tok]; !ok {
			return nil, fmt.Errorf("no %s", tok)
		}
	}
	return cur, nil
}

// escape makes s one JSON pointer token, written as it may stand in a
// URL's fragment.
func escape(s string) string {
	s = strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
	return url.PathEscape(s)
}

func isJSON(mediaType string) bool {
	return mediaType == "application/json" || strings.HasSuffix(mediaType, "+json")
}

// find returns the operation for method and a request path (its escaped
// form: an escaped "/" stays inside its segment); nil when the document
// has no such path or the path has no such method.
func (v *Validator) find(method, escapedPath string) *operation {
	segs := strings.Split(strings.TrimPrefix(escapedPath, "/"), "/")
	var best *pathItem
	for i := range v.paths {
		p := &v.paths[i]
		if len(p.segs) != len(segs) || !matches(p.segs, segs) {
			continue
		}
		if best == nil || moreLiteral(p.segs, best.segs) {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	return best.ops[method]
}

func matches(tmpl, segs []string) bool {
	for i, t := range tmpl {
		s, err := url.PathUnescape(segs[i])
		if err != nil {
			s = segs[i]
		}
		if t == "" && s == "" || t != "" && t != s {
			return false
		}
	}
	return true
}

// moreLiteral reports whether a has a literal segment where b has a
// parameter, at the first place they differ.
func moreLiteral(a, b []string) bool {
	for i := range a {
		if (a[i] == "") != (b[i] == "") {
			return a[i] != ""
		}
	}
	return false
}

// Operation names the documented operation a request would reach
// ("POST /v1/calls/{id}/end"), or "" when the document has none.
func (v *Validator) Operation(method, path string) string {
	op := v.find(method, escapedPath(path))
	if op == nil {
		return ""
	}
	return op.method + " " + op.template
}

func escapedPath(p string) string {
	if u, err := url.Parse(p); err == nil {
		return u.EscapedPath()
	}
	return p
}

// CheckResponse checks one answer to method path (a request URI: its
// query is ignored) against the document; nil when it holds, or when the
// document has no such operation. The error names the request, the
// operation, the status and what does not hold.
func (v *Validator) CheckResponse(method, path string, status int, header http.Header, body []byte) error {
	op := v.find(method, escapedPath(path))
	if op == nil {
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("openapi: %s %s (operation %s %s) answered %d: %s", method, path, op.method, op.template, status, fmt.Sprintf(format, args...))
	}
	code := strconv.Itoa(status)
	resp := op.responses[code]
	if resp == nil {
		resp = op.responses[code[:1]+"XX"]
	}
	if resp == nil {
		resp = op.responses["DEFAULT"]
	}
	if resp == nil {
		return fail("the operation does not list status %d (it lists %s); body: %s", status, strings.Join(op.statuses(), ", "), excerpt(body))
	}
	for _, h := range resp.headers {
		if header.Get(h) == "" {
			return fail("the required header %s is missing", h)
		}
	}
	if len(resp.content) == 0 {
		if len(body) > 0 {
			return fail("the response documents no body, but it has %d bytes (Content-Type %q): %s", len(body), header.Get("Content-Type"), excerpt(body))
		}
		return nil
	}
	if len(body) == 0 && method == http.MethodHead {
		return nil
	}
	return checkBody(fail, "", resp.content, header.Get("Content-Type"), body)
}

// CheckRequest checks a request body against the operation's documented
// request body: a body where none is documented, a Content-Type that is
// not documented, or a JSON body the schema refuses is an error. Call it
// for requests meant to be valid (the harnesses do for every request the
// server accepted); nil when the document has no such operation.
func (v *Validator) CheckRequest(method, path string, header http.Header, body []byte) error {
	op := v.find(method, escapedPath(path))
	if op == nil {
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("openapi: request %s %s (operation %s %s): %s", method, path, op.method, op.template, fmt.Sprintf(format, args...))
	}
	if len(body) == 0 {
		if op.requestRequired {
			return fail("the operation requires a body; none was sent")
		}
		return nil
	}
	if !op.hasRequest {
		return fail("the operation documents no request body, but %d bytes were sent: %s", len(body), excerpt(body))
	}
	return checkBody(fail, "request ", op.request, header.Get("Content-Type"), body)
}

// checkBody checks a body of Content-Type ct against the documented
// content (media type → schema; nil for a media type not JSON): the media
// type must be one of them (or a documented range), a JSON body valid
// under its schema. what ("", "request ") names the schema in errors.
func checkBody(fail func(string, ...any) error, what string, content map[string]*jsonschema.Schema, ct string, body []byte) error {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return fail("Content-Type %q is not a media type (documented: %s)", ct, strings.Join(keys(content), ", "))
	}
	sch, ok := content[mt]
	if !ok {
		if sch, ok = wildcard(content, mt); !ok {
			return fail("Content-Type %s is not documented (documented: %s)", mt, strings.Join(keys(content), ", "))
		}
	}
	if sch == nil || len(body) > maxValidated {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fail("the %s body is not JSON (%v): %s", mt, err, excerpt(body))
	}
	if err := sch.Validate(doc); err != nil {
		return fail("the body does not match the documented %sschema:\n%v\nbody: %s", what, err, excerpt(body))
	}
	return nil
}

// CheckExchange checks one exchange as the test harnesses do: the answer
// always (CheckResponse), the request body sent when the server accepted
// it with a 2xx (CheckRequest: a test that sends bad input on purpose
// gets a 4xx, whose request is not held to the schema). The error joins
// what both found.
func (v *Validator) CheckExchange(method, uri string, reqHeader http.Header, sent []byte, status int, header http.Header, body []byte) error {
	err := v.CheckResponse(method, uri, status, header, body)
	if status/100 == 2 {
		err = errors.Join(err, v.CheckRequest(method, uri, reqHeader, sent))
	}
	return err
}

// statuses lists the operation's documented statuses, sorted.
func (op *operation) statuses() []string {
	out := keys(op.responses)
	for i, s := range out {
		if s == "DEFAULT" {
			out[i] = "default"
		}
	}
	return out
}

// wildcard finds a documented media range (audio/*, */*) that covers mt.
func wildcard(content map[string]*jsonschema.Schema, mt string) (*jsonschema.Schema, bool) {
	typ, _, _ := strings.Cut(mt, "/")
	if s, ok := content[typ+"/*"]; ok {
		return s, true
	}
	s, ok := content["*/*"]
	return s, ok
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// excerpt is the start of a body, for a failure message.
func excerpt(b []byte) string {
	const n = 600
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
