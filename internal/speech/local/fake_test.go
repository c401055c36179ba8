package local

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// fakeDecoder stands in for pocketsphinx in tests of the stream and pool
// mechanics, which run in every build. Its hypothesis describes what it
// was given: "<grammar?> n=<samples> cmn=<first value>".
type fakeDecoder struct {
	mu       sync.Mutex
	id       int
	inUtt    bool
	grammar  string
	samples  int
	cmn0     float32
	freed    bool
	misuse   atomic.Int32 // calls out of order or concurrent
	busy     atomic.Int32
	slowDown func() // called in process, to simulate a slow decoder
}

func (d *fakeDecoder) enter() {
	if d.busy.Add(1) != 1 || d.freed {
		d.misuse.Add(1)
	}
}
func (d *fakeDecoder) leave() { d.busy.Add(-1) }

func (d *fakeDecoder) known(w string) bool { return w != "zzz" }

func (d *fakeDecoder) begin(grammar string, cmn []float32) error {
	d.enter()
	defer d.leave()
	if d.inUtt {
		d.misuse.Add(1)
	}
	if strings.Contains(grammar, "refuseme") {
		return fmt.Errorf("%w: fake", errGrammarRefused)
	}
	d.inUtt, d.grammar, d.samples, d.cmn0 = true, grammar, 0, cmn[0]
	return nil
}

func (d *fakeDecoder) process(pcm []int16) error {
	d.enter()
	defer d.leave()
	if !d.inUtt || len(pcm) > chunkSamples {
		d.misuse.Add(1)
	}
	if d.slowDown != nil {
		d.slowDown()
	}
	d.samples += len(pcm)
	return nil
}

func (d *fakeDecoder) hyp() string {
	d.enter()
	defer d.leave()
	g := "lm"
	if d.grammar != "" {
		g = "grammar"
	}
	return fmt.Sprintf("%s n=%d cmn=%.0f", g, d.samples, d.cmn0)
}

func (d *fakeDecoder) end(cmn []float32) (string, float64, error) {
	h := d.hyp()
	d.enter()
	defer d.leave()
	if !d.inUtt {
		d.misuse.Add(1)
	}
	d.inUtt = false
	cmn[0]++ // "adapts"
	return h, 0.5, nil
}

func (d *fakeDecoder) free() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.freed {
		d.misuse.Add(1)
	}
	d.freed = true
}

// fakeFactory creates fakeDecoders and remembers them.
type fakeFactory struct {
	mu       sync.Mutex
	decoders []*fakeDecoder
	slowDown func()
	fail     error
}

func (f *fakeFactory) create() (decoder, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	d := &fakeDecoder{id: len(f.decoders), slowDown: f.slowDown}
	f.decoders = append(f.decoders, d)
	return d, nil
}

// check reports misuse and decoders not freed (when wantFreed).
func (f *fakeFactory) check(wantFreed bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.decoders {
		if n := d.misuse.Load(); n > 0 {
			return fmt.Errorf("decoder %d misused %d times", d.id, n)
		}
		d.mu.Lock()
		freed := d.freed
		d.mu.Unlock()
		if wantFreed && !freed {
			return fmt.Errorf("decoder %d not freed", d.id)
		}
	}
	return nil
}
