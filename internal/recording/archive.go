package recording

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"

	"switchboard/internal/apperr"
)

// Store is what an Archive writes: that a call has a recording, at a path
// relative to the data directory.
type Store interface {
	SetCallRecording(ctx context.Context, orgID, callID, path string) error
}

// Archive keeps the recordings of a server under its data directory, at
// recordings/<orgID>/<callID>.wav. Nothing deletes them yet (retention is
// a later issue).
type Archive struct {
	dir   string
	store Store
	log   *slog.Logger
}

// NewArchive returns the archive of data directory dir.
func NewArchive(dir string, st Store, log *slog.Logger) *Archive {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Archive{dir: dir, store: st, log: log}
}

// Dir is the data directory.
func (a *Archive) Dir() string { return a.dir }

// Start begins recording a call. An error means the call goes unrecorded
// (the caller logs it); the call itself is not affected.
func (a *Archive) Start(orgID, callID string) (*Recorder, error) {
	rel, err := relPath(orgID, callID)
	if err != nil {
		return nil, err
	}
	full := filepath.Join(a.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o750); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r, err := Start(full, Options{})
	if err != nil {
		return nil, err
	}
	r.rel = rel
	return r, nil
}

// Finish closes r and, when its WAV is in place, records it on the call.
// A failed recording is logged as a warning and leaves nothing behind.
// Only the first call does anything, so the end of a call and the end of
// its pipeline may both call it.
func (a *Archive) Finish(ctx context.Context, orgID, callID string, r *Recorder) {
	if r == nil {
		return
	}
	r.finish.Do(func() {
		log := a.log.With("org_id", orgID, "call_id", callID)
		if err := r.Close(); err != nil {
			log.Warn("the call's recording failed and was deleted; the call goes on", "err", err)
			return
		}
		if err := a.store.SetCallRecording(ctx, orgID, callID, r.rel); err != nil {
			log.Warn("the call's recording could not be stored; deleting it", "err", err)
			_ = os.Remove(r.path)
		}
	})
}

// Open opens a call's recording (rel as stored on the call). A missing
// file is NotFound.
func (a *Archive) Open(rel string) (*os.File, fs.FileInfo, error) {
	if rel == "" || !strings.HasPrefix(rel, "recordings/") || strings.Contains(rel, "..") {
		return nil, nil, apperr.NotFoundf("recording not found")
	}
	f, err := os.Open(filepath.Join(a.dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, apperr.NotFoundf("recording not found")
	} else if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// relPath is a call's recording path under the data directory. Ids are
// made by the server, but they become file names: anything but letters,
// digits, '_' and '-' is refused.
func relPath(orgID, callID string) (string, error) {
	for _, s := range []string{orgID, callID} {
		if s == "" || strings.ContainsFunc(s, func(c rune) bool {
			return (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' && c != '-'
		}) {
			return "", fmt.Errorf("recording: %q cannot name a file", s)
		}
	}
	return path.Join("recordings", orgID, callID+".wav"), nil
}
