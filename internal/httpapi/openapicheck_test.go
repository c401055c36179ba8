package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"switchboard/internal/httpapi/openapitest"
)

// documented is openapi.json as a validator, built once for the package's tests.
var documented = sync.OnceValues(func() (*openapitest.Validator, error) { return openapitest.New(OpenAPI()) })

// serve runs rq through h and checks the exchange against openapi.json
// (openapitest: the answer always, the request body when it was
// accepted), failing t on a mismatch. Every test of this package that
// sends a request through the Server uses it, so the document cannot
// drift from the handlers.
func serve(t testing.TB, h http.Handler, rq *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	v, err := documented()
	if err != nil {
		t.Errorf("openapi.json: %v", err) // not Fatal: serve may run on a test's other goroutines
		v = nil
	}
	var sent []byte
	if rq.Body != nil {
		sent, _ = io.ReadAll(rq.Body)
		rq.Body = io.NopCloser(bytes.NewReader(sent))
	}
	method, uri, header := rq.Method, rq.URL.RequestURI(), rq.Header.Clone()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, rq)
	if v == nil {
		return w
	}
	if err := v.CheckExchange(method, uri, header, sent, w.Code, w.Header(), w.Body.Bytes()); err != nil {
		t.Errorf("%v", err)
	}
	return w
}
