package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/apperr"
	"switchboard/internal/event"
	"switchboard/internal/httpapi/openapitest"
	"switchboard/internal/phone"
	"switchboard/internal/schedule"
)

// openAPIDocument is the part of the OpenAPI document the checks read.
type openAPIDocument struct {
	OpenAPI string                                `json:"openapi"`
	Paths   map[string]map[string]json.RawMessage `json:"paths"`
}

// openAPIOperation is the part of one operation the checks read.
type openAPIOperation struct {
	OperationID string                     `json:"operationId"`
	Description string                     `json:"description"`
	XScopes     []string                   `json:"x-scopes"`
	Security    *[]map[string][]string     `json:"security"`
	Parameters  []map[string]any           `json:"parameters"`
	RequestBody json.RawMessage            `json:"requestBody"`
	Responses   map[string]json.RawMessage `json:"responses"`
}

// openAPIMethods are the keys of a path item that name operations.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func parseOpenAPI(t *testing.T) (openAPIDocument, any) {
	t.Helper()
	var doc openAPIDocument
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	var tree any
	if err := json.Unmarshal(OpenAPI(), &tree); err != nil {
		t.Fatalf("openapi.json is not valid JSON: %v", err)
	}
	return doc, tree
}

func openAPIServer() *Server {
	return New(Config{}, nil, nil, nil, slog.New(slog.DiscardHandler), nil)
}

// documentedOperations lists "METHOD path" → operation for every operation in the document.
func documentedOperations(t *testing.T, doc openAPIDocument) map[string]openAPIOperation {
	t.Helper()
	ops := map[string]openAPIOperation{}
	for path, item := range doc.Paths {
		for key, raw := range item {
			if !slices.Contains(openAPIMethods, key) {
				continue
			}
			var op openAPIOperation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: operation is not an object: %v", strings.ToUpper(key), path, err)
			}
			ops[strings.ToUpper(key)+" "+path] = op
		}
	}
	return ops
}

func TestOpenAPIVersion(t *testing.T) {
	doc, _ := parseOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi = %q, want 3.1.x", doc.OpenAPI)
	}
}

// TestOpenAPIServedServers: a server serves the document with its own base
// URL in servers, and the rest of the document unchanged.
func TestOpenAPIServedServers(t *testing.T) {
	var embedded map[string]any
	if err := json.Unmarshal(OpenAPI(), &embedded); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ publicURL, want string }{
		{"https://voice.example.com", "https://voice.example.com"},
		{"https://voice.example.com/switchboard/", "https://voice.example.com/switchboard"},
		{"http://10.0.0.7:9000", "http://10.0.0.7:9000"},
	} {
		srv := New(Config{PublicURL: tt.publicURL}, nil, nil, nil, slog.New(slog.DiscardHandler), nil)
		w := serve(t, srv, httptest.NewRequest("GET", "/v1/openapi.json", nil))
		if w.Code != 200 {
			t.Fatalf("GET /v1/openapi.json with PublicURL %q = %d", tt.publicURL, w.Code)
		}
		var served map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &served); err != nil {
			t.Fatalf("served document with PublicURL %q is not JSON: %v", tt.publicURL, err)
		}
		want := []any{map[string]any{"url": tt.want, "description": serversDescription}}
		if !reflect.DeepEqual(served["servers"], want) {
			t.Errorf("servers with PublicURL %q = %v, want %v", tt.publicURL, served["servers"], want)
		}
		delete(served, "servers")
		rest := maps.Clone(embedded)
		delete(rest, "servers")
		if !reflect.DeepEqual(served, rest) {
			t.Errorf("with PublicURL %q the served document differs from openapi.json beyond servers", tt.publicURL)
		}
	}
	if got := servedOpenAPI(""); !bytes.Equal(got, OpenAPI()) {
		t.Errorf("servedOpenAPI(\"\") changed the document; want the template as it is")
	}
}

// TestOpenAPIDocumentsEveryRoute fails when a route is added without documentation.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	doc, _ := parseOpenAPI(t)
	ops := documentedOperations(t, doc)
	routes := openAPIServer().Routes()
	if len(routes) == 0 {
		t.Fatal("Routes() returned no routes")
	}
	for _, r := range routes {
		key := r[0] + " " + r[1]
		op, ok := ops[key]
		if !ok {
			t.Errorf("route %s is not documented in openapi.json", key)
			continue
		}
		_, ok200 := op.Responses["200"]
		_, ok201 := op.Responses["201"]
		_, ok101 := op.Responses["101"] // a websocket upgrade (a webhook listener's stream)
		if !ok200 && !ok201 && !ok101 {
			t.Errorf("%s: no 200, 201 or 101 response documented", key)
		}
	}
}

// TestOpenAPIOnlyRealRoutes fails when the document describes an operation the server does not serve.
func TestOpenAPIOnlyRealRoutes(t *testing.T) {
	doc, _ := parseOpenAPI(t)
	real := map[string]bool{}
	for _, r := range openAPIServer().Routes() {
		real[r[0]+" "+r[1]] = true
	}
	var extra []string
	for key := range documentedOperations(t, doc) {
		if !real[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(extra)
	for _, key := range extra {
		t.Errorf("openapi.json documents %s, which is not a route", key)
	}
}

// TestOpenAPIOperationDetails checks what the route table knows beyond
// method and path: scope, body, Idempotency-Key, path parameters.
func TestOpenAPIOperationDetails(t *testing.T) {
	doc, tree := parseOpenAPI(t)
	ops := documentedOperations(t, doc)
	ids := map[string]string{}
	for _, rt := range openAPIServer().routes {
		key := rt.method + " " + rt.path
		op, ok := ops[key]
		if !ok {
			continue // reported by TestOpenAPIDocumentsEveryRoute
		}
		if op.OperationID == "" {
			t.Errorf("%s: no operationId", key)
		} else if prev, dup := ids[op.OperationID]; dup {
			t.Errorf("%s: operationId %q already used by %s", key, op.OperationID, prev)
		}
		ids[op.OperationID] = key

		var want []string
		if rt.scope != "" {
			want = []string{rt.scope}
		}
		if !slices.Equal(op.XScopes, want) {
			t.Errorf("%s: x-scopes = %v, want %v", key, op.XScopes, want)
		}
		if rt.scope != "" && !strings.Contains(op.Description, rt.scope) {
			t.Errorf("%s: description does not name scope %s", key, rt.scope)
		}
		if rt.scope == "" && (op.Security == nil || len(*op.Security) != 0) {
			t.Errorf("%s: public route must have security: []", key)
		}
		for _, st := range []string{"401", "403", "429"} {
			if _, ok := op.Responses[st]; ok != (rt.scope != "") {
				t.Errorf("%s: %s response documented = %v, want %v", key, st, ok, rt.scope != "")
			}
		}
		for _, st := range []string{"405", "500"} {
			if _, ok := op.Responses[st]; !ok {
				t.Errorf("%s: no %s response", key, st)
			}
		}

		if hasBody := len(op.RequestBody) > 0; hasBody != (rt.body != noBody) {
			t.Errorf("%s: requestBody documented = %v, route takes a body = %v", key, hasBody, rt.body != noBody)
		}
		if rt.body != noBody {
			for _, st := range []string{"413", "415"} {
				if _, ok := op.Responses[st]; !ok {
					t.Errorf("%s: takes a body but documents no %s", key, st)
				}
			}
			var body struct {
				Required bool                       `json:"required"`
				Content  map[string]json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(op.RequestBody, &body); err != nil {
				t.Errorf("%s: requestBody: %v", key, err)
			}
			if _, ok := body.Content["application/json"]; !ok {
				t.Errorf("%s: requestBody has no application/json content", key)
			}
			if _, ok := body.Content["text/csv"]; ok != (rt.body == jsonOrCSVBody) {
				t.Errorf("%s: text/csv documented = %v, want %v", key, ok, rt.body == jsonOrCSVBody)
			}
			if body.Required != (rt.body != optionalJSONBody) {
				t.Errorf("%s: requestBody.required = %v, want %v", key, body.Required, rt.body != optionalJSONBody)
			}
		}

		idem := false
		for _, p := range op.Parameters {
			if p["$ref"] == "#/components/parameters/IdempotencyKey" {
				idem = true
			}
		}
		if idem != rt.create {
			t.Errorf("%s: Idempotency-Key parameter documented = %v, route honours it = %v", key, idem, rt.create)
		}
		if _, ok := op.Responses["409"]; rt.create && !ok {
			t.Errorf("%s: takes Idempotency-Key but documents no 409", key)
		}

		// Every {name} of the path is a declared path parameter.
		declared := pathParameters(t, doc, tree, rt.path)
		for _, seg := range strings.Split(rt.path, "/") {
			if name, ok := strings.CutPrefix(seg, "{"); ok {
				name = strings.TrimSuffix(name, "}")
				if !declared[name] {
					t.Errorf("%s: path parameter %s is not declared", key, name)
				}
			}
		}
	}
}

// pathParameters returns the names of the path parameters declared on a
// path item (resolving $refs into components).
func pathParameters(t *testing.T, doc openAPIDocument, tree any, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var params []any
	if raw, ok := doc.Paths[path]["parameters"]; ok {
		if err := json.Unmarshal(raw, &params); err != nil {
			t.Fatalf("%s: parameters: %v", path, err)
		}
	}
	for _, p := range params {
		m, _ := p.(map[string]any)
		if r, ok := m["$ref"].(string); ok {
			v, err := resolvePointer(tree, r)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			m, _ = v.(map[string]any)
		}
		if m["in"] == "path" && m["required"] == true {
			if name, ok := m["name"].(string); ok {
				out[name] = true
			}
		}
	}
	return out
}

// TestOpenAPIRefsResolve checks that every $ref points into the document.
func TestOpenAPIRefsResolve(t *testing.T) {
	_, tree := parseOpenAPI(t)
	n := 0
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if r, ok := v["$ref"]; ok {
				n++
				s, _ := r.(string)
				if _, err := resolvePointer(tree, s); err != nil {
					t.Errorf("%s: $ref %q: %v", at, s, err)
				}
			}
			for k, c := range v {
				walk(at+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(at+"/"+strconv.Itoa(i), c)
			}
		}
	}
	walk("#", tree)
	if n == 0 {
		t.Fatal("no $ref found; the document is expected to use components")
	}
}

// resolvePointer follows a local reference such as "#/components/schemas/Call".
func resolvePointer(tree any, ref string) (any, error) { return openapitest.Resolve(tree, ref) }

// schemaEnum returns the enum of components.schemas[name].
func schemaEnum(t *testing.T, tree any, name string) []string {
	t.Helper()
	v, err := resolvePointer(tree, "#/components/schemas/"+name+"/enum")
	if err != nil {
		t.Fatalf("components.schemas.%s.enum: %v", name, err)
	}
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// TestOpenAPIEnums: the enums the server's own lists decide are those
// lists: the webhook event types (event.Types), every error code a
// handler sets beside its kind's, every attempt state GET shows.
func TestOpenAPIEnums(t *testing.T) {
	_, tree := parseOpenAPI(t)
	if got, want := schemaEnum(t, tree, "WebhookEvent"), event.Types; !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("WebhookEvent enum = %v, want event.Types %v", got, want)
	}
	codes := schemaEnum(t, tree, "ErrorCode")
	for _, k := range []apperr.Kind{apperr.Invalid, apperr.Unauthenticated, apperr.PermissionDenied, apperr.NotFound, apperr.MethodNotAllowed,
		apperr.Conflict, apperr.TooLarge, apperr.UnsupportedMediaType, apperr.RateLimited, apperr.Internal, apperr.Unavailable} {
		if c := (&apperr.Error{Kind: k}).ErrorCode(); !slices.Contains(codes, c) {
			t.Errorf("ErrorCode enum %v lacks %q (kind %v)", codes, c, k)
		}
	}
	for _, c := range []string{phone.SuppressedCode, "number_taken", "transfer_refused", "idempotency_key_reused", "idempotency_request_in_progress"} {
		if !slices.Contains(codes, c) {
			t.Errorf("ErrorCode enum %v lacks %q", codes, c)
		}
	}
	states := schemaEnum(t, tree, "AttemptState")
	for _, st := range []schedule.AttemptState{schedule.Pending, schedule.Canceled, schedule.Failed, schedule.Suppressed} {
		if p := schedule.Progress(st, false); !slices.Contains(states, p) {
			t.Errorf("AttemptState enum %v lacks %q", states, p)
		}
	}
	for _, ended := range []bool{false, true} {
		if p := schedule.Progress(schedule.Dialed, ended); !slices.Contains(states, p) {
			t.Errorf("AttemptState enum %v lacks %q", states, p)
		}
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }
