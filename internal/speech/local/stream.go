package local

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"switchboard/internal/speech"
)

// Stream timing at the decoder's 16 kHz.
const (
	decodeRate = 16000
	// chunkSamples is what one ps_process_raw call decodes: 20 ms.
	chunkSamples = decodeRate / 50
	// partialSamples is how much audio passes between looks at the
	// hypothesis while an utterance is being decoded: 100 ms. A partial
	// result goes out when it changed, so at most 10 a second in real
	// time; the pipeline decides a barge-in on them (and shows them as
	// live captions) without waiting for the caller to finish.
	partialSamples = decodeRate / 10
	// maxQueued bounds the audio waiting for the decoder: 10 s. The
	// decoder runs 4–5× faster than real time, so only a wait for a
	// free decoder (or a starved CPU) fills it; then the oldest goes.
	maxQueued = 10 * decodeRate
	// maxUtterance bounds one utterance: 60 s without Finish ends it
	// anyway, with a final result (pocketsphinx's search grows with it).
	maxUtterance = 60 * decodeRate
	// resultsBuffer is the capacity of the Results channel.
	resultsBuffer = 16
)

var errStreamClosed = errors.New("local: transcribe stream closed")

var _ speech.Hinter = (*stream)(nil)

// stream is one recognition stream. Write and Finish queue audio and
// utterance ends; one goroutine (run, owned by the stream and stopped by
// Close or the Start context) decodes them in order. A decoder is borrowed
// from the pool when an utterance's first audio is decoded and returned
// when it is finished, so idle calls hold none.
type stream struct {
	pool    *decoderPool
	log     *slog.Logger
	rs      *resampler // 8 kHz → 16 kHz; nil at 16 kHz
	prior   []float32  // the cepstral-mean prior for the input rate
	cmn     []float32  // the cepstral mean for the next utterance
	results chan speech.Transcript
	wake    chan struct{} // a Write or Finish happened
	stop    chan struct{} // closed by Close
	done    chan struct{} // closed when run returns

	mu      sync.Mutex
	queue   []segment // waiting 16 kHz audio, oldest first
	queued  int       // samples in queue
	closing bool      // Close was called
	ended   bool      // run returned
	err     error     // why run returned (nil after Close)
	// nextHints, when hintsSet, are SetHints's hints waiting for the
	// next utterance to start (a new segment).
	nextHints []string
	hintsSet  bool

	stopOnce sync.Once

	// Worker-only state.
	dec          decoder
	hints        []string // of the utterance being decoded
	grammar      string   // built from hints when grammarBuilt
	grammarBuilt bool
	sincePartial int
	uttSamples   int // decoded in the open utterance
	lastPartial  string

	droppedSamples  atomic.Int64
	droppedPartials atomic.Int64
}

// segment is audio of one utterance; end marks that Finish closed it.
// When newHints is set, hints replace the stream's from this utterance on
// (SetHints was called before it started).
type segment struct {
	pcm      []int16
	end      bool
	newHints bool
	hints    []string
}

func newStream(pool *decoderPool, o speech.TranscribeOptions, log *slog.Logger) *stream {
	s := &stream{
		pool:    pool,
		hints:   slices.Clone(o.Hints),
		log:     log,
		prior:   priorFor(o.SampleRate),
		cmn:     priorFor(o.SampleRate),
		results: make(chan speech.Transcript, resultsBuffer),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if o.SampleRate != decodeRate {
		s.rs = newResampler(o.SampleRate, decodeRate)
	}
	return s
}

// Write implements speech.TranscribeStream. It only queues: when more than
// 10 s wait, the oldest audio is dropped and counted (Dropped).
func (s *stream) Write(pcm []int16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if n := len(s.queue); n == 0 || s.queue[n-1].end {
		s.queue = append(s.queue, s.newSegmentLocked())
	}
	last := &s.queue[len(s.queue)-1]
	before := len(last.pcm)
	if s.rs != nil {
		last.pcm = s.rs.process(last.pcm, pcm)
	} else {
		last.pcm = append(last.pcm, pcm...)
	}
	s.queued += len(last.pcm) - before
	// Drop the oldest audio beyond the bound. Segments stay, even
	// emptied: each Finish still gets its final result.
	for i := 0; s.queued > maxQueued && i < len(s.queue); i++ {
		q := &s.queue[i]
		n := min(len(q.pcm), s.queued-maxQueued)
		q.pcm = q.pcm[n:]
		s.queued -= n
		s.droppedSamples.Add(int64(n))
	}
	s.signal()
	return nil
}

// Finish implements speech.TranscribeStream. Every Finish gets one Final
// result, with empty text when no audio came since the last.
func (s *stream) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	if n := len(s.queue); n == 0 || s.queue[n-1].end {
		seg := s.newSegmentLocked()
		seg.end = true
		s.queue = append(s.queue, seg)
	} else {
		s.queue[n-1].end = true
	}
	s.signal()
	return nil
}

// newSegmentLocked starts the queue's next utterance, carrying the hints
// SetHints left for it.
func (s *stream) newSegmentLocked() segment {
	seg := segment{newHints: s.hintsSet, hints: s.nextHints}
	s.hintsSet, s.nextHints = false, nil
	return seg
}

// SetHints implements speech.Hinter: the hints (a flow node's expected
// answers; nil or empty for the language model) apply from the next
// utterance that starts, that is the first audio or Finish after the
// call, and to every one after it until the next SetHints. An utterance
// already started keeps its grammar: pocketsphinx changes its search only
// between utterances. The grammar is built when that utterance opens a
// decoder. SetHints on an ended stream does nothing.
func (s *stream) SetHints(hints []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextHints, s.hintsSet = slices.Clone(hints), true
}

func (s *stream) usableLocked() error {
	switch {
	case s.closing:
		return errStreamClosed
	case s.ended && s.err != nil:
		return s.err
	case s.ended:
		return errStreamClosed
	}
	return nil
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Results implements speech.TranscribeStream.
func (s *stream) Results() <-chan speech.Transcript { return s.results }

// Err implements speech.TranscribeStream.
func (s *stream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close implements speech.TranscribeStream: it stops the decoding
// goroutine, drops queued audio (an utterance without Finish gets no
// result) and returns the decoder to the pool.
func (s *stream) Close() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		close(s.stop)
	})
	<-s.done
	return nil
}

// Dropped reports how much the stream lost: audio samples (at 16 kHz)
// dropped because decoding fell 10 s behind, and partial results dropped
// because Results was full.
func (s *stream) Dropped() (samples, partials int64) {
	return s.droppedSamples.Load(), s.droppedPartials.Load()
}

// run is the stream's goroutine.
func (s *stream) run(ctx context.Context) {
	defer close(s.done)
	err := s.loop(ctx)
	if s.dec != nil {
		// Closed mid-utterance (a hang-up): the utterance is ended before
		// the decoder goes back, or its next borrower could not begin one.
		if _, _, endErr := s.dec.end(slices.Clone(s.cmn)); endErr != nil {
			s.pool.discard(s.dec)
		} else {
			s.pool.put(s.dec)
		}
		s.dec = nil
	}
	s.mu.Lock()
	if s.closing {
		err = nil
	}
	s.err = err
	s.ended = true
	s.queue = nil
	s.mu.Unlock()
	close(s.results)
}

type work int

const (
	workNone work = iota
	workAudio
	workFinish
)

func (s *stream) loop(ctx context.Context) error {
	buf := make([]int16, chunkSamples)
	for {
		select {
		case <-s.stop:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		what, n := s.take(buf)
		switch what {
		case workNone:
			select {
			case <-s.wake:
			case <-s.stop:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		case workAudio:
			if s.dec == nil {
				if err := s.open(ctx); err != nil || s.dec == nil {
					return err
				}
			}
			if err := s.dec.process(buf[:n]); err != nil {
				return err
			}
			s.uttSamples += n
			if s.sincePartial += n; s.sincePartial >= partialSamples {
				s.sincePartial = 0
				s.partial()
			}
			if s.uttSamples >= maxUtterance {
				// Endpointing never came: close the utterance here
				// rather than let the decoder's search grow without
				// bound. The rest of the speech opens the next one.
				if err := s.finish(ctx); err != nil || s.stopped() {
					return err
				}
			}
		case workFinish:
			if err := s.finish(ctx); err != nil || s.stopped() {
				return err
			}
		}
	}
}

// finish ends the open utterance (if any audio opened one), returns the
// decoder to the pool and delivers the final result.
func (s *stream) finish(ctx context.Context) error {
	t := speech.Transcript{Final: true}
	if s.dec != nil {
		text, conf, err := s.dec.end(s.cmn)
		if err != nil {
			s.pool.discard(s.dec) // its state is unknown: never lend it again
			s.dec = nil
			return err
		}
		s.pool.put(s.dec)
		s.dec = nil
		t.Text, t.Confidence = text, conf
	}
	s.sincePartial, s.lastPartial, s.uttSamples = 0, "", 0
	select {
	case s.results <- t:
		return nil
	case <-s.stop:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *stream) stopped() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// take moves the next 20 ms of queued audio into buf, or reports a
// finished utterance, or that it must wait.
func (s *stream) take(buf []int16) (work, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return workNone, 0
	}
	q := &s.queue[0]
	if q.newHints {
		// The worker reaches this utterance only after finishing the one
		// before: from here on its hints are the stream's.
		s.hints, s.grammarBuilt = q.hints, false
		q.newHints, q.hints = false, nil
	}
	switch {
	case len(q.pcm) >= len(buf) || (q.end && len(q.pcm) > 0):
		n := copy(buf, q.pcm)
		q.pcm = q.pcm[n:]
		s.queued -= n
		return workAudio, n
	case q.end:
		s.queue[0] = segment{}
		s.queue = s.queue[1:]
		return workFinish, 0
	}
	return workNone, 0
}

// open borrows a decoder and starts an utterance on it.
func (s *stream) open(ctx context.Context) error {
	d, err := s.pool.get(s.stop, ctx.Done())
	if err != nil || d == nil {
		if err == nil {
			err = ctx.Err() // nil when stopped by Close
		}
		return err
	}
	if !s.grammarBuilt {
		var skipped []string
		s.grammar, skipped = buildGrammar(s.hints, d.known)
		s.grammarBuilt = true
		if len(skipped) > 0 {
			s.log.Warn("local: hint words not in the dictionary, left out of the grammar", "words", skipped)
		}
	}
	if !adaptCMN {
		copy(s.cmn, s.prior)
	}
	err = d.begin(s.grammar, s.cmn)
	if errors.Is(err, errGrammarRefused) {
		// Better an open-vocabulary answer than none.
		s.log.Warn("local: hints grammar refused, using the language model", "err", err)
		s.grammar = ""
		err = d.begin("", s.cmn)
	}
	if err != nil {
		s.pool.discard(d) // a decoder that cannot begin is not lent again
		return err
	}
	s.dec = d
	return nil
}

// partial sends the hypothesis so far when it changed, dropping it (and
// counting) when Results is full: a later partial or the final replaces it.
func (s *stream) partial() {
	h := s.dec.hyp()
	if h == "" || h == s.lastPartial {
		return
	}
	s.lastPartial = h
	select {
	case s.results <- speech.Transcript{Text: h}:
	default:
		s.droppedPartials.Add(1)
	}
}
