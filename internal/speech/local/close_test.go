package local

import (
	"context"
	"testing"
	"time"

	"switchboard/internal/speech"
)

// TestCloseMidUtterance: a stream closed mid-utterance (the caller hung up
// while speaking) ends the utterance before its decoder goes back to the
// pool, so the next stream that borrows it begins cleanly.
func TestCloseMidUtterance(t *testing.T) {
	processing := make(chan struct{}, 1)
	f := &fakeFactory{slowDown: func() {
		select {
		case processing <- struct{}{}:
		default:
		}
	}}
	tr := newTranscriber(TranscriberOptions{Decoders: 1}.withDefaults(), f.create)
	defer tr.Close()
	for round := range 3 {
		s, err := tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(make([]int16, 3200)); err != nil {
			t.Fatal(err)
		}
		select { // an utterance is open on the decoder
		case <-processing:
		case <-time.After(5 * time.Second):
			t.Fatal("the stream never decoded its audio")
		}
		s.Close()
		f.mu.Lock()
		for _, d := range f.decoders {
			if d.inUtt || d.misuse.Load() != 0 {
				t.Errorf("round %d: decoder %d left in an utterance (%v) or misused (%d)", round, d.id, d.inUtt, d.misuse.Load())
			}
		}
		f.mu.Unlock()
	}
	if n := len(f.decoders); n != 1 {
		t.Errorf("%d decoders created, want the one reused", n)
	}
}
