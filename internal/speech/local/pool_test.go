package local

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestDecoderPool(t *testing.T) {
	f := &fakeFactory{}
	p := newDecoderPool(2, f.create)
	stop := make(chan struct{})

	a, err := p.get(stop, nil)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	p.put(a)
	b, _ := p.get(stop, nil)
	if b != a {
		t.Errorf("get after put = a new decoder, want the idle one reused")
	}
	c, _ := p.get(stop, nil)
	if got := p.stats(); got != (poolStats{Created: 2, Idle: 0, Lent: 2}) {
		t.Errorf("stats with 2 lent = %+v", got)
	}

	// A third borrower waits for a return.
	got := make(chan decoder)
	go func() {
		d, _ := p.get(stop, nil)
		got <- d
	}()
	select {
	case <-got:
		t.Fatal("get with all decoders lent returned at once, want it to wait")
	case <-time.After(50 * time.Millisecond):
	}
	p.put(c)
	if d := <-got; d != c {
		t.Errorf("waiting get = %v, want the returned decoder", d)
	}

	// A waiting borrower gives up when stopped.
	go func() {
		d, err := p.get(stop, nil)
		if d != nil || err != nil {
			t.Errorf("stopped get = %v, %v; want nil, nil", d, err)
		}
		got <- nil
	}()
	close(stop)
	<-got

	p.put(b)
	p.close()
	if s := p.stats(); s.Created != 1 || s.Idle != 0 {
		t.Errorf("stats after close with one lent = %+v, want 1 created, 0 idle", s)
	}
	p.put(c) // the last lent one comes back after close: freed
	if s := p.stats(); s != (poolStats{}) {
		t.Errorf("stats after close and all returned = %+v, want zero", s)
	}
	if err := f.check(true); err != nil {
		t.Error(err)
	}
	if _, err := p.get(make(chan struct{}), nil); !errors.Is(err, errPoolClosed) {
		t.Errorf("get after close = %v, want errPoolClosed", err)
	}
}

func TestDecoderPoolCreateFails(t *testing.T) {
	boom := errors.New("no model")
	f := &fakeFactory{fail: boom}
	p := newDecoderPool(1, f.create)
	if _, err := p.get(nil, nil); !errors.Is(err, boom) {
		t.Fatalf("get with failing create = %v, want %v", err, boom)
	}
	// The failed creation gave its slot back.
	f.fail = nil
	d, err := p.get(nil, nil)
	if err != nil || d == nil {
		t.Fatalf("get after a failed create = %v, %v; want a decoder", d, err)
	}
	p.put(d)
}

// TestDecoderPoolBound hammers the pool: never more than size decoders,
// never one lent twice.
func TestDecoderPoolBound(t *testing.T) {
	f := &fakeFactory{}
	p := newDecoderPool(3, f.create)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				d, err := p.get(nil, nil)
				if err != nil {
					t.Errorf("get: %v", err)
					return
				}
				d.(*fakeDecoder).enter()
				d.(*fakeDecoder).leave()
				p.put(d)
			}
		}()
	}
	wg.Wait()
	if s := p.stats(); s.Created > 3 || s.Lent != 0 {
		t.Errorf("stats after the storm = %+v, want ≤ 3 created, 0 lent", s)
	}
	p.close()
	if err := f.check(true); err != nil {
		t.Error(err)
	}
}

// TestDecoderPoolPrepare: prepare creates a decoder ahead of need, once
// (not while one is idle or being created); a borrower meanwhile waits
// for it rather than creating a second; close waits for one being
// prepared and frees it.
func TestDecoderPoolPrepare(t *testing.T) {
	release := make(chan struct{})
	f := &fakeFactory{slowDown: func() {}}
	slow := func() (decoder, error) { <-release; return f.create() }
	p := newDecoderPool(2, slow)
	p.prepare()
	p.prepare() // one is being prepared: nothing more
	got := make(chan decoder)
	go func() {
		d, _ := p.get(nil, nil)
		got <- d
	}()
	select {
	case <-got:
		t.Fatal("get returned before the prepared decoder was created")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	d := <-got
	if s := p.stats(); s != (poolStats{Created: 1, Lent: 1}) {
		t.Errorf("stats = %+v, want the one prepared decoder lent", s)
	}
	p.put(d)
	p.prepare() // one is idle: nothing to prepare
	if s := p.stats(); s != (poolStats{Created: 1, Idle: 1}) {
		t.Errorf("stats after prepare with one idle = %+v, want 1 created and idle", s)
	}

	// close waits for a decoder being prepared, then frees it.
	release2 := make(chan struct{})
	f2 := &fakeFactory{}
	p2 := newDecoderPool(1, func() (decoder, error) { <-release2; return f2.create() })
	p2.prepare()
	closed := make(chan struct{})
	go func() { p2.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while a decoder was being prepared")
	case <-time.After(50 * time.Millisecond):
	}
	close(release2)
	<-closed
	if s := p2.stats(); s != (poolStats{}) {
		t.Errorf("stats after close = %+v, want zero", s)
	}
	if err := f2.check(true); err != nil {
		t.Error(err)
	}
	p.close()
	if err := f.check(true); err != nil {
		t.Error(err)
	}
}
