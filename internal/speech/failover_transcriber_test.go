package speech_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/internal/speech"
)

// fakeSTT is a Transcriber over fakeStreams, which answer every Finish
// with a final "<name> n=<samples> v=<first sample>" of the utterance, and
// fail as a test tells them.
type fakeSTT struct {
	name     string
	startErr error

	mu      sync.Mutex
	starts  []speech.TranscribeOptions
	streams []*fakeStream
}

func (f *fakeSTT) Name() string { return f.name }

func (f *fakeSTT) Start(ctx context.Context, opts speech.TranscribeOptions) (speech.TranscribeStream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, opts)
	if f.startErr != nil {
		return nil, f.startErr
	}
	s := &fakeStream{name: f.name, results: make(chan speech.Transcript, 16), hints: [][]string{opts.Hints}}
	s.stopCtx = context.AfterFunc(ctx, func() { s.fail(ctx.Err()) })
	f.streams = append(f.streams, s)
	return s, nil
}

func (f *fakeSTT) stream(i int) *fakeStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.streams) {
		return nil
	}
	return f.streams[i]
}

func (f *fakeSTT) startOpts() []speech.TranscribeOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.starts)
}

type fakeStream struct {
	name    string
	results chan speech.Transcript
	stopCtx func() bool

	mu        sync.Mutex
	utt       []int16
	all       []int16 // everything written
	finishes  int
	hints     [][]string // at Start, then each SetHints
	writeErr  error      // Write returns it
	finishErr error      // Finish returns it
	silent    bool       // Finish gets no answer
	hold      bool       // Finish's answer waits for release
	held      []speech.Transcript
	ended     bool
	closed    bool
	err       error
}

func (s *fakeStream) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errors.New("write on an ended stream")
	}
	if s.writeErr != nil {
		return s.writeErr
	}
	s.utt = append(s.utt, pcm...)
	s.all = append(s.all, pcm...)
	return nil
}

func (s *fakeStream) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return errors.New("finish on an ended stream")
	}
	if s.finishErr != nil {
		return s.finishErr
	}
	s.finishes++
	t := speech.Transcript{Final: true, Text: s.describeLocked()}
	s.utt = nil
	switch {
	case s.hold:
		s.held = append(s.held, t)
	case !s.silent:
		s.results <- t
	}
	return nil
}

// release sends the finals held back (hold), late.
func (s *fakeStream) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.held {
		s.results <- t
	}
	s.held, s.hold = nil, false
}

func (s *fakeStream) describeLocked() string {
	v := int16(0)
	if len(s.utt) > 0 {
		v = s.utt[0]
	}
	return fmt.Sprintf("%s n=%d v=%d", s.name, len(s.utt), v)
}

// partial sends a partial result of the utterance so far; a stream that
// has ended sends nothing (the test's ticker may outlive it: the wrapper
// closes a stream it gave up on).
func (s *fakeStream) partial() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.results <- speech.Transcript{Text: s.describeLocked()}
}

// endpoint sends a final nobody asked for (an engine's own endpointing).
func (s *fakeStream) endpoint() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results <- speech.Transcript{Final: true, Text: s.describeLocked()}
	s.utt = nil
}

func (s *fakeStream) SetHints(h []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hints = append(s.hints, h)
}

func (s *fakeStream) Results() <-chan speech.Transcript { return s.results }

func (s *fakeStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// fail ends the stream with err, as a dropped socket does.
func (s *fakeStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.err = true, err
	close(s.results)
}

func (s *fakeStream) Close() error {
	s.stopCtx()
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.fail(nil)
	return nil
}

func (s *fakeStream) set(f func(s *fakeStream)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

func (s *fakeStream) state() (all []int16, finishes int, hints [][]string, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.all), s.finishes, slices.Clone(s.hints), s.closed
}

// sttBundle is a FailoverTranscriber over two fakeSTTs.
type sttBundle struct {
	primary, fallback *fakeSTT
	f                 *speech.TranscriberFailover
}

func setupSTT(t *testing.T, withFallback bool) sttBundle {
	t.Helper()
	b := sttBundle{primary: &fakeSTT{name: "primary"}, fallback: &fakeSTT{name: "fb"}}
	var fb speech.TranscriberFallback
	if withFallback {
		fb = speech.TranscriberFallback{Transcriber: b.fallback, Model: "fb-model"}
	}
	b.f = speech.FailoverTranscriber(b.primary, fb, speech.TranscriberFailoverOptions{})
	return b
}

func (b sttBundle) start(t *testing.T, ctx context.Context, hints ...string) speech.TranscribeStream {
	t.Helper()
	s, err := b.f.Start(ctx, speech.TranscribeOptions{SampleRate: 8000, Language: "en-US", Model: "p-model", Hints: hints})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// say writes ms of audio of value v in 20 ms frames.
func say(t *testing.T, s speech.TranscribeStream, ms int, v int16) {
	t.Helper()
	frame := make([]int16, 160)
	for i := range frame {
		frame[i] = v
	}
	for range ms / 20 {
		if err := s.Write(frame); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
}

func finish(t *testing.T, s speech.TranscribeStream) {
	t.Helper()
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
}

// final reads results until a final one.
func final(t *testing.T, s speech.TranscribeStream) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case r, ok := <-s.Results():
			if !ok {
				t.Fatalf("Results closed before a final result (Err %v)", s.Err())
			}
			if r.Final {
				return r.Text
			}
		case <-timeout:
			t.Fatal("no final result within a minute")
		}
	}
}

// ended waits for Results to close and returns Err.
func ended(t *testing.T, s speech.TranscribeStream) error {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case _, ok := <-s.Results():
			if !ok {
				return s.Err()
			}
		case <-timeout:
			t.Fatal("Results still open after a minute")
		}
	}
}

func wantFinal(t *testing.T, s speech.TranscribeStream, want string) {
	t.Helper()
	if got := final(t, s); got != want {
		t.Errorf("final = %q, want %q", got, want)
	}
}

func TestFailoverTranscriberPrimaryWorks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		s := b.start(t, t.Context())
		say(t, s, 400, 1)
		finish(t, s)
		wantFinal(t, s, "primary n=3200 v=1")
		say(t, s, 200, 2)
		finish(t, s)
		wantFinal(t, s, "primary n=1600 v=2")
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := ended(t, s); err != nil {
			t.Errorf("Err after Close = %v, want nil", err)
		}
		if b.f.FailedOver() || b.fallback.stream(0) != nil {
			t.Errorf("FailedOver() = %v, fallback started: %v; want neither", b.f.FailedOver(), b.fallback.stream(0) != nil)
		}
		if _, _, _, closed := b.primary.stream(0).state(); !closed {
			t.Error("the primary's stream was not closed")
		}
		if err := s.Write(make([]int16, 160)); err == nil {
			t.Error("Write after Close = nil, want an error")
		}
	})
}

// TestFailoverTranscriberSwitch covers each way a primary stream fails in
// the middle of an utterance: the fallback gets the whole utterance, the
// results continue on the same channel, and the call stays on it.
func TestFailoverTranscriberSwitch(t *testing.T) {
	for _, c := range []struct {
		name string
		// breakIt makes the primary's stream fail after 300 ms of the
		// utterance; finished says the utterance was finished before.
		breakIt  func(p *fakeStream)
		finished bool
	}{
		{name: "socket drop", breakIt: func(p *fakeStream) { p.fail(errors.New("socket dropped")) }},
		{name: "results close without an error", breakIt: func(p *fakeStream) { p.fail(nil) }},
		{name: "Write errors", breakIt: func(p *fakeStream) { p.set(func(p *fakeStream) { p.writeErr = errors.New("write failed") }) }},
		{name: "Finish errors", breakIt: func(p *fakeStream) { p.set(func(p *fakeStream) { p.finishErr = errors.New("finish failed") }) }},
		{name: "no final after Finish", breakIt: func(p *fakeStream) { p.set(func(p *fakeStream) { p.silent = true }) }, finished: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := setupSTT(t, true)
				s := b.start(t, t.Context(), "yes", "no")
				say(t, s, 200, 1)
				finish(t, s)
				wantFinal(t, s, "primary n=1600 v=1") // answered: not replayed

				say(t, s, 300, 2)
				p := b.primary.stream(0)
				p.partial()
				c.breakIt(p)
				if c.finished {
					finish(t, s)
					// FinalTimeout plus the utterance's 300 ms.
					time.Sleep(speech.DefaultFinalTimeout + 300*time.Millisecond + time.Millisecond)
				} else {
					synctest.Wait()
					say(t, s, 200, 2)
					finish(t, s)
				}
				want := "fb n=4000 v=2"
				if c.finished {
					want = "fb n=2400 v=2"
				}
				wantFinal(t, s, want)
				if !b.f.FailedOver() || b.f.Name() != "fb" {
					t.Errorf("FailedOver() = %v, Name() = %q; want true, fb", b.f.FailedOver(), b.f.Name())
				}
				if _, _, _, closed := p.state(); !closed {
					t.Error("the failed primary stream was not closed")
				}
				opts := b.fallback.startOpts()
				if len(opts) != 1 || opts[0].Model != "fb-model" || opts[0].Language != "en-US" || opts[0].SampleRate != 8000 || !slices.Equal(opts[0].Hints, []string{"yes", "no"}) {
					t.Errorf("fallback started with %+v, want its own model, the stream's language, rate and hints", opts)
				}
				// The call carries on on the fallback.
				say(t, s, 100, 3)
				finish(t, s)
				wantFinal(t, s, "fb n=800 v=3")
				if n := len(b.primary.startOpts()); n != 1 {
					t.Errorf("primary started %d times, want 1", n)
				}
				// A later stream of the call starts on the fallback.
				s2 := b.start(t, t.Context())
				say(t, s2, 100, 4)
				finish(t, s2)
				wantFinal(t, s2, "fb n=800 v=4")
				if n := len(b.primary.startOpts()); n != 1 {
					t.Errorf("after a failover, Start used the primary (%d starts), want the fallback", n)
				}
			})
		})
	}
}

// TestFailoverTranscriberReplaysPending: utterances finished but not yet
// answered are replayed with their Finish, then the open one, each with
// the hints it started with.
func TestFailoverTranscriberReplaysPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		s := b.start(t, t.Context(), "yes", "no")
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.silent = true })
		say(t, s, 100, 1)
		finish(t, s) // no answer: pending
		s.(speech.Hinter).SetHints(nil)
		say(t, s, 200, 2) // open utterance, with the new hints
		s.(speech.Hinter).SetHints([]string{"book"})
		if _, _, hints, _ := p.state(); len(hints) != 3 || hints[1] != nil || hints[2][0] != "book" {
			t.Errorf("primary's hints = %q, want Start's, then nil, then [book]", hints)
		}
		time.Sleep(speech.DefaultFinalTimeout + 100*time.Millisecond + time.Millisecond)
		wantFinal(t, s, "fb n=800 v=1")
		fbs := b.fallback.stream(0)
		all, finishes, hints, _ := fbs.state()
		if len(all) != 800+1600 || all[0] != 1 || all[800] != 2 || finishes != 1 {
			t.Errorf("fallback got %d samples and %d finishes, want 800 of 1 then 1600 of 2, and 1 finish", len(all), finishes)
		}
		// Start with the first utterance's hints; nil before the second;
		// the hints in force for the next.
		if want := [][]string{{"yes", "no"}, nil, {"book"}}; len(hints) != 3 || !slices.Equal(hints[0], want[0]) || hints[1] != nil || !slices.Equal(hints[2], want[2]) {
			t.Errorf("fallback's hints = %q, want %q", hints, want)
		}
		finish(t, s)
		wantFinal(t, s, "fb n=1600 v=2")
	})
}

// TestFailoverTranscriberEndpointedFinal: a final nobody asked for (the
// engine's own endpointing) covers the utterance so far: it is not
// replayed.
func TestFailoverTranscriberEndpointedFinal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		s := b.start(t, t.Context())
		say(t, s, 200, 1)
		p := b.primary.stream(0)
		p.endpoint()
		wantFinal(t, s, "primary n=1600 v=1")
		say(t, s, 100, 2)
		p.fail(errors.New("socket dropped"))
		synctest.Wait()
		finish(t, s)
		wantFinal(t, s, "fb n=800 v=2")
	})
}

// result reads the next result, failing on a closed channel.
func result(t *testing.T, s speech.TranscribeStream) speech.Transcript {
	t.Helper()
	select {
	case r, ok := <-s.Results():
		if !ok {
			t.Fatalf("Results closed (Err %v), want a result", s.Err())
		}
		return r
	case <-time.After(time.Hour):
		t.Fatal("no result within an hour")
	}
	return speech.Transcript{}
}

// wantDropped reads the next result, which must be a Dropped final that
// went out after the utterance's full time: FinalTimeout plus its length.
func wantDropped(t *testing.T, s speech.TranscribeStream, finished time.Time, uttLen time.Duration) {
	t.Helper()
	r := result(t, s)
	if !r.Final || !r.Dropped || r.Text != "" {
		t.Fatalf("result = %+v, want a Dropped final without text", r)
	}
	if took, want := time.Since(finished), speech.DefaultFinalTimeout+uttLen; took != want {
		t.Errorf("dropped %v after Finish, want %v (FinalTimeout + the utterance's %v)", took, want, uttLen)
	}
}

// TestFailoverTranscriberNoFallbackRestarts: with no fallback, a stream
// that breaks is opened again on the same engine: the utterance it owed a
// final is dropped (a Dropped final in its place), the open one is
// replayed, and the call goes on. An engine whose stream does not open
// again is gone: the stream ends transcriber-failed.
func TestFailoverTranscriberNoFallbackRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, false)
		s := b.start(t, t.Context(), "yes", "no")
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.silent = true })
		say(t, s, 100, 1)
		finish(t, s) // owed when the stream breaks
		say(t, s, 200, 2)
		p.fail(errors.New("socket dropped"))
		if r := result(t, s); !r.Final || !r.Dropped {
			t.Fatalf("result after the break = %+v, want a Dropped final for the owed utterance", r)
		}
		synctest.Wait()
		p2 := b.primary.stream(1)
		if p2 == nil {
			t.Fatal("the primary's stream was not opened again")
		}
		all, _, hints, _ := p2.state()
		if len(all) != 1600 || all[0] != 2 || !slices.Equal(hints[0], []string{"yes", "no"}) {
			t.Errorf("the new stream got %d samples (first %v), hints %q; want the open utterance's 1600 of 2, its hints", len(all), all, hints)
		}
		say(t, s, 100, 2)
		finish(t, s)
		wantFinal(t, s, "primary n=2400 v=2")
		if b.f.FailedOver() {
			t.Error("FailedOver() = true with no fallback")
		}

		b.primary.mu.Lock()
		b.primary.startErr = errors.New("engine unloaded")
		b.primary.mu.Unlock()
		p2.fail(errors.New("socket dropped again"))
		err := ended(t, s)
		if !errors.Is(err, speech.ErrTranscriberFailed) || !strings.Contains(err.Error(), "socket dropped again") || !strings.Contains(err.Error(), "engine unloaded") {
			t.Errorf("Err = %v, want ErrTranscriberFailed naming the break and the failed start", err)
		}
		if err := s.Write(make([]int16, 160)); !errors.Is(err, speech.ErrTranscriberFailed) {
			t.Errorf("Write after the failure = %v, want the stream's error", err)
		}
	})
}

// TestFailoverTranscriberNoFallbackOverdue: with no fallback, an
// utterance whose final result does not come within FinalTimeout plus
// its own length is dropped, and the stream goes on; the engine's final
// for it, when it comes late, is discarded, so the next utterance gets its
// own.
func TestFailoverTranscriberNoFallbackOverdue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, false)
		s := b.start(t, t.Context())
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.hold = true })
		say(t, s, 2000, 1)
		finish(t, s)
		start := time.Now()
		time.Sleep(speech.DefaultFinalTimeout + 2*time.Second - time.Millisecond)
		select {
		case r := <-s.Results():
			t.Fatalf("result %+v before the utterance's time was up", r)
		default:
		}
		wantDropped(t, s, start, 2*time.Second)

		p.release() // the late final: discarded
		say(t, s, 100, 2)
		finish(t, s)
		wantFinal(t, s, "primary n=800 v=2")
		dropped, late := s.(interface{ Utterances() (int64, int64) }).Utterances()
		if dropped != 1 || late != 1 {
			t.Errorf("Utterances() = %d dropped, %d late; want 1, 1", dropped, late)
		}
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := ended(t, s); err != nil {
			t.Errorf("Err after Close = %v, want nil", err)
		}
	})
}

// TestFailoverTranscriberWorkingEngine: with no fallback, an engine that
// is still working — it keeps giving partial results, as the local one
// does while it catches up on a busy machine — is waited for past the
// utterance's time: its late final is delivered. It is dropped all the
// same MaxFinalWait after its time.
func TestFailoverTranscriberWorkingEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, false)
		s := b.start(t, t.Context())
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.hold = true })
		working := make(chan struct{})
		go func() { // a partial every 2 s until told to stop
			for {
				select {
				case <-working:
					return
				case <-time.After(2 * time.Second):
					p.partial()
				}
			}
		}()
		say(t, s, 1000, 1)
		finish(t, s)
		time.Sleep(speech.DefaultFinalTimeout + time.Second + 10*time.Second) // 10 s past its time
		p.release()
		for r := result(t, s); !r.Final; r = result(t, s) {
		}
		// Released: the final read above was the late one, not a Dropped.
		if dropped, _ := s.(interface{ Utterances() (int64, int64) }).Utterances(); dropped != 0 {
			t.Errorf("Utterances() dropped = %d, want 0: the engine was working", dropped)
		}

		p.set(func(p *fakeStream) { p.hold = true })
		say(t, s, 1000, 2)
		finish(t, s)
		start := time.Now()
		for {
			r := result(t, s)
			if r.Final {
				if !r.Dropped {
					t.Fatalf("final %+v, want a Dropped one", r)
				}
				break
			}
		}
		close(working)
		if took, want := time.Since(start), speech.DefaultFinalTimeout+time.Second+speech.MaxFinalWait; took != want {
			t.Errorf("dropped %v after Finish while the engine worked, want %v (its time + MaxFinalWait)", took, want)
		}
	})
}

// TestFailoverTranscriberQueuedWait: finals come in order, so an
// utterance finished while the one before still waits has its full time
// from that one's answer, not from its own Finish.
func TestFailoverTranscriberQueuedWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, false)
		s := b.start(t, t.Context())
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.silent = true })
		say(t, s, 1000, 1)
		finish(t, s)
		say(t, s, 100, 2)
		finish(t, s)
		start := time.Now()
		wantDropped(t, s, start, time.Second)
		wantDropped(t, s, time.Now(), 100*time.Millisecond)
	})
}

// TestFailoverTranscriberGone: an engine that fails MaxFailuresInARow
// utterances in a row is gone: the stream ends transcriber-failed, timed
// out. A final in between, late or not, starts the count over.
func TestFailoverTranscriberGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, false)
		s := b.start(t, t.Context())
		p := b.primary.stream(0)
		p.set(func(p *fakeStream) { p.hold = true })
		for range speech.MaxFailuresInARow - 1 {
			say(t, s, 100, 1)
			finish(t, s)
			wantDropped(t, s, time.Now(), 100*time.Millisecond)
		}
		p.release() // late finals: the engine is alive
		p.set(func(p *fakeStream) { p.silent = true })
		for range speech.MaxFailuresInARow - 1 {
			say(t, s, 100, 1)
			finish(t, s)
			wantDropped(t, s, time.Now(), 100*time.Millisecond)
		}
		say(t, s, 100, 1)
		finish(t, s)
		start := time.Now()
		err := ended(t, s)
		if !errors.Is(err, speech.ErrTranscriberFailed) || !errors.Is(err, speech.ErrTimeout) || !strings.Contains(err.Error(), "in a row") {
			t.Errorf("Err = %v, want ErrTranscriberFailed and ErrTimeout, saying the failures were in a row", err)
		}
		if took, want := time.Since(start), speech.DefaultFinalTimeout+100*time.Millisecond; took != want {
			t.Errorf("ended %v after the last Finish, want %v", took, want)
		}
		dropped, _ := s.(interface{ Utterances() (int64, int64) }).Utterances()
		if want := int64(2 * (speech.MaxFailuresInARow - 1)); dropped != want {
			t.Errorf("Utterances() dropped = %d, want %d", dropped, want)
		}
	})
}

func TestFailoverTranscriberBothFail(t *testing.T) {
	t.Run("fallback does not start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := setupSTT(t, true)
			b.fallback.startErr = errors.New("fallback refused")
			s := b.start(t, t.Context())
			b.primary.stream(0).fail(errors.New("socket dropped"))
			err := ended(t, s)
			if !errors.Is(err, speech.ErrTranscriberFailed) || !strings.Contains(err.Error(), "socket dropped") || !strings.Contains(err.Error(), "fallback refused") {
				t.Errorf("Err = %v, want ErrTranscriberFailed naming both errors", err)
			}
		})
	})
	t.Run("fallback fails later", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := setupSTT(t, true)
			s := b.start(t, t.Context())
			b.primary.stream(0).fail(errors.New("socket dropped"))
			synctest.Wait()
			say(t, s, 100, 1)
			finish(t, s)
			wantFinal(t, s, "fb n=800 v=1")
			// The fallback's stream breaks: it is opened again...
			b.fallback.stream(0).fail(errors.New("fallback blip"))
			synctest.Wait()
			say(t, s, 100, 2)
			finish(t, s)
			wantFinal(t, s, "fb n=800 v=2")
			// ...until it does not open.
			b.fallback.mu.Lock()
			b.fallback.startErr = errors.New("fallback refused")
			b.fallback.mu.Unlock()
			b.fallback.stream(1).fail(errors.New("fallback dropped"))
			err := ended(t, s)
			if !errors.Is(err, speech.ErrTranscriberFailed) || !strings.Contains(err.Error(), "socket dropped") || !strings.Contains(err.Error(), "fallback dropped") {
				t.Errorf("Err = %v, want ErrTranscriberFailed naming both errors", err)
			}
		})
	})
	t.Run("neither starts", func(t *testing.T) {
		b := setupSTT(t, true)
		b.primary.startErr = errors.New("primary refused")
		b.fallback.startErr = errors.New("fallback refused")
		_, err := b.f.Start(t.Context(), speech.TranscribeOptions{SampleRate: 8000})
		if !errors.Is(err, speech.ErrTranscriberFailed) || !strings.Contains(err.Error(), "primary refused") || !strings.Contains(err.Error(), "fallback refused") {
			t.Errorf("Start = %v, want ErrTranscriberFailed naming both errors", err)
		}
	})
}

func TestFailoverTranscriberPrimaryDoesNotStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		b.primary.startErr = errors.New("handshake refused")
		s := b.start(t, t.Context())
		if !b.f.FailedOver() {
			t.Error("FailedOver() = false after the primary did not start")
		}
		say(t, s, 100, 1)
		finish(t, s)
		wantFinal(t, s, "fb n=800 v=1")
	})
	b := setupSTT(t, false)
	b.primary.startErr = errors.New("handshake refused")
	if _, err := b.f.Start(t.Context(), speech.TranscribeOptions{SampleRate: 8000}); !errors.Is(err, speech.ErrTranscriberFailed) {
		t.Errorf("Start with no fallback = %v, want ErrTranscriberFailed", err)
	}
}

// TestFailoverTranscriberContextEnds: the call's context ending is not a
// provider failure: no failover, Err is the context's.
func TestFailoverTranscriberContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		ctx, cancel := context.WithCancel(t.Context())
		s := b.start(t, ctx)
		say(t, s, 100, 1)
		cancel()
		err := ended(t, s)
		if !errors.Is(err, context.Canceled) || errors.Is(err, speech.ErrTranscriberFailed) {
			t.Errorf("Err = %v, want context.Canceled, not ErrTranscriberFailed", err)
		}
		if b.f.FailedOver() || b.fallback.stream(0) != nil {
			t.Error("the context's end failed over")
		}
	})
}

// TestFailoverTranscriberReplayBound: at most MaxReplay of audio is kept;
// the oldest goes first and is counted.
func TestFailoverTranscriberReplayBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := setupSTT(t, true)
		s := b.start(t, t.Context())
		say(t, s, 10_000, 1)
		say(t, s, 60_000, 2)
		b.primary.stream(0).fail(errors.New("socket dropped"))
		synctest.Wait()
		finish(t, s)
		if want := fmt.Sprintf("fb n=%d v=2", 60*8000); final(t, s) != want {
			t.Errorf("replayed utterance: want %q", want)
		}
		dropped, _ := s.(interface{ Dropped() (int64, int64) }).Dropped()
		if dropped != 10*8000 {
			t.Errorf("Dropped() = %d samples, want %d", dropped, 10*8000)
		}
	})
}

// TestFailoverTranscriberNoLeak runs streams through every ending (Close,
// failover then Close, both failing, the context) in real time and checks
// that no goroutine outlives them.
func TestFailoverTranscriberNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 3 {
		b := setupSTT(t, true)
		s := b.start(t, t.Context())
		say(t, s, 100, 1)
		finish(t, s)
		final(t, s)
		s.Close()

		s = b.start(t, t.Context())
		b.primary.stream(0).fail(errors.New("socket dropped"))
		say(t, s, 100, 1)
		finish(t, s)
		final(t, s)
		s.Close()

		b = setupSTT(t, true)
		b.fallback.startErr = errors.New("refused")
		s = b.start(t, t.Context())
		b.primary.stream(0).fail(errors.New("socket dropped"))
		ended(t, s)
		s.Close()

		ctx, cancel := context.WithCancel(t.Context())
		s = setupSTT(t, true).start(t, ctx)
		cancel()
		ended(t, s)
		s.Close()
	}
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want ≤ %d:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
