package local

import (
	"errors"
	"sync"
)

// decoder is one recognizer instance as the stream uses it; psDecoder
// (pocketsphinx, speech_native builds) is the real one. A decoder is used
// by one goroutine at a time.
type decoder interface {
	// known reports whether word is in the pronouncing dictionary, which
	// a grammar may only use.
	known(word string) bool
	// begin opens an utterance: it selects the JSGF grammar ("" for the
	// full language model) and sets the cepstral mean to cmn. A grammar
	// the engine cannot compile is an error wrapping errGrammarRefused.
	begin(grammar string, cmn []float32) error
	// process decodes 16 kHz PCM16.
	process(pcm []int16) error
	// hyp is the best hypothesis so far.
	hyp() string
	// end closes the utterance, returns its final hypothesis and a
	// confidence in [0,1], and writes the adapted cepstral mean into cmn.
	end(cmn []float32) (text string, confidence float64, err error)
	free()
}

var (
	errPoolClosed     = errors.New("local: transcriber closed")
	errGrammarRefused = errors.New("local: pocketsphinx refused the hints grammar")
)

// decoderPool lends decoders, creating them on first need (they are
// expensive: ~0.3 s and ~90 MB each, 1–3 s on a loaded machine) and never
// more than size; a borrower beyond that waits for a return. prepare
// creates one ahead of need, in the background.
type decoderPool struct {
	create func() (decoder, error)
	tokens chan struct{} // one per decoder lent out or being created

	mu      sync.Mutex
	idle    []decoder
	created int // decoders alive (idle or lent), or being created
	closed  bool
	// warming is closed when the decoder prepare is creating is idle;
	// nil when none is being prepared.
	warming chan struct{}
	wg      sync.WaitGroup // prepare's goroutine; close waits for it
}

func newDecoderPool(size int, create func() (decoder, error)) *decoderPool {
	return &decoderPool{create: create, tokens: make(chan struct{}, size)}
}

// get lends a decoder, waiting while all are lent (or for the one prepare
// is creating, when none is idle); it gives up, returning nil, nil, when
// stop or done is closed.
func (p *decoderPool) get(stop, done <-chan struct{}) (decoder, error) {
	p.mu.Lock()
	warming := p.warming
	if len(p.idle) > 0 {
		warming = nil
	}
	p.mu.Unlock()
	if warming != nil {
		select {
		case <-warming:
		case <-stop:
			return nil, nil
		case <-done:
			return nil, nil
		}
	}
	select {
	case p.tokens <- struct{}{}:
	case <-stop:
		return nil, nil
	case <-done:
		return nil, nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.tokens
		return nil, errPoolClosed
	}
	if n := len(p.idle); n > 0 {
		d := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return d, nil
	}
	p.created++
	p.mu.Unlock()
	d, err := p.create()
	if err != nil {
		p.mu.Lock()
		p.created--
		p.mu.Unlock()
		<-p.tokens
		return nil, err
	}
	return d, nil
}

// put returns a decoder lent by get.
func (p *decoderPool) put(d decoder) {
	p.mu.Lock()
	if p.closed {
		p.created--
		p.mu.Unlock()
		d.free()
	} else {
		p.idle = append(p.idle, d)
		p.mu.Unlock()
	}
	<-p.tokens
}

// discard frees a lent decoder that failed instead of returning it: the
// pool creates a fresh one when it is next needed.
func (p *decoderPool) discard(d decoder) {
	p.mu.Lock()
	p.created--
	p.mu.Unlock()
	d.free()
	<-p.tokens
}

// prepare creates a decoder in the background when none is idle or being
// prepared and the pool has room, so that the utterance that needs one
// next (a call's first, as it starts) does not wait for its creation.
func (p *decoderPool) prepare() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) > 0 || p.warming != nil {
		return
	}
	select {
	case p.tokens <- struct{}{}:
	default:
		return // all lent or being created: a borrower waits for a return
	}
	p.created++
	ready := make(chan struct{})
	p.warming = ready
	p.wg.Go(func() {
		defer func() { <-p.tokens }()
		d, err := p.create()
		p.mu.Lock()
		p.warming = nil
		keep := err == nil && !p.closed
		switch {
		case keep:
			p.idle = append(p.idle, d)
		default:
			p.created--
		}
		p.mu.Unlock()
		close(ready)
		if err == nil && !keep {
			d.free()
		}
	})
}

// close frees the idle decoders now (and one being prepared once it is
// created: close waits for it) and the lent ones when they return.
func (p *decoderPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.created -= len(idle)
	p.closed = true
	p.mu.Unlock()
	for _, d := range idle {
		d.free()
	}
	p.wg.Wait()
}

// poolStats is a snapshot for tests and the startup log; Warming is the
// decoder prepare is creating (0 or 1), counted in Created.
type poolStats struct {
	Created, Idle, Lent, Warming int
}

func (p *decoderPool) stats() poolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	warming := 0
	if p.warming != nil {
		warming = 1
	}
	return poolStats{Created: p.created, Idle: len(p.idle), Lent: p.created - len(p.idle) - warming, Warming: warming}
}
