package local

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"switchboard/internal/speech"
)

// fakeBundle is a transcriber over fake decoders.
type fakeBundle struct {
	f  *fakeFactory
	tr *transcriber
}

func setupFake(t *testing.T, decoders int) fakeBundle {
	t.Helper()
	f := &fakeFactory{}
	tr := newTranscriber(TranscriberOptions{Decoders: decoders}.withDefaults(), f.create)
	t.Cleanup(func() {
		tr.Close()
		if err := f.check(true); err != nil {
			t.Error(err)
		}
	})
	return fakeBundle{f: f, tr: tr}
}

// writeSilence writes secs of audio at rate in 20 ms frames.
func writeSilence(t *testing.T, s speech.TranscribeStream, rate int, secs float64) {
	t.Helper()
	frame := make([]int16, rate/50)
	for range int(secs * 50) {
		if err := s.Write(frame); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
}

// nextFinal reads results until a final one, returning it and the
// partials seen before it.
func nextFinal(t *testing.T, s speech.TranscribeStream) (speech.Transcript, []speech.Transcript) {
	t.Helper()
	var partials []speech.Transcript
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r, ok := <-s.Results():
			if !ok {
				t.Fatalf("Results closed before a final result (Err %v)", s.Err())
			}
			if r.Final {
				return r, partials
			}
			partials = append(partials, r)
		case <-timeout:
			t.Fatal("no final result within 10 s")
		}
	}
}

// TestStreamPartialsWhileSpeaking: partial results come while the
// utterance is still being written, every 100 ms of its audio, before
// any Finish: what lets the pipeline decide a barge-in early.
func TestStreamPartialsWhileSpeaking(t *testing.T) {
	b := setupFake(t, 1)
	for _, rate := range []int{16000, 8000} {
		s, err := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: rate})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		writeSilence(t, s, rate, 0.5) // no Finish
		for i := 1; i <= 4; i++ {
			select {
			case r := <-s.Results():
				// The fake's hypothesis is the samples decoded, at 16 kHz.
				if want := fmt.Sprintf("lm n=%d", 1600*i); r.Final || !strings.HasPrefix(r.Text, want+" ") {
					t.Errorf("%d Hz: result %d = %+v, want the partial %q", rate, i, r, want)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("%d Hz: %d partials within 5 s of writing 500 ms of an utterance, want 4 before its Finish", rate, i-1)
			}
		}
		s.Close()
	}
}

// noLeak fails the test if goroutines started after before are still
// running shortly after.
func noLeak(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want ≤ %d:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLent waits until the pool has n decoders lent.
func waitLent(t *testing.T, p *decoderPool, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.stats().Lent != n {
		if time.Now().After(deadline) {
			t.Fatalf("pool %+v, want %d lent", p.stats(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStreamUtterances(t *testing.T) {
	b := setupFake(t, 2)
	before := runtime.NumGoroutine()
	s, err := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000, Language: "en-US"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	writeSilence(t, s, 16000, 1)
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	final, partials := nextFinal(t, s)
	if want := fmt.Sprintf("lm n=16000 cmn=%.0f", cmnPrior16k[0]); final.Text != want || final.Confidence != 0.5 {
		t.Errorf("first final = %+v, want %q (16000 samples, the 16 kHz prior) with confidence 0.5", final, want)
	}
	if len(partials) != 10 {
		t.Errorf("first utterance gave %d partials, want 10 (one per 100 ms, the fake's hypothesis changes with every chunk)", len(partials))
	}
	if st := b.tr.pool.stats(); st.Lent != 0 {
		t.Errorf("pool after a finished utterance = %+v, want nothing lent", st)
	}

	writeSilence(t, s, 16000, 0.5)
	s.Finish()
	final, _ = nextFinal(t, s)
	if want := fmt.Sprintf("lm n=8000 cmn=%.0f", cmnPrior16k[0]+1); final.Text != want {
		t.Errorf("second final = %q, want %q (the mean adapted by the first)", final.Text, want)
	}

	s.Finish() // no audio: an empty final
	if final, _ = nextFinal(t, s); final.Text != "" {
		t.Errorf("final of an empty utterance = %q, want \"\"", final.Text)
	}

	writeSilence(t, s, 16000, 0.3) // left open: Close drops it
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for range s.Results() {
	}
	if s.Err() != nil {
		t.Errorf("Err after Close = %v, want nil", s.Err())
	}
	if err := s.Write(make([]int16, 320)); !errors.Is(err, errStreamClosed) {
		t.Errorf("Write after Close = %v, want errStreamClosed", err)
	}
	if err := s.Finish(); !errors.Is(err, errStreamClosed) {
		t.Errorf("Finish after Close = %v, want errStreamClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := b.tr.pool.stats(); st.Lent != 0 || st.Created != 1 {
		t.Errorf("pool after Close = %+v, want 1 created, nothing lent", st)
	}
	noLeak(t, before)
}

// TestStreamLongUtterance: a minute without Finish ends the utterance
// anyway, and the speech after it opens the next.
func TestStreamLongUtterance(t *testing.T) {
	b := setupFake(t, 1)
	s, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	defer s.Close()
	finals := make(chan speech.Transcript, 2)
	go func() {
		for r := range s.Results() {
			if r.Final {
				finals <- r
			}
		}
	}()
	for range 61 {
		writeSilence(t, s, 16000, 1)
		waitDrained(t, s.(*stream))
	}
	final := <-finals
	if want := fmt.Sprintf("lm n=%d cmn=%.0f", maxUtterance, cmnPrior16k[0]); final.Text != want {
		t.Errorf("final after 61 s without Finish = %q, want %q", final.Text, want)
	}
	s.Finish()
	final = <-finals
	if want := fmt.Sprintf("lm n=16000 cmn=%.0f", cmnPrior16k[0]+1); final.Text != want {
		t.Errorf("final of the rest = %q, want %q", final.Text, want)
	}
	if samples, _ := s.(*stream).Dropped(); samples != 0 {
		t.Errorf("Dropped() = %d samples, want 0", samples)
	}
}

// waitDrained waits until the stream's worker has taken all queued audio.
func waitDrained(t *testing.T, s *stream) {
	t.Helper()
	waitQueued(t, s, 0)
}

// waitQueued waits until the stream has want samples queued.
func waitQueued(t *testing.T, s *stream, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n := s.queued
		s.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples still queued after 5 s, want %d", n, want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestStream8kHz(t *testing.T) {
	b := setupFake(t, 1)
	s, err := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 8000})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Close()
	writeSilence(t, s, 8000, 1)
	s.Finish()
	final, _ := nextFinal(t, s)
	// 1 s at 8 kHz is 16000 samples at 16 kHz, less the resampler's
	// lookahead (a millisecond), which opens the next utterance.
	var n int
	var prior string
	if _, err := fmt.Sscanf(final.Text, "lm n=%d cmn=%s", &n, &prior); err != nil || n < 15950 || n > 16000 || prior != fmt.Sprintf("%.0f", cmnPrior8k[0]) {
		t.Errorf("final for 1 s at 8 kHz = %q, want ~16000 samples decoded from the 8 kHz prior (%.0f)", final.Text, cmnPrior8k[0])
	}
}

func TestStreamHints(t *testing.T) {
	b := setupFake(t, 1)
	s, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000, Hints: []string{"book", "cancel"}})
	defer s.Close()
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	if final, _ := nextFinal(t, s); !strings.HasPrefix(final.Text, "grammar ") {
		t.Errorf("final with hints = %q, want the grammar search", final.Text)
	}
}

// TestStreamGrammarRefused: a grammar the engine refuses falls back to the
// language model instead of ending the stream.
func TestStreamGrammarRefused(t *testing.T) {
	b := setupFake(t, 1)
	s, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000, Hints: []string{"refuseme"}})
	defer s.Close()
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	if final, _ := nextFinal(t, s); !strings.HasPrefix(final.Text, "lm ") {
		t.Errorf("final with a refused grammar = %q, want the language model's", final.Text)
	}
}

// TestStreamDropsOldest checks that a stream whose decoder is stuck keeps
// at most 10 s and counts what it drops, without blocking Write.
func TestStreamDropsOldest(t *testing.T) {
	release := make(chan struct{})
	stuck := make(chan struct{}, 1)
	f := &fakeFactory{slowDown: func() {
		select {
		case stuck <- struct{}{}:
		default:
		}
		<-release
	}}
	tr := newTranscriber(TranscriberOptions{Decoders: 1}.withDefaults(), f.create)
	defer tr.Close()
	s, _ := tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	writeSilence(t, s, 16000, 0.02)
	<-stuck // the decoder holds the first 20 ms chunk
	start := time.Now()
	writeSilence(t, s, 16000, 11.98)
	if took := time.Since(start); took > time.Second {
		t.Errorf("12 s of Write to a stuck decoder took %v, want it not to block", took)
	}
	samples, _ := s.(*stream).Dropped()
	// The decoder holds one 20 ms chunk; 10 s wait in the queue.
	if want := int64(2*16000 - chunkSamples); samples != want {
		t.Errorf("Dropped() = %d samples, want %d", samples, want)
	}
	s.Finish()
	close(release)
	final, _ := nextFinal(t, s)
	if want := fmt.Sprintf("lm n=160320 cmn=%.0f", cmnPrior16k[0]); final.Text != want {
		t.Errorf("final after drops = %q, want %q (10 s + the chunk in hand)", final.Text, want)
	}
	s.Close()
}

func TestStreamContextEnds(t *testing.T) {
	b := setupFake(t, 1)
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := b.tr.Start(ctx, speech.TranscribeOptions{SampleRate: 16000})
	writeSilence(t, s, 16000, 0.5)
	waitLent(t, b.tr.pool, 1) // an utterance open: a decoder lent
	cancel()
	for range s.Results() {
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err after the context ended = %v, want context.Canceled", s.Err())
	}
	if err := s.Write(make([]int16, 320)); !errors.Is(err, context.Canceled) {
		t.Errorf("Write after the context ended = %v, want context.Canceled", err)
	}
	if st := b.tr.pool.stats(); st.Lent != 0 {
		t.Errorf("pool after the context ended = %+v, want the decoder back", st)
	}
	s.Close()
	noLeak(t, before)
}

// TestStreamWaitsForDecoder: with one decoder, a second stream's utterance
// waits for the first to finish, its audio queued meanwhile.
func TestStreamWaitsForDecoder(t *testing.T) {
	b := setupFake(t, 1)
	s1, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	s2, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	defer s1.Close()
	defer s2.Close()
	writeSilence(t, s1, 16000, 0.4)
	waitLent(t, b.tr.pool, 1) // s1 holds the decoder
	writeSilence(t, s2, 16000, 0.6)
	s2.Finish()
	select {
	case r := <-s2.Results():
		if r.Final {
			t.Fatalf("s2 finished (%q) while s1 held the only decoder", r.Text)
		}
	case <-time.After(100 * time.Millisecond):
	}
	s1.Finish()
	if f1, _ := nextFinal(t, s1); f1.Text != fmt.Sprintf("lm n=6400 cmn=%.0f", cmnPrior16k[0]) {
		t.Errorf("s1 final = %q", f1.Text)
	}
	if f2, _ := nextFinal(t, s2); f2.Text != fmt.Sprintf("lm n=9600 cmn=%.0f", cmnPrior16k[0]) {
		t.Errorf("s2 final = %q, want all its queued audio and its own prior", f2.Text)
	}
	if st := b.tr.pool.stats(); st.Created != 1 {
		t.Errorf("pool = %+v, want 1 decoder shared", st)
	}
}

func TestStartRefuses(t *testing.T) {
	b := setupFake(t, 1)
	for _, c := range []struct {
		o    speech.TranscribeOptions
		want string
	}{
		{speech.TranscribeOptions{SampleRate: 44100}, "SampleRate"},
		{speech.TranscribeOptions{}, "SampleRate"},
		{speech.TranscribeOptions{SampleRate: 16000, Language: "fr-FR"}, "Language"},
		{speech.TranscribeOptions{SampleRate: 16000, Model: "nova-2"}, "Model"},
	} {
		s, err := b.tr.Start(context.Background(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Start(%+v) = %v, %v; want an error naming %s", c.o, s, err, c.want)
		}
	}
	if b.tr.Name() != "local" {
		t.Errorf("Name() = %q, want local", b.tr.Name())
	}
}

func TestStartAfterClose(t *testing.T) {
	b := setupFake(t, 1)
	b.tr.Close()
	s, err := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	if err != nil {
		t.Fatalf("Start after Close: %v", err)
	}
	writeSilence(t, s, 16000, 0.1)
	for range s.Results() {
	}
	if !errors.Is(s.Err(), errPoolClosed) {
		t.Errorf("Err of a stream on a closed transcriber = %v, want errPoolClosed", s.Err())
	}
	s.Close()
}

func BenchmarkStreamWrite(b *testing.B) {
	f := &fakeFactory{}
	tr := newTranscriber(TranscriberOptions{Decoders: 1}.withDefaults(), f.create)
	defer tr.Close()
	s, _ := tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 8000})
	defer s.Close()
	frame := make([]int16, 160)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStreamSetHints: new hints apply from the next utterance that starts;
// the one already started keeps its search; nil goes back to the language
// model; hints set before an empty Finish still carry on.
func TestStreamSetHints(t *testing.T) {
	b := setupFake(t, 1)
	s, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	defer s.Close()
	h := s.(speech.Hinter)
	search := func(step string, want string) {
		t.Helper()
		final, _ := nextFinal(t, s)
		if got, _, _ := strings.Cut(final.Text, " "); got != want {
			t.Errorf("%s: final %q, want the %s search", step, final.Text, want)
		}
	}
	writeSilence(t, s, 16000, 0.2)
	h.SetHints([]string{"book", "cancel"}) // utterance 1 has started
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	search("SetHints during utterance 1", "lm")

	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	search("utterance 2 after SetHints", "grammar")

	h.SetHints(nil)
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	search("utterance 3 after SetHints(nil)", "lm")

	h.SetHints([]string{"yes", "no"})
	s.Finish() // an empty utterance takes the hints
	if final, _ := nextFinal(t, s); final.Text != "" {
		t.Errorf("empty utterance: final %q, want \"\"", final.Text)
	}
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	search("utterance 5, after an empty one took the hints", "grammar")
	writeSilence(t, s, 16000, 0.2)
	s.Finish()
	search("utterance 6, hints kept", "grammar")
}

// TestStreamDropsPastFinished: when the oldest queued utterance is
// finished and its audio is all dropped, dropping moves on to the next one
// (it once looped forever holding the lock) and the finished one still
// gets its final result.
func TestStreamDropsPastFinished(t *testing.T) {
	b := setupFake(t, 1)
	s1, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	s2, _ := b.tr.Start(context.Background(), speech.TranscribeOptions{SampleRate: 16000})
	defer s1.Close()
	defer s2.Close()
	writeSilence(t, s1, 16000, 0.4)
	waitLent(t, b.tr.pool, 1) // s1 holds the only decoder
	writeSilence(t, s2, 16000, 0.1)
	s2.Finish()
	waitQueued(t, s2.(*stream), 1600-chunkSamples) // s2 took a chunk, waits for a decoder
	wrote := make(chan error, 1)
	go func() {
		frame := make([]int16, 320)
		for range 11 * 50 {
			if err := s2.Write(frame); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("11 s of Write behind a finished utterance did not return within 5 s")
	}
	s2.Finish()
	s1.Finish()
	nextFinal(t, s1)
	// The first 20 ms chunk of the finished utterance was taken before s2
	// waited for the decoder; the rest of it was dropped first.
	f, _ := nextFinal(t, s2)
	if f.Text != fmt.Sprintf("lm n=%d cmn=%.0f", chunkSamples, cmnPrior16k[0]) {
		t.Errorf("s2 first final = %q, want the chunk in hand (n=%d)", f.Text, chunkSamples)
	}
	f, _ = nextFinal(t, s2)
	if f.Text != fmt.Sprintf("lm n=%d cmn=%.0f", maxQueued, cmnPrior16k[0]+1) {
		t.Errorf("s2 second final = %q, want the last 10 s (n=%d)", f.Text, maxQueued)
	}
	if samples, _ := s2.(*stream).Dropped(); samples != 1600+11*16000-chunkSamples-maxQueued {
		t.Errorf("Dropped() = %d samples, want %d", samples, 1600+11*16000-chunkSamples-maxQueued)
	}
}
