package httpapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"net/http"
	"strings"
)

// openAPIDoc is the OpenAPI 3.1 description of every route.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the embedded OpenAPI document. Its servers entry is a
// template ({base_url}); a running server serves its own base URL instead.
func OpenAPI() []byte { return openAPIDoc }

// serversDescription describes the one servers entry a running server serves.
const serversDescription = "This server (its public URL)."

// servedOpenAPI is the document as a server at publicURL serves it: its
// servers name that URL, so a client generated from it, or a "try it"
// console, talks to this server rather than to the template's default
// (http://127.0.0.1:8080). The rest of the document is byte for byte the
// embedded one. An empty publicURL leaves the template.
func servedOpenAPI(publicURL string) []byte {
	base := strings.TrimRight(publicURL, "/")
	if base == "" {
		return openAPIDoc
	}
	servers, err := json.Marshal([]map[string]string{{"url": base, "description": serversDescription}})
	if err != nil {
		return openAPIDoc
	}
	dec := json.NewDecoder(bytes.NewReader(openAPIDoc))
	if _, err := dec.Token(); err != nil { // the document's '{'
		return openAPIDoc
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return openAPIDoc
		}
		start := dec.InputOffset() // just after the key: ": value" follows
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return openAPIDoc
		}
		if key != "servers" {
			continue
		}
		end := dec.InputOffset()
		out := make([]byte, 0, len(openAPIDoc)+len(servers))
		out = append(out, openAPIDoc[:start]...)
		out = append(out, ": "...)
		out = append(out, servers...)
		return append(out, openAPIDoc[end:]...)
	}
	return openAPIDoc
}

func (s *Server) openAPI(ctx context.Context, r *request) (response, error) {
	return response{status: http.StatusOK, raw: s.openapi}, nil
}
