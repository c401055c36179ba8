package main

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/bench"
	"switchboard/internal/call"
	"switchboard/internal/voice/voicetest"
)

// The fake providers' latencies in the platform part.
const (
	platformSTT   = 100 * time.Millisecond // final after Finish
	platformModel = 200 * time.Millisecond // first token
	platformTTS   = 80 * time.Millisecond  // first audio
	platformWord  = 150 * time.Millisecond // audio per word
	platformReply = "Done. Booked for tonight."
)

type platformResult struct {
	calls, turnsPerCall int
	cycle               time.Duration
	bds                 []call.Breakdown
	took                time.Duration
	cpu                 time.Duration
	feedLag             time.Duration
	others, steal       float64
}

// runPlatform runs calls that each take turns on a loop (the utterance,
// silence to the endpoint, the fakes' latencies, the reply's audio, a
// pause) and collects every answered turn's breakdown.
func runPlatform(o options, utterance []int16) (platformResult, error) {
	f := audio.PipelineFormat
	speechFrames := framesOf(f, utterance)
	replyAudio := time.Duration(len(strings.Fields(platformReply))) * platformWord
	cycle := time.Duration(len(speechFrames))*audio.FrameDuration + 500*time.Millisecond +
		platformSTT + platformModel + platformTTS + replyAudio + 500*time.Millisecond
	s := script{speech: speechFrames, silence: voicetest.NewFrames(f).Silence, cycle: int(cycle / audio.FrameDuration)}
	r := platformResult{calls: o.platformCalls, turnsPerCall: o.platformTurns, cycle: cycle}
	fmt.Printf("platform: %d calls × %d turns, one turn every %s\n", r.calls, r.turnsPerCall, cycle)

	var mu sync.Mutex
	done := make(chan struct{})
	want := r.calls * r.turnsPerCall
	onTurn := func(t call.Turn) {
		if t.Role != call.RoleAssistant || t.Breakdown == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		r.bds = append(r.bds, *t.Breakdown)
		if len(r.bds) == want {
			close(done)
		}
	}
	m := &meter{}
	var calls []*voiceCall
	var ws []writer
	silence := s.cycle - len(s.speech)
	for i := range r.calls {
		c, err := startCall(callConfig{
			In: f, Out: f,
			STT:    &voicetest.Transcriber{Utterances: []voicetest.Utterance{{Final: "a table for two please"}}, FinalDelay: platformSTT},
			TTS:    &voicetest.Synthesizer{FirstAudio: platformTTS, WordDuration: platformWord},
			Brain:  &voicetest.Brain{Default: platformReply, FirstToken: platformModel},
			OnTurn: onTurn,
			Sink:   &out{m: m},
		}, i)
		if err != nil {
			return r, err
		}
		calls = append(calls, c)
		// Every caller starts in silence; their first words are spread
		// over it.
		ws = append(ws, writer{write: c.p.Write, phase: len(s.speech) + silence*i/r.calls})
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := m.start()
	feeders := feedAll(ctx, ws, s, 64, m)
	limit := time.Duration(r.turnsPerCall+2) * cycle
	select {
	case <-done:
	case <-time.After(limit):
	}
	m.stop()
	r.took, r.cpu = w.took, w.cpu
	r.others, r.steal = w.others(), w.steal()
	cancel()
	feeders.Wait()
	r.feedLag = w.lag.Quantile(0.99)
	err := stopAll(calls)
	mu.Lock()
	defer mu.Unlock()
	if len(r.bds) < want {
		return r, fmt.Errorf("%d of %d turns answered within %s", len(r.bds), want, limit)
	}
	r.bds = r.bds[:want]
	fmt.Printf("platform: p50 %s p95 %s (%d turns in %s)\n", bench.Ms(r.q(func(b call.Breakdown) time.Duration { return b.Platform }, .5)),
		bench.Ms(r.q(func(b call.Breakdown) time.Duration { return b.Platform }, .95)), len(r.bds), r.took.Round(time.Second))
	return r, err
}

func (r platformResult) q(field func(call.Breakdown) time.Duration, q float64) time.Duration {
	ds := make([]time.Duration, len(r.bds))
	for i, b := range r.bds {
		ds[i] = field(b)
	}
	return quantile(ds, q)
}

func (r platformResult) write(p func(string, ...any)) {
	platform := func(b call.Breakdown) time.Duration { return b.Platform }
	p95 := r.q(platform, .95)
	p("### Platform share of a turn\n\n")
	p("%d concurrent calls × %d turns (%d turns) in %s, one caller turn per call every %s; fake providers of fixed latency: speech-to-text final %s after the endpoint, the model's first token %s after the transcript, text-to-speech first audio %s after each sentence (then %s of audio a word, at once). `call.Breakdown` of every answered turn, as stored on it:\n\n",
		r.calls, r.turnsPerCall, len(r.bds), r.took.Round(time.Second), r.cycle.Round(10*time.Millisecond), platformSTT, platformModel, platformTTS, platformWord)
	p("| stage | p50 | p95 | p99 | max |\n|---|---:|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		f    func(call.Breakdown) time.Duration
	}{
		{"endpointing (last voiced frame → endpoint)", func(b call.Breakdown) time.Duration { return b.Endpointing }},
		{"transcriber (endpoint → final)", func(b call.Breakdown) time.Duration { return b.Transcriber }},
		{"model (transcript → first token)", func(b call.Breakdown) time.Duration { return b.Model }},
		{"voice (sentence → first audio)", func(b call.Breakdown) time.Duration { return b.Voice }},
		{"**platform** (the rest)", platform},
		{"total (last voiced frame → first audio frame out)", func(b call.Breakdown) time.Duration { return b.Total }},
	} {
		p("| %s | %s | %s | %s | %s |\n", row.name, bench.Ms(r.q(row.f, .5)), bench.Ms(r.q(row.f, .95)), bench.Ms(r.q(row.f, .99)), bench.Ms(r.q(row.f, 1)))
	}
	verdict := "met"
	if p95 >= 20*time.Millisecond {
		verdict = "NOT met"
	}
	p("\nGoal: platform p95 < 20 ms — **%s** (%s). ", verdict, bench.Ms(p95))
	p("The process used %.0f%% of the %d CPUs meanwhile, other processes %.0f%% and the host stole %.0f%%; the feeders' own lateness was %s at p99. ", 100*float64(r.cpu)/float64(r.took)/float64(runtime.NumCPU()), runtime.NumCPU(), 100*r.others, 100*r.steal, bench.Ms(r.feedLag))
	p("The platform share is what the pipeline and the engine add between the stages: handing the final to the engine, the first sentence to the synthesizer, its first audio through the encoder and into the pacer, and the pacer's wake-up to send it. The fake model writes its first sentence whole; with a real model the time from its first token to the end of its first sentence also lands in this share, since `Breakdown.Model` stops at the first token.\n\n")
}
