package speech

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MaxReplay bounds the audio a FailoverTranscriber stream keeps for replay
// to the fallback: 60 s at the stream's rate.
const MaxReplay = 60 * time.Second

// MaxFailuresInARow is how many failures of the engine a FailoverTranscriber
// stream takes in a row, with no fallback left, before the engine counts as
// gone: a failure is an utterance whose final result did not come in time
// (it is dropped) or a stream that broke (it is opened again). Any final
// result the engine gives, late ones included, starts the count over.
const MaxFailuresInARow = 3

// MaxFinalWait is how much longer than its time (FinalTimeout plus its
// length) an utterance waits for its final result while the engine is
// still working — it gave a result, partial or final, within the last
// FinalTimeout — before it is dropped all the same. A busy machine slows
// the engine down; the caller's words are still worth having late.
const MaxFinalWait = 30 * time.Second

// TranscriberFallback is the transcriber a FailoverTranscriber switches to,
// with what to ask it for. The zero value means no fallback.
type TranscriberFallback struct {
	Transcriber Transcriber
	// Model replaces TranscribeOptions.Model for the fallback ("" for its
	// default): the primary's model means nothing to another provider.
	Model string
	// Language, when not "", replaces TranscribeOptions.Language.
	Language string
}

// TranscriberFailoverOptions configure FailoverTranscriber. The zero value
// is ready.
type TranscriberFailoverOptions struct {
	// FinalTimeout is the fixed part of the time a stream has to deliver
	// an utterance's final result (default DefaultFinalTimeout): each
	// utterance has FinalTimeout plus its own length, counted from its
	// Finish, or from the answer to the utterance before it when that
	// came later (the engine answers in order). An engine that keeps up
	// with real time always meets it; one that a loaded machine slows
	// down gets as long again as the caller spoke.
	FinalTimeout time.Duration
	// Logger receives a warning when a stream fails over (default: discarded).
	Logger *slog.Logger
}

// TranscriberFailover is a Transcriber whose streams recognize with the
// primary and, once the primary fails, with the fallback for the rest of
// the call. FailoverTranscriber makes one.
type TranscriberFailover struct {
	primary      Transcriber
	fallback     TranscriberFallback
	finalTimeout time.Duration
	log          *slog.Logger
	failedOver   atomic.Bool
}

var _ Transcriber = (*TranscriberFailover)(nil)

// FailoverTranscriber wraps primary with fallback for one call.
//
// A stream writes to the primary's stream and keeps the audio of the
// utterances whose final result has not come yet (at most MaxReplay, the
// oldest dropped and counted). When the primary's stream fails (Results
// closes with an error, Write or Finish returns one, or an utterance's
// final result does not come in time: see FinalTimeout), it is closed and
// the fallback's stream is opened with the same options (the fallback's
// Model, and its Language if set; the hints in force), the kept audio is
// replayed to it (with the Finish of every finished utterance), and the
// call continues on the fallback: Results is one channel across the
// switch, and later Starts go straight to the fallback (FailedOver).
//
// With no fallback left (none, or the stream is on it already), one
// utterance's trouble does not end the stream: an utterance whose final
// result is overdue is dropped — Results gets a final with Dropped set in
// its place, and the engine's own final for it, if it comes later, is
// discarded — and a stream that broke is opened again on the same engine,
// the utterances it owed a final dropped the same way and the open one
// replayed. The engine is gone, and the stream ends, when it cannot be
// opened again or after MaxFailuresInARow such failures with no final
// result between them.
//
// Err is set, and Results closed, only when the stream cannot go on: the
// engine is gone (the fallback's, or the primary's with no fallback),
// or the fallback does not start (these wrap ErrTranscriberFailed), or ctx
// ended (ctx's error). Streams implement Hinter, forwarding SetHints to
// the engine's stream when it does.
//
// A final result that answers no Finish (an engine's own endpointing) is
// taken as covering the open utterance so far: its audio is not replayed.
func FailoverTranscriber(primary Transcriber, fallback TranscriberFallback, opts TranscriberFailoverOptions) *TranscriberFailover {
	if opts.FinalTimeout <= 0 {
		opts.FinalTimeout = DefaultFinalTimeout
	}
	return &TranscriberFailover{primary: primary, fallback: fallback, finalTimeout: opts.FinalTimeout, log: logger(opts.Logger)}
}

// Name implements Transcriber: the provider listening now (the
// fallback's after a failover).
func (f *TranscriberFailover) Name() string {
	if f.FailedOver() {
		return f.fallback.Transcriber.Name()
	}
	return f.primary.Name()
}

// FailedOver reports whether the fallback has taken over for the rest of
// the call.
func (f *TranscriberFailover) FailedOver() bool {
	return f.fallback.Transcriber != nil && f.failedOver.Load()
}

// Start implements Transcriber. A primary that cannot start fails over at
// once.
func (f *TranscriberFailover) Start(ctx context.Context, opts TranscribeOptions) (TranscribeStream, error) {
	ctx, cancel := context.WithCancel(ctx)
	s, err := f.start(ctx, opts, cancel)
	if err != nil {
		cancel()
		return nil, err
	}
	go s.run(ctx)
	return s, nil
}

// start opens the engine's stream of a new failover stream: the
// primary's, or the fallback's after a failover or when the primary does
// not start.
func (f *TranscriberFailover) start(ctx context.Context, opts TranscribeOptions, cancel context.CancelFunc) (*failoverStream, error) {
	s := newFailoverStream(f, opts, cancel)
	fb := f.fallback.Transcriber
	if f.FailedOver() {
		var err error
		s.onFallback = true
		if s.cur, err = fb.Start(ctx, f.fallbackOptions(opts)); err != nil {
			return nil, fmt.Errorf("%w: fallback: %w", ErrTranscriberFailed, err)
		}
		return s, nil
	}
	cur, err := f.primary.Start(ctx, opts)
	switch {
	case err == nil:
		s.cur = cur
		return s, nil
	case ctx.Err() != nil:
		return nil, err // the call is ending: not the engine's failure
	case fb == nil:
		return nil, fmt.Errorf("%w: %w", ErrTranscriberFailed, err)
	}
	f.failOver(err)
	s.onFallback, s.primaryErr = true, err
	if s.cur, err = fb.Start(ctx, f.fallbackOptions(opts)); err != nil {
		return nil, fmt.Errorf("%w: %w; fallback: %w", ErrTranscriberFailed, s.primaryErr, err)
	}
	return s, nil
}

func (f *TranscriberFailover) fallbackOptions(opts TranscribeOptions) TranscribeOptions {
	opts.Model = f.fallback.Model
	if f.fallback.Language != "" {
		opts.Language = f.fallback.Language
	}
	return opts
}

func (f *TranscriberFailover) failOver(err error) {
	f.failedOver.Store(true)
	f.log.Warn("speech: transcriber failed; its fallback takes over for the rest of the call",
		"provider", f.primary.Name(), "fallback", f.fallback.Transcriber.Name(), "err", err)
}

// Bounds of a failover stream.
const (
	// failoverResults is the capacity of its Results channel.
	failoverResults = 16
	// maxPendingFinishes bounds the utterances kept waiting for their
	// final result (FinalTimeout fails the stream long before, unless
	// Finish is called in a burst).
	maxPendingFinishes = 32
	// replayChunk is the size of the writes that replay kept audio, in
	// seconds of audio: engines that queue per Write hold a minute in 60.
	replayChunk = 1
)

var errFailoverClosed = errors.New("speech: transcribe stream closed")

// failoverStream is a FailoverTranscriber stream. Write, Finish and
// SetHints go to the engine's stream under mu, and keep the utterances
// for replay; one goroutine (run, stopped by Close or ctx) forwards the
// engine's results, watches for its failure and switches to the fallback.
type failoverStream struct {
	f       *TranscriberFailover
	opts    TranscribeOptions
	maxKept int // samples: MaxReplay at the stream's rate
	cancel  context.CancelFunc
	results chan Transcript
	wake    chan struct{} // a Finish, or the engine's Write or Finish failed
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when run returns

	mu         sync.Mutex
	cur        TranscribeStream // the engine's stream; nil while switching
	curErr     error            // cur's Write or Finish failed
	onFallback bool
	primaryErr error       // why this stream left the primary
	hints      []string    // in force for the next utterance
	kept       []utterance // not yet answered by a final, oldest first
	keptLen    int         // samples in kept
	closing    bool
	ended      bool
	err        error

	stopOnce sync.Once

	droppedSamples    atomic.Int64
	droppedPartials   atomic.Int64
	droppedUtterances atomic.Int64
	lateFinals        atomic.Int64

	// failures is the engine's failures in a row (MaxFailuresInARow), and
	// lastResult when the engine last gave a result of any kind; only
	// run's goroutine touches them.
	failures   int
	lastResult time.Time
}

// utterance is audio kept for replay; finished says Finish closed it (at
// finishedAt, the start of the wait for its final result).
type utterance struct {
	pcm        []int16
	samples    int      // written in all (pcm may have lost its oldest)
	hints      []string // in force when it started
	finished   bool
	finishedAt time.Time
	// dropped: its final result was overdue and a Dropped final went out
	// in its place; the engine's own, if it comes, is discarded.
	dropped bool
	// extended is a later deadline, while the engine is still working.
	extended time.Time
}

var _ Hinter = (*failoverStream)(nil)

func newFailoverStream(f *TranscriberFailover, opts TranscribeOptions, cancel context.CancelFunc) *failoverStream {
	return &failoverStream{
		f:       f,
		opts:    opts,
		maxKept: int(MaxReplay/time.Second) * max(opts.SampleRate, 0),
		cancel:  cancel,
		results: make(chan Transcript, failoverResults),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		hints:   slices.Clone(opts.Hints),
	}
}

// Write implements TranscribeStream. A failure of the engine's stream is
// not returned: the audio is kept and replayed to the fallback.
func (s *failoverStream) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	u := s.openLocked()
	u.pcm = append(u.pcm, pcm...)
	u.samples += len(pcm)
	s.keptLen += len(pcm)
	for i := 0; s.keptLen > s.maxKept && i < len(s.kept); i++ {
		k := &s.kept[i]
		n := min(len(k.pcm), s.keptLen-s.maxKept)
		k.pcm = k.pcm[n:]
		s.keptLen -= n
		s.droppedSamples.Add(int64(n))
	}
	if s.cur != nil && s.curErr == nil {
		if err := s.cur.Write(pcm); err != nil {
			s.curFailedLocked(err)
		}
	}
	return nil
}

// Finish implements TranscribeStream; like Write, it does not return the
// engine's failures.
func (s *failoverStream) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	u := s.openLocked()
	u.finished, u.finishedAt = true, time.Now()
	if pending := s.pendingLocked(); pending > maxPendingFinishes {
		// Forget the oldest: its final result will answer the next.
		s.keptLen -= len(s.kept[0].pcm)
		s.droppedSamples.Add(int64(len(s.kept[0].pcm)))
		s.kept = s.kept[1:]
	}
	if s.cur != nil && s.curErr == nil {
		if err := s.cur.Finish(); err != nil {
			s.curFailedLocked(err)
		}
	}
	s.signal()
	return nil
}

// SetHints implements Hinter: the hints apply from the next utterance that
// starts, on the engine's stream (when it is a Hinter) and on the fallback
// after a switch.
func (s *failoverStream) SetHints(hints []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hints = slices.Clone(hints)
	if h, ok := s.cur.(Hinter); ok && s.curErr == nil {
		h.SetHints(s.hints)
	}
}

// openLocked returns the utterance being written, starting one if the
// last was finished.
func (s *failoverStream) openLocked() *utterance {
	if n := len(s.kept); n == 0 || s.kept[n-1].finished {
		s.kept = append(s.kept, utterance{hints: s.hints})
	}
	return &s.kept[len(s.kept)-1]
}

func (s *failoverStream) pendingLocked() int {
	n := 0
	for _, u := range s.kept {
		if u.finished {
			n++
		}
	}
	return n
}

func (s *failoverStream) curFailedLocked(err error) {
	s.curErr = err
	s.signal()
}

func (s *failoverStream) usableLocked() error {
	switch {
	case s.closing:
		return errFailoverClosed
	case s.ended && s.err != nil:
		return s.err
	case s.ended:
		return errFailoverClosed
	}
	return nil
}

func (s *failoverStream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Results implements TranscribeStream.
func (s *failoverStream) Results() <-chan Transcript { return s.results }

// Err implements TranscribeStream.
func (s *failoverStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close implements TranscribeStream: it ends the engine's stream and the
// goroutine, dropping results not yet delivered.
func (s *failoverStream) Close() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		close(s.stop)
		s.cancel()
	})
	<-s.done
	return nil
}

// Dropped reports how much the stream lost: kept audio dropped beyond
// MaxReplay (it could not have been replayed), and partial results
// dropped because Results was full.
func (s *failoverStream) Dropped() (samples, partials int64) {
	return s.droppedSamples.Load(), s.droppedPartials.Load()
}

// Utterances reports the utterances the stream dropped (a Dropped final
// went out for each) and the engine's finals for them that came late and
// were discarded.
func (s *failoverStream) Utterances() (dropped, late int64) {
	return s.droppedUtterances.Load(), s.lateFinals.Load()
}

// run is the stream's goroutine.
func (s *failoverStream) run(ctx context.Context) {
	defer close(s.done)
	err := s.loop(ctx)
	s.mu.Lock()
	cur := s.cur
	s.cur = nil
	if s.closing {
		err = nil
	}
	s.ended, s.err = true, err
	s.kept, s.keptLen = nil, 0
	s.mu.Unlock()
	if cur != nil {
		cur.Close()
	}
	s.cancel()
	close(s.results)
}

// loop forwards the engine's results until the stream ends, switching to
// the fallback when the engine fails; it returns why the stream ended.
func (s *failoverStream) loop(ctx context.Context) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		cur, curErr := s.cur, s.curErr
		deadline, waiting := s.finalDeadlineLocked()
		s.mu.Unlock()
		if curErr != nil {
			if err := s.switchOver(ctx, curErr); err != nil {
				return err
			}
			continue
		}
		var expired <-chan time.Time
		if waiting {
			timer.Reset(time.Until(deadline))
			expired = timer.C
		}
		select {
		case t, ok := <-cur.Results():
			if !ok {
				err := cur.Err()
				if err == nil {
					err = fmt.Errorf("%s: results ended without an error", s.name())
				}
				s.failed(err)
				continue
			}
			s.lastResult = time.Now()
			s.deliver(ctx, t)
		case <-expired:
			if err := s.overdue(ctx); err != nil {
				return err
			}
		case <-s.wake:
		case <-s.stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// name is the current engine's provider name.
func (s *failoverStream) name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nameLocked()
}

func (s *failoverStream) nameLocked() string {
	if s.onFallback {
		return s.f.fallback.Transcriber.Name()
	}
	return s.f.primary.Name()
}

// failed records that the engine's stream failed; loop switches next.
func (s *failoverStream) failed(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.curErr == nil {
		s.curErr = err
	}
}

// waitingLocked is the oldest finished utterance still waiting for its
// final result (not dropped), or nil.
func (s *failoverStream) waitingLocked() *utterance {
	for i := range s.kept {
		if u := &s.kept[i]; u.finished && !u.dropped {
			return u
		}
	}
	return nil
}

// finalDeadlineLocked is when the waiting utterance's final result is due:
// FinalTimeout plus its length after the start of its wait.
func (s *failoverStream) finalDeadlineLocked() (time.Time, bool) {
	u := s.waitingLocked()
	if u == nil {
		return time.Time{}, false
	}
	due := u.finishedAt.Add(s.allowedLocked(u))
	if u.extended.After(due) {
		due = u.extended
	}
	return due, true
}

// allowedLocked is the time u's final result may take.
func (s *failoverStream) allowedLocked(u *utterance) time.Duration {
	d := s.f.finalTimeout
	if rate := s.opts.SampleRate; rate > 0 {
		d += time.Duration(u.samples) * time.Second / time.Duration(rate)
	}
	return d
}

// answeredLocked starts the wait of the utterance after one that was
// answered or dropped now: finals come in order, so its time runs from
// here if it was finished before.
func (s *failoverStream) answeredLocked() {
	if u := s.waitingLocked(); u != nil {
		if now := time.Now(); u.finishedAt.Before(now) {
			u.finishedAt = now
		}
	}
}

// overdue acts on the waiting utterance whose final result is overdue:
// the engine counts as failed when there is a fallback to take;
// otherwise the utterance is dropped. It returns the stream's end when the
// engine is gone.
func (s *failoverStream) overdue(ctx context.Context) error {
	s.mu.Lock()
	u := s.waitingLocked()
	if u == nil {
		s.mu.Unlock()
		return nil
	}
	now := time.Now()
	cause := fmt.Errorf("%s: no final result within %v of Finish: %w", s.nameLocked(), now.Sub(u.finishedAt).Round(time.Millisecond), ErrTimeout)
	if s.f.fallback.Transcriber != nil && !s.onFallback {
		if s.curErr == nil {
			s.curErr = cause
		}
		s.mu.Unlock()
		return nil
	}
	quiet := s.f.finalTimeout
	if last := u.finishedAt.Add(s.allowedLocked(u) + MaxFinalWait); s.lastResult.After(now.Add(-quiet)) && now.Before(last) {
		// Still working (a busy machine): wait on while it gives results.
		u.extended = s.lastResult.Add(quiet)
		if u.extended.After(last) {
			u.extended = last
		}
		s.mu.Unlock()
		return nil
	}
	u.dropped = true
	s.keptLen -= len(u.pcm)
	u.pcm = nil
	s.answeredLocked()
	s.mu.Unlock()
	if err := s.fault(cause); err != nil {
		return err
	}
	return s.drop(ctx, 1, cause)
}

// fault counts one failure of the engine; it returns the stream's end
// once they are MaxFailuresInARow in a row.
func (s *failoverStream) fault(cause error) error {
	s.failures++
	if s.failures < MaxFailuresInARow {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.primaryErr != nil {
		return fmt.Errorf("%w: %w; fallback gone, %d failures in a row, the last: %w", ErrTranscriberFailed, s.primaryErr, s.failures, cause)
	}
	return fmt.Errorf("%w: %s gone, %d failures in a row, the last: %w", ErrTranscriberFailed, s.nameLocked(), s.failures, cause)
}

// drop sends n Dropped finals, for utterances the engine failed.
func (s *failoverStream) drop(ctx context.Context, n int, cause error) error {
	for range n {
		s.droppedUtterances.Add(1)
		s.f.log.Warn("speech: an utterance was dropped: the transcriber failed it; the call goes on",
			"provider", s.name(), "failures_in_a_row", s.failures, "err", cause)
		select {
		case s.results <- Transcript{Final: true, Dropped: true}:
		case <-s.stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// deliver forwards a result: a partial never waits (a newer one follows),
// a final waits for room. A final answers the oldest finished utterance,
// whose audio is then no longer kept; one that answers no Finish covers
// the open utterance so far.
func (s *failoverStream) deliver(ctx context.Context, t Transcript) {
	if !t.Final {
		select {
		case s.results <- t:
		default:
			s.droppedPartials.Add(1)
		}
		return
	}
	s.failures = 0 // the engine answers, if late
	s.mu.Lock()
	late := false
	if len(s.kept) > 0 {
		if s.kept[0].finished {
			late = s.kept[0].dropped
			s.keptLen -= len(s.kept[0].pcm)
			s.kept[0] = utterance{}
			s.kept = s.kept[1:]
			s.answeredLocked()
		} else {
			s.keptLen -= len(s.kept[0].pcm)
			s.kept[0].pcm = nil
		}
	}
	s.mu.Unlock()
	if late { // a Dropped final went out in its place
		s.lateFinals.Add(1)
		s.f.log.Debug("speech: a late final result was discarded", "provider", s.name())
		return
	}
	select {
	case s.results <- t:
	case <-s.stop:
	case <-ctx.Done():
	}
}

// switchOver replaces the failed engine stream with the fallback's and
// replays the kept audio to it, or, with no fallback left, opens the
// engine's stream again (restart). It returns the stream's end: ctx's
// error when ctx ended, an error wrapping ErrTranscriberFailed when the
// fallback does not start or the engine is gone; nil when it switched.
func (s *failoverStream) switchOver(ctx context.Context, cause error) error {
	s.mu.Lock()
	old, onFallback := s.cur, s.onFallback
	s.cur, s.curErr = nil, nil
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	if ctx.Err() != nil {
		return ctx.Err() // the call is ending: not the engine's failure
	}
	fb := s.f.fallback.Transcriber
	if onFallback || fb == nil {
		return s.restart(ctx, cause)
	}
	perr := fmt.Errorf("%w: %w", ErrTranscriberFailed, cause)
	s.f.failOver(cause)
	s.mu.Lock()
	s.primaryErr = cause
	opts := s.f.fallbackOptions(s.opts)
	opts.Hints = s.hints
	if len(s.kept) > 0 {
		opts.Hints = s.kept[0].hints
	}
	s.onFallback = true
	s.mu.Unlock()
	ns, err := fb.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w; fallback: %w", perr, err)
	}
	s.failures = 0 // a new engine
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = ns
	err = s.replayLocked(ns, opts.Hints)
	if err != nil {
		s.curErr = err
	}
	return nil
}

// restart opens the current engine's stream again after it broke
// (cause), with no fallback left: the finished utterances the broken
// stream owed a final are dropped, and the open one is replayed. It returns
// the stream's end when the engine is gone: it failed MaxFailuresInARow
// times in a row, or its stream does not open.
func (s *failoverStream) restart(ctx context.Context, cause error) error {
	if err := s.fault(cause); err != nil {
		return err
	}
	s.mu.Lock()
	owed := 0
	open := s.kept[:0]
	for _, u := range s.kept {
		switch {
		case !u.finished:
			open = append(open, u)
		case !u.dropped:
			owed++
			fallthrough
		default:
			s.keptLen -= len(u.pcm)
		}
	}
	clear(s.kept[len(open):])
	s.kept = open
	eng, opts := s.f.primary, s.opts
	if s.onFallback {
		eng, opts = s.f.fallback.Transcriber, s.f.fallbackOptions(s.opts)
	}
	opts.Hints = s.hints
	if len(s.kept) > 0 {
		opts.Hints = s.kept[0].hints
	}
	primaryErr := s.primaryErr
	s.mu.Unlock()
	if err := s.drop(ctx, owed, cause); err != nil {
		return err
	}
	ns, err := eng.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if primaryErr != nil {
			return fmt.Errorf("%w: %w; fallback: %w; it did not start again: %w", ErrTranscriberFailed, primaryErr, cause, err)
		}
		return fmt.Errorf("%w: %w; it did not start again: %w", ErrTranscriberFailed, cause, err)
	}
	s.f.log.Warn("speech: the transcriber's stream broke; opened again", "provider", eng.Name(), "failures_in_a_row", s.failures, "err", cause)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur = ns
	if err := s.replayLocked(ns, opts.Hints); err != nil {
		s.curErr = err
	}
	return nil
}

// replayLocked writes the kept utterances to ns, each with the hints it
// started with, and leaves ns with the hints in force. The wait for each
// replayed Finish's final result starts now.
func (s *failoverStream) replayLocked(ns TranscribeStream, hints []string) error {
	h, _ := ns.(Hinter)
	chunk := max(replayChunk*s.opts.SampleRate, 1)
	now := time.Now()
	for i := range s.kept {
		u := &s.kept[i]
		if h != nil && !slices.Equal(u.hints, hints) {
			h.SetHints(u.hints)
			hints = u.hints
		}
		for p := u.pcm; len(p) > 0; {
			n := min(len(p), chunk)
			if err := ns.Write(p[:n]); err != nil {
				return err
			}
			p = p[n:]
		}
		if u.finished {
			if err := ns.Finish(); err != nil {
				return err
			}
			u.finishedAt = now
		}
	}
	if h != nil && !slices.Equal(s.hints, hints) {
		h.SetHints(s.hints)
	}
	return nil
}
