package httpapi

import (
	"context"
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.1 description of every route.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the embedded OpenAPI document.
func OpenAPI() []byte { return openAPIDoc }

func (s *Server) openAPI(ctx context.Context, r *request) (response, error) {
	return response{status: http.StatusOK, raw: openAPIDoc}, nil
}
