package deepgram

import (
	"testing"

	"switchboard/internal/speech"
	"switchboard/internal/speech/cloud/internal/pcm"
)

func TestWriteDropsOldest(t *testing.T) {
	s := &Stream{audio: make(chan []byte, 3), done: make(chan struct{})}
	for i := range 10 {
		if err := s.Write([]int16{int16(i)}); err != nil {
			t.Fatalf("Write(%d): %v", i, err)
		}
	}
	if got := s.Dropped(); got != 7 {
		t.Errorf("Dropped() = %d after 10 writes into a queue of 3, want 7", got)
	}
	var kept []int16
	for range 3 {
		var d pcm.Decoder
		kept = d.Decode(kept, <-s.audio)
	}
	if kept[0] != 7 || kept[1] != 8 || kept[2] != 9 {
		t.Errorf("queue kept frames %v, want the newest 7, 8, 9", kept)
	}
}

func TestDeliverDropsPartialsNotFinals(t *testing.T) {
	s := &Stream{results: make(chan speech.Transcript, 2)}
	ctx := t.Context()
	s.deliver(ctx, speech.Transcript{Text: "a"})
	s.deliver(ctx, speech.Transcript{Text: "a b"})
	s.deliver(ctx, speech.Transcript{Text: "a b c"}) // no room: dropped
	if got := s.DroppedResults(); got != 1 {
		t.Errorf("DroppedResults() = %d, want 1", got)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.deliver(ctx, speech.Transcript{Text: "a b c d", Final: true}) // waits for room
	}()
	<-s.results
	<-done
	<-s.results
	if tr := <-s.results; !tr.Final {
		t.Errorf("last result = %+v, want the final, which waited for room", tr)
	}
}
