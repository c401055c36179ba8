// Package recording records calls: a two-channel WAV (the caller on the
// left, the assistant on the right, 16-bit PCM at the pipeline's rate) of
// each call of an assistant that has recording on.
//
// A Recorder takes both sides' 20 ms frames from the voice pipeline's
// goroutines (voice.Config.Recorder) and never blocks them: each frame goes
// through a bounded channel to the Recorder's own goroutine, which puts the
// two sides on one timeline (silence where a side says nothing) and writes
// the WAV incrementally to a temporary file next to its final place. Close
// patches the RIFF sizes and renames the file into place atomically.
//
// A recording fails as a whole, never the call: when a write to disk fails
// (disk full, I/O error) or the writer falls more than the channel's
// capacity (Buffer frames, about 10 s of both sides) behind the audio, the
// partial file is deleted, Close says why, and the call goes on unrecorded.
package recording

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Buffer is the capacity, in frames, of the channel between the audio path
// and a Recorder's writer: 10 s of both sides.
const Buffer = 1000

// headerLen is the size of the canonical WAV header written first.
const headerLen = 44

// maxData is the largest data chunk a RIFF size can describe (about 18 h
// of 16 kHz stereo); a longer recording fails.
const maxData = 0xFFFFFFFF - 36

// ErrBehind is why a recording failed when its writer fell too far behind.
var ErrBehind = errors.New("recording: the writer fell behind the call's audio")

// file is what a Recorder writes: an *os.File, or a test's failing one.
type file interface {
	io.Writer
	io.WriterAt
	Sync() error
	Close() error
	Name() string
}

// Options tune a Recorder.
type Options struct {
	// Rate is the sample rate of the frames (default: 16000, the pipeline's).
	Rate int
	// Now stamps the frames as they arrive (default time.Now).
	Now func() time.Time
	// create opens the temporary file in dir (default os.CreateTemp).
	create func(dir, pattern string) (file, error)
}

// Recorder writes one call's recording. Caller and Assistant may be called
// from any goroutines until Close; Close once (more calls return the first
// result).
type Recorder struct {
	path string // final
	tmp  file
	now  func() time.Time
	tl   *timeline

	events  chan event
	done    chan struct{} // Close → writer: finish
	stopped chan struct{} // the writer has returned
	failed  atomic.Bool   // set by the audio path (writer behind) or the writer
	closed  atomic.Bool

	// Written by the writer before stopped closes, read after.
	err  error
	data int64 // bytes of the data chunk

	closeOnce sync.Once
	closeErr  error
	finish    sync.Once // Archive.Finish
	rel       string    // the path under the data directory (Archive)
}

type event struct {
	side int
	pcm  []int16
	at   time.Time
}

// Start opens a temporary file next to path and starts the recording's
// writer. The recording's clock starts now.
func Start(path string, o Options) (*Recorder, error) {
	if o.Rate <= 0 {
		o.Rate = 16000
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.create == nil {
		o.create = func(dir, pattern string) (file, error) { return os.CreateTemp(dir, pattern) }
	}
	dir, name := filepath.Dir(path), filepath.Base(path)
	f, err := o.create(dir, "."+name+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	r := &Recorder{
		path: path, tmp: f, now: o.Now,
		tl:      newTimeline(o.Rate, o.Now()),
		events:  make(chan event, Buffer),
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	hdr := header(o.Rate, 0)
	if _, err := f.Write(hdr); err != nil {
		r.discard()
		return nil, fmt.Errorf("recording: %w", err)
	}
	go r.write(o.Rate)
	return r, nil
}

// Caller records one frame of the caller's audio, as it arrives.
func (r *Recorder) Caller(pcm []int16) { r.put(callerSide, pcm) }

// Assistant records one frame of the assistant's audio, as it is sent.
func (r *Recorder) Assistant(pcm []int16) { r.put(assistantSide, pcm) }

func (r *Recorder) put(side int, pcm []int16) {
	if r.closed.Load() || r.failed.Load() {
		return
	}
	ev := event{side: side, pcm: append([]int16(nil), pcm...), at: r.now()}
	select {
	case r.events <- ev:
	default:
		r.failed.Store(true) // the writer notices at its next frame or at Close
	}
}

// write is the Recorder's goroutine: it aligns the frames and writes them.
func (r *Recorder) write(rate int) {
	defer close(r.stopped)
	w := bufio.NewWriterSize(r.tmp, 64<<10)
	buf := make([]byte, 16<<10)
	sink := func(b []byte) error {
		if r.data+int64(len(b)) > maxData {
			return errors.New("recording: longer than a WAV file can hold")
		}
		r.data += int64(len(b))
		_, err := w.Write(b)
		return err
	}
	fail := func(err error) {
		r.err = err
		r.failed.Store(true)
		r.discard()
	}
	for {
		select {
		case ev := <-r.events:
			if r.failed.Load() {
				fail(ErrBehind)
				return
			}
			r.tl.add(ev.side, ev.pcm, ev.at)
			if err := r.tl.emit(buf, sink); err != nil {
				fail(err)
				return
			}
		case <-r.done:
			if r.failed.Load() {
				fail(ErrBehind)
				return
			}
			end := r.now()
			for drained := false; !drained; {
				select {
				case ev := <-r.events:
					r.tl.add(ev.side, ev.pcm, ev.at)
				default:
					drained = true
				}
			}
			r.tl.finish(end)
			err := r.tl.emit(buf, sink)
			if err == nil {
				err = w.Flush()
			}
			if err == nil {
				_, err = r.tmp.WriteAt(header(rate, r.data), 0)
			}
			if err == nil {
				err = r.tmp.Sync()
			}
			if err != nil {
				fail(err)
				return
			}
			if err := r.tmp.Close(); err != nil {
				fail(err)
				return
			}
			if err := os.Rename(r.tmp.Name(), r.path); err != nil {
				r.err = err
				_ = os.Remove(r.tmp.Name())
			}
			return
		}
	}
}

// discard closes and deletes the temporary file.
func (r *Recorder) discard() {
	_ = r.tmp.Close()
	_ = os.Remove(r.tmp.Name())
}

// Close stops the recording, waits for its writer and returns nil when the
// WAV is in place at its path. Otherwise nothing is left on disk and the
// error says why the recording failed.
func (r *Recorder) Close() error {
	r.closeOnce.Do(func() {
		r.closed.Store(true)
		close(r.done)
		<-r.stopped
		r.closeErr = r.err
		if r.closeErr == nil && r.failed.Load() {
			r.closeErr = ErrBehind
		}
	})
	return r.closeErr
}

// Failed reports whether the recording has failed already (it will not be
// kept).
func (r *Recorder) Failed() bool { return r.failed.Load() }

// Path is where the recording is once Close succeeded.
func (r *Recorder) Path() string { return r.path }

// header is a canonical 44-byte WAV header for 16-bit stereo PCM at rate
// with data bytes of samples.
func header(rate int, data int64) []byte {
	b := make([]byte, headerLen)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+data))
	copy(b[8:], "WAVE")
	copy(b[12:], "fmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 2) // channels
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(rate*4)) // byte rate
	binary.LittleEndian.PutUint16(b[32:], 4)              // block align
	binary.LittleEndian.PutUint16(b[34:], 16)             // bits per sample
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(data))
	return b
}
