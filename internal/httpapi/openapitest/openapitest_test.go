package openapitest

import (
	"net/http"
	"strings"
	"testing"
)

// doc is a small document with what the checks read: a literal path
// beside a parameter one, shared responses, a required header, a binary
// answer, a request body.
const doc = `{
  "openapi": "3.1.0",
  "paths": {
    "/v1/things/{id}": {
      "get": {"operationId": "getThing", "responses": {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ThingResponse"}}}},
        "404": {"$ref": "#/components/responses/NotFound"}}}
    },
    "/v1/things/special": {
      "post": {"operationId": "special",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string"}}}}}},
        "responses": {"201": {"description": "made", "content": {"application/json": {"schema": {"type": "object", "required": ["id"]}}}}}}
    },
    "/v1/things/{id}/file": {
      "get": {"operationId": "file", "responses": {
        "200": {"description": "the file", "content": {"audio/wav": {"schema": {"type": "string", "format": "binary"}}}},
        "206": {"description": "part", "headers": {"Content-Range": {"required": true, "schema": {"type": "string"}}}, "content": {"audio/wav": {}}},
        "204": {"description": "nothing"},
        "5XX": {"$ref": "#/components/responses/NotFound"}}}
    }
  },
  "components": {
    "responses": {"NotFound": {"description": "missing", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}},
    "schemas": {
      "Error": {"type": "object", "required": ["code"], "properties": {"code": {"enum": ["not_found", "conflict"]}}},
      "ThingResponse": {"type": "object", "required": ["data"], "properties": {"data": {"type": "object", "required": ["id", "at"],
        "properties": {"id": {"type": "string"}, "at": {"type": "string", "format": "date-time"}}}}}
    }
  }
}`

func mustNew(t *testing.T) *Validator {
	t.Helper()
	v, err := New([]byte(doc))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v
}

func jsonHeader(ct string) http.Header { return http.Header{"Content-Type": {ct}} }

// TestOperation: the literal path wins over the parameter one, as the
// server's router chooses; unknown paths and methods are no operation.
func TestOperation(t *testing.T) {
	v := mustNew(t)
	for _, tt := range []struct{ method, path, want string }{
		{"POST", "/v1/things/special", "POST /v1/things/special"},
		// The router picks the path first: GET of the literal path is its
		// 405, not the parameter path's GET.
		{"GET", "/v1/things/special", ""},
		{"GET", "/v1/things/t1?x=1", "GET /v1/things/{id}"},
		{"GET", "/v1/things/a%2Fb", "GET /v1/things/{id}"},
		{"GET", "/v1/things/t1/file", "GET /v1/things/{id}/file"},
		{"DELETE", "/v1/things/t1", ""},
		{"GET", "/v1/things/", ""},
		{"GET", "/healthz", ""},
	} {
		if got := v.Operation(tt.method, tt.path); got != tt.want {
			t.Errorf("Operation(%s %s) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

// TestCheckResponse: each promise of a response is checked, and the
// error names the request, the operation, the status and what failed.
func TestCheckResponse(t *testing.T) {
	v := mustNew(t)
	js := jsonHeader("application/json; charset=utf-8")
	for _, tt := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body               string
		want               []string // substrings of the error; none: valid
	}{
		{"valid", "GET", "/v1/things/t1", 200, js, `{"data":{"id":"t1","at":"2026-01-02T03:04:05.000Z"}}`, nil},
		{"shared response", "GET", "/v1/things/t1", 404, js, `{"code":"not_found"}`, nil},
		{"undocumented path", "GET", "/healthz", 200, nil, "ok", nil},
		{"status not listed", "GET", "/v1/things/t1", 409, js, `{"code":"conflict"}`,
			[]string{"GET /v1/things/t1 (operation GET /v1/things/{id}) answered 409", "does not list status 409 (it lists 200, 404)"}},
		{"schema", "GET", "/v1/things/t1", 200, js, `{"data":{"id":7,"at":"2026-01-02T03:04:05.000Z"}}`,
			[]string{"answered 200", "does not match the documented schema", "/data/id"}},
		{"format", "GET", "/v1/things/t1", 200, js, `{"data":{"id":"t1","at":"yesterday"}}`,
			[]string{"/data/at", "date-time"}},
		{"enum through a shared response", "GET", "/v1/things/t1", 404, js, `{"code":"suppressed"}`,
			[]string{"answered 404", "/code"}},
		{"content type", "GET", "/v1/things/t1", 200, jsonHeader("text/plain"), `{}`,
			[]string{"Content-Type text/plain is not documented (documented: application/json)"}},
		{"not JSON", "GET", "/v1/things/t1", 200, js, `{"data":`, []string{"is not JSON"}},
		{"binary", "GET", "/v1/things/t1/file", 200, jsonHeader("audio/wav"), "RIFF....", nil},
		{"required header present", "GET", "/v1/things/t1/file", 206, http.Header{"Content-Type": {"audio/wav"}, "Content-Range": {"bytes 0-3/8"}}, "RIFF", nil},
		{"required header missing", "GET", "/v1/things/t1/file", 206, jsonHeader("audio/wav"), "RIFF",
			[]string{"answered 206", "required header Content-Range is missing"}},
		{"no body documented", "GET", "/v1/things/t1/file", 204, js, `{}`, []string{"documents no body"}},
		{"status range", "GET", "/v1/things/t1/file", 503, js, `{"code":"not_found"}`, nil},
		{"status outside the ranges", "GET", "/v1/things/t1/file", 404, js, `{"code":"not_found"}`,
			[]string{"it lists 200, 204, 206, 5XX"}},
	} {
		err := v.CheckResponse(tt.method, tt.path, tt.status, tt.header, []byte(tt.body))
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: CheckResponse(%s %s %d %s) = %v, want nil", tt.name, tt.method, tt.path, tt.status, tt.body, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: CheckResponse(%s %s %d %s) = nil, want an error with %q", tt.name, tt.method, tt.path, tt.status, tt.body, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: CheckResponse(%s %s %d) = %q, want it to contain %q", tt.name, tt.method, tt.path, tt.status, err, w)
			}
		}
	}
}

// TestCheckRequest: a body the request schema refuses, an undocumented
// content type and a body where none is documented are errors.
func TestCheckRequest(t *testing.T) {
	v := mustNew(t)
	js := jsonHeader("application/json")
	for _, tt := range []struct {
		name, method, path string
		header             http.Header
		body               string
		want               string
	}{
		{"valid", "POST", "/v1/things/special", js, `{"name":"a"}`, ""},
		{"unknown field", "POST", "/v1/things/special", js, `{"name":"a","x":1}`, "does not match the documented request schema"},
		{"missing body", "POST", "/v1/things/special", js, ``, "requires a body"},
		{"content type", "POST", "/v1/things/special", jsonHeader("text/csv"), `a`, "Content-Type text/csv is not documented"},
		{"body on a bodiless operation", "GET", "/v1/things/t1", js, `{}`, "documents no request body"},
		{"no body", "GET", "/v1/things/t1", nil, ``, ""},
	} {
		err := v.CheckRequest(tt.method, tt.path, tt.header, []byte(tt.body))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: CheckRequest(%s %s %s) = %v, want nil", tt.name, tt.method, tt.path, tt.body, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: CheckRequest(%s %s %s) = %v, want an error with %q", tt.name, tt.method, tt.path, tt.body, err, tt.want)
		}
	}
}

// TestCheckExchange: a request body is held to the schema only when the
// server accepted it.
func TestCheckExchange(t *testing.T) {
	v := mustNew(t)
	js := jsonHeader("application/json")
	bad := []byte(`{"name":"a","x":1}`)
	if err := v.CheckExchange("POST", "/v1/things/special", js, bad, 201, js, []byte(`{"id":"t1"}`)); err == nil || !strings.Contains(err.Error(), "request POST /v1/things/special") {
		t.Errorf("CheckExchange(an accepted body the schema refuses) = %v, want the request's error", err)
	}
	if err := v.CheckExchange("POST", "/v1/things/special", js, bad, 201, js, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "answered 201") || !strings.Contains(err.Error(), "request POST") {
		t.Errorf("CheckExchange(bad body, bad answer) = %v, want both errors", err)
	}
}
