package vendorapitest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCloseEndsHang checks that Close returns while a handler is holding a
// reply open, and that the handler's Hang and Wait end with it.
func TestCloseEndsHang(t *testing.T) {
	t.Parallel()
	waited := make(chan bool, 1)
	var s *Server
	s = NewServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		s.Hang(r.Context())
		waited <- s.Wait(r.Context(), time.Hour)
	}))
	resp, err := http.Get(s.URL)
	if err != nil {
		t.Fatalf("GET %s: %v", s.URL, err)
	}
	defer resp.Body.Close()
	closed := make(chan struct{})
	go func() {
		s.Close()
		s.Close() // twice is safe
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a reply was hanging")
	}
	if <-waited {
		t.Error("Wait(1h) after Close = true, want false")
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done() is open after Close")
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	s := NewServer(t, http.NotFoundHandler())
	if !s.Wait(context.Background(), time.Millisecond) || !s.Wait(context.Background(), 0) {
		t.Error("Wait on a live client = false, want true")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s.Wait(ctx, time.Hour) || s.Wait(ctx, 0) {
		t.Error("Wait after the client left = true, want false")
	}
}

func TestReadBody(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body    string
		wantErr bool
	}{{"", false}, {"12345678", false}, {"123456789", true}} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
		got, err := ReadBody(r, 8)
		if (err != nil) != tt.wantErr || !strings.HasPrefix(tt.body, string(got)) {
			t.Errorf("ReadBody(%q, 8) = %q, %v; want the body and an error %v", tt.body, got, err, tt.wantErr)
		}
	}
}

func TestStrictDecode(t *testing.T) {
	t.Parallel()
	var v struct {
		Model string `json:"model"`
	}
	for _, tt := range []struct {
		raw     string
		wantErr bool
	}{
		{`{"model":"m"}`, false},
		{`{"model":"m","temperature":1}`, true},
		{`{"model":"m"} {}`, true},
		{`[`, true},
	} {
		if err := StrictDecode([]byte(tt.raw), &v); (err != nil) != tt.wantErr {
			t.Errorf("StrictDecode(%s) = %v, want an error %v", tt.raw, err, tt.wantErr)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	WriteJSON(w, http.StatusTeapot, map[string]string{"error": "short and stout"})
	body, _ := io.ReadAll(w.Result().Body)
	if w.Code != http.StatusTeapot || w.Header().Get("Content-Type") != "application/json" || strings.TrimSpace(string(body)) != `{"error":"short and stout"}` {
		t.Errorf("WriteJSON(418) = %d %q %s, want 418 application/json and the body", w.Code, w.Header().Get("Content-Type"), body)
	}
	var p Problems
	p.Add("model: %s", "required")
	if len(p) != 1 || p[0] != "model: required" {
		t.Errorf("Problems.Add = %q, want [\"model: required\"]", p)
	}
}
