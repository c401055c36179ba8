package httpapi

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/call"
)

// dirRecordings opens recordings under a directory, as recording.Archive does.
type dirRecordings string

func (d dirRecordings) Open(rel string) (*os.File, fs.FileInfo, error) {
	f, err := os.Open(filepath.Join(string(d), rel))
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// TestRecordingRanges: GET /v1/calls/{id}/recording serves byte ranges, as
// its description says, and each answer of a ranged or conditional
// download is one the document lists (serve checks them): 206 with
// Content-Range, 416 for a range past the end, 304 when not modified.
func TestRecordingRanges(t *testing.T) {
	b := newControlAPI(t, nil)
	dir := t.TempDir()
	b.s.cfg.Recordings = dirRecordings(dir)
	c := b.storeCall(call.Web, call.Ended)
	wav := []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
	if err := os.WriteFile(filepath.Join(dir, c.ID+".wav"), wav, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.db.SetCallRecording(t.Context(), b.org, c.ID, c.ID+".wav"); err != nil {
		t.Fatalf("SetCallRecording: %v", err)
	}
	path := "/v1/calls/" + c.ID + "/recording"
	for _, tt := range []struct {
		name, header, value string
		status              int
		body, contentRange  string
	}{
		{"whole", "", "", 200, string(wav), ""},
		{"range", "Range", "bytes=0-3", 206, "RIFF", "bytes 0-3/16"},
		{"past the end", "Range", "bytes=100-", 416, "", "bytes */16"},
		{"not modified", "If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), 304, "", ""},
	} {
		rq := httptest.NewRequest("GET", path, nil)
		rq.Header.Set("X-API-Key", b.key)
		if tt.header != "" {
			rq.Header.Set(tt.header, tt.value)
		}
		w := serve(t, b.s, rq)
		if w.Code != tt.status || w.Header().Get("Content-Range") != tt.contentRange || (tt.body != "" && w.Body.String() != tt.body) {
			t.Errorf("%s: GET %s with %s %q = %d, Content-Range %q, body %q; want %d, %q, %q",
				tt.name, path, tt.header, tt.value, w.Code, w.Header().Get("Content-Range"), w.Body.String(), tt.status, tt.contentRange, tt.body)
		}
	}
}
