// Package vendorapitest is the scaffolding under the fakes of vendors' APIs in
// internal/llm/llmtest and internal/speech/cloud/speechtest: a loopback
// HTTP server whose Close ends every stream still open, waits that give up
// as soon as the client leaves or the server closes, bounded reading of a
// request body, strict JSON decoding (the real APIs refuse unknown
// parameters) and JSON replies. What each fake says and checks (its wire
// format, its script) stays in its own package.
package vendorapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Server is a real HTTP server on loopback that a fake provider serves on.
// Its streams and waits watch Done, so Close never waits on a fake that is
// holding a reply open.
type Server struct {
	// URL is the server's root, http://127.0.0.1:port.
	URL string

	hs   *httptest.Server
	done chan struct{}
	once sync.Once
}

// NewServer starts h on loopback and closes it when the test ends.
func NewServer(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	s.hs = httptest.NewServer(h)
	s.URL = s.hs.URL
	t.Cleanup(s.Close)
	return s
}

// Close ends every stream still open (those waiting on Done) and shuts the
// server down. It is safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.hs.Close()
	})
}

// Done is closed when Close begins.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait sleeps d, returning false early if the client left (ctx, the
// request's context) or the server closed. With d <= 0 it only reports
// whether the client is still there.
func (s *Server) Wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// Hang blocks until the client leaves or the server closes: a reply held
// open, the case for cancellation.
func (s *Server) Hang(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-s.done:
	}
}

// ReadBody reads r's body, failing past limit bytes (what it read up to
// limit+1 is still returned, for the record).
func ReadBody(r *http.Request, limit int) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err == nil && len(body) > limit {
		err = fmt.Errorf("body over %d bytes", limit)
	}
	return body, err
}

// StrictDecode decodes raw into v refusing unknown fields and trailing
// data, as the real APIs refuse unknown parameters.
func StrictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON value")
	}
	return nil
}

// WriteJSON answers status with v as its JSON body.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a client that left gets nothing; the test's assertions say so
}

// Problems collects what is wrong with a request, so a fake reports every
// problem at once.
type Problems []string

// Add records one problem.
func (p *Problems) Add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }
