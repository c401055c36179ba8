package voicetest

import (
	"context"
	"errors"
	"sync"
	"time"

	"switchboard/internal/speech"
)

// Utterance is what the fake recognizer hears in one utterance (between
// two Finish calls).
type Utterance struct {
	// Partial is sent once PartialAfter of the utterance's audio has been
	// written ("" means Final's text).
	Partial string
	// Final is sent FinalDelay after Finish (Delay, when set).
	Final string
	// Delay, when set, is this utterance's Finish → final latency instead
	// of the Transcriber's FinalDelay (a recognizer slowed down by a
	// loaded machine).
	Delay time.Duration
}

// Transcriber is a speech.Transcriber whose streams hear Utterances in
// order, one per Finish (after the last, the last again; none: silence).
// Results keep the order a real engine gives: a partial of the next
// utterance never overtakes the delayed final of the previous one.
type Transcriber struct {
	Utterances []Utterance
	// PartialAfter is how much audio an utterance needs before its partial
	// (default 100 ms).
	PartialAfter time.Duration
	// FinalDelay is the recognizer's latency: Finish → final.
	FinalDelay time.Duration
	// StartErr fails Start.
	StartErr error
	// FailAfter > 0 ends every stream that long after Start: Results closes
	// and Err returns ErrFailed.
	FailAfter time.Duration

	mu      sync.Mutex
	opts    []speech.TranscribeOptions
	hints   [][]string
	samples int64
}

// ErrFailed is the error of a stream that failed on purpose (FailAfter).
var ErrFailed = errors.New("voicetest: the recognizer's connection dropped")

// Name implements speech.Transcriber.
func (t *Transcriber) Name() string { return "fake-stt" }

// Started returns the options of every stream started so far.
func (t *Transcriber) Started() []speech.TranscribeOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]speech.TranscribeOptions(nil), t.opts...)
}

// Hints returns every SetHints call's hints, in order.
func (t *Transcriber) Hints() [][]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([][]string(nil), t.hints...)
}

// Samples is how many samples all streams were written.
func (t *Transcriber) Samples() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.samples
}

// Start implements speech.Transcriber.
func (t *Transcriber) Start(ctx context.Context, opts speech.TranscribeOptions) (speech.TranscribeStream, error) {
	if t.StartErr != nil {
		return nil, t.StartErr
	}
	if opts.SampleRate <= 0 {
		return nil, errors.New("voicetest: TranscribeOptions.SampleRate is required")
	}
	t.mu.Lock()
	t.opts = append(t.opts, opts)
	t.mu.Unlock()
	partialAfter := t.PartialAfter
	if partialAfter <= 0 {
		partialAfter = 100 * time.Millisecond
	}
	s := &stream{
		t:          t,
		partialAt:  int(int64(opts.SampleRate) * int64(partialAfter) / int64(time.Second)),
		results:    make(chan speech.Transcript, 16),
		wake:       make(chan struct{}, 1),
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		failAfter:  t.FailAfter,
		finalDelay: t.FinalDelay,
	}
	go s.run(ctx)
	return s, nil
}

// stream is one fake recognition stream. Its goroutine delivers results in
// order at their due times; Close stops it and waits.
type stream struct {
	t          *Transcriber
	partialAt  int
	failAfter  time.Duration
	finalDelay time.Duration
	results    chan speech.Transcript
	wake       chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	done       chan struct{}

	mu          sync.Mutex
	n           int // utterances finished
	written     int // samples of the current utterance
	partialSent bool
	queue       []due
	err         error
}

type due struct {
	at time.Time
	tr speech.Transcript
}

func (s *stream) utterance(n int) Utterance {
	u := s.t.Utterances
	switch {
	case len(u) == 0:
		return Utterance{}
	case n < len(u):
		return u[n]
	}
	return u[len(u)-1]
}

// enqueueLocked schedules tr at (or after the last result before) at.
func (s *stream) enqueueLocked(at time.Time, tr speech.Transcript) {
	if n := len(s.queue); n > 0 && s.queue[n-1].at.After(at) {
		at = s.queue[n-1].at
	}
	s.queue = append(s.queue, due{at, tr})
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *stream) Write(pcm []int16) error {
	s.t.mu.Lock()
	s.t.samples += int64(len(pcm))
	s.t.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.written += len(pcm)
	if !s.partialSent && s.written >= s.partialAt {
		s.partialSent = true
		u := s.utterance(s.n)
		text := u.Partial
		if text == "" {
			text = u.Final
		}
		if text != "" {
			s.enqueueLocked(time.Now(), speech.Transcript{Text: text, Confidence: 0.5})
		}
	}
	return nil
}

func (s *stream) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	u := s.utterance(s.n)
	s.n++
	s.written, s.partialSent = 0, false
	delay := s.finalDelay
	if u.Delay > 0 {
		delay = u.Delay
	}
	s.enqueueLocked(time.Now().Add(delay), speech.Transcript{Text: u.Final, Final: true, Confidence: 0.9})
	return nil
}

func (s *stream) SetHints(h []string) {
	s.t.mu.Lock()
	s.t.hints = append(s.t.hints, append([]string(nil), h...))
	s.t.mu.Unlock()
}

func (s *stream) Results() <-chan speech.Transcript { return s.results }

func (s *stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *stream) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	if errors.Is(s.err, errClosed) {
		s.err = nil
	}
	s.mu.Unlock()
	return nil
}

var errClosed = errors.New("voicetest: stream closed")

func (s *stream) run(ctx context.Context) {
	defer close(s.done)
	defer close(s.results)
	end := func(err error) {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
	}
	var failC <-chan time.Time
	if s.failAfter > 0 {
		ft := time.NewTimer(s.failAfter)
		defer ft.Stop()
		failC = ft.C
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var next due
		pending := len(s.queue) > 0
		if pending {
			next = s.queue[0]
		}
		s.mu.Unlock()
		var timerC <-chan time.Time
		if pending {
			wait := time.Until(next.at)
			if wait <= 0 {
				select {
				case s.results <- next.tr:
					s.mu.Lock()
					s.queue = s.queue[1:]
					s.mu.Unlock()
					continue
				case <-s.stop:
					end(errClosed)
					return
				case <-ctx.Done():
					end(ctx.Err())
					return
				case <-failC:
					end(ErrFailed)
					return
				}
			}
			timer.Reset(wait)
			timerC = timer.C
		}
		select {
		case <-timerC:
		case <-s.wake:
			timer.Stop()
		case <-s.stop:
			end(errClosed)
			return
		case <-ctx.Done():
			end(ctx.Err())
			return
		case <-failC:
			end(ErrFailed)
			return
		}
	}
}

var _ speech.Hinter = (*stream)(nil)
