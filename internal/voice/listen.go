package voice

import (
	"context"
	"strings"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/speech"
)

// recorder remembers a Detector's last answer, so that the barge-in
// decision sees the same frame classification the endpointer did.
type recorder struct {
	d    vad.Detector
	last bool
}

func (r *recorder) IsSpeech(f []int16) (bool, error) {
	v, err := r.d.IsSpeech(f)
	r.last = v && err == nil
	return v, err
}

// maxWaitWords bounds a pause of the assistant's audio once the caller has
// stopped speaking: a recognizer that has not given the utterance's final
// by then (it is slow or lost it) does not keep the assistant silent; the
// final, if it comes later with words, still cuts the turn.
const maxWaitWords = 3 * time.Second

// pauseCheck is how often a pause is checked for caller audio that stopped.
const pauseCheck = 250 * time.Millisecond

// hinter is speech.Hinter: a stream whose hints can change between utterances.
type hinter interface{ SetHints([]string) }

// listener is listen's state; only listen's goroutine touches it.
type listener struct {
	p       *Pipeline
	stt     speech.TranscribeStream
	det     *recorder
	ep      *vad.Endpointer
	barge   vad.BargeIn
	down    *audio.Resampler // pipeline rate → sttHz, when they differ
	waiting []*measurement   // utterances finished, awaiting their final transcript

	lastVoiced time.Time // arrival of the last voiced frame
	lastFrame  time.Time // arrival of the last frame
	stoppedAt  time.Time // arrival of the frame that ended the last utterance
	downBuf    []int16   // write's downsampled frame; STT streams do not keep it
	partial    string    // the utterance's latest partial transcript
	shown      bool      // partials of the utterance went to the client
	// paused is the assistant turn paused for the caller's speech, waiting
	// for the words that decide: cut it or resume it.
	paused     *turn
	wasPlaying bool
	held       []heldText // finals kept until the assistant finishes (barge-in disabled)
}

type heldText struct {
	text string
	m    *measurement
}

// listen is the caller-side goroutine: each frame through voice activity,
// endpointing and barge-in into speech-to-text; each transcript to the
// client and, when final, to the engine.
func (p *Pipeline) listen(ctx context.Context, stt speech.TranscribeStream) {
	l := &listener{p: p, stt: stt, det: &recorder{d: p.cfg.Detector}, barge: p.cfg.BargeIn}
	ep, err := vad.NewEndpointer(l.det, p.cfg.Endpointing)
	if err != nil { // New validated the config
		p.log.Error("endpointer", "err", err)
		p.fail(call.ReasonSystemError)
		return
	}
	l.ep = ep
	if p.sttHz != audio.PipelineRate {
		l.down = audio.NewResampler(audio.PipelineRate, p.sttHz)
	}
	results := stt.Results()
	// While a turn is paused for the caller, a clock also ends the pause
	// when the caller's audio stops altogether (a client that stops
	// sending, a line gone quiet): frames alone would never end it.
	tick := time.NewTicker(pauseCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if l.paused != nil && !l.lastFrame.IsZero() && p.cfg.Now().Sub(l.lastFrame) > maxWaitWords {
				l.resume(vad.NoWords)
			}
		case f := <-p.frames:
			l.lastFrame = f.at
			l.frame(f)
		case tr, ok := <-results:
			if !ok {
				results = nil
				if ctx.Err() == nil {
					p.log.Error("speech-to-text stream failed; ending the call", "provider", p.cfg.Transcriber.Name(), "err", stt.Err())
					p.fail(call.ReasonTranscriberFailed)
				}
				continue
			}
			l.transcript(tr)
		case n := <-p.notes:
			if n.played {
				p.cfg.Input(conversation.Input{Kind: conversation.Played, TurnID: n.t.id, Breakdown: n.t.bdCopy(p)})
				l.release()
			}
		}
	}
}

// bdCopy reads t's breakdown under the pipeline's lock.
func (t *turn) bdCopy(p *Pipeline) *call.Breakdown {
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.bd
}

// frame runs one caller frame through the chain.
func (l *listener) frame(f frame) {
	p := l.p
	ev := l.ep.Process(f.pcm)
	voiced := l.det.last
	if voiced {
		l.lastVoiced = f.at
	}
	switch ev {
	case vad.SpeechStarted:
		l.partial = ""
		l.applyHints()
		p.out.SpeechStarted()
		p.cfg.Input(conversation.Input{Kind: conversation.Activity})
		for _, pre := range l.ep.PreRoll() {
			l.write(pre)
		}
	case vad.SpeechStopped:
		p.out.SpeechStopped()
		l.stoppedAt = f.at
		if err := l.stt.Finish(); err != nil {
			// No final will come for it: nothing waits for one.
			p.log.Warn("speech-to-text refused the end of an utterance", "err", err)
		} else {
			l.waiting = append(l.waiting, &measurement{lastVoiced: l.lastVoiced, endpointed: p.cfg.Now()})
		}
		l.ep.SetSentenceEnded(false)
	case vad.None:
		if l.ep.Speaking() {
			l.write(f.pcm)
		}
	}

	// Barge-in, first step: caller speech over the assistant's audio for
	// BargeIn.MinSpeechMs pauses it in this frame. The words decide the
	// rest (transcript).
	playing := p.Speaking()
	if l.paused != nil && !p.isPaused(l.paused) {
		l.paused = nil // cut meanwhile by the engine (typed text, a hang-up)
	}
	if playing && !p.bargeInOff() {
		if !l.wasPlaying {
			l.barge.Reset()
		}
		l.barge.Observe(voiced)
		switch {
		case l.paused == nil && l.barge.Decided() && l.ep.Speaking():
			l.pause()
		case l.paused != nil && !l.ep.Speaking() && (len(l.waiting) == 0 || f.at.Sub(l.stoppedAt) > maxWaitWords):
			// The speech is over and no transcript is to come (or none
			// came in time): nothing was said after all.
			l.resume(vad.NoWords)
		}
	}
	l.wasPlaying = playing
}

// write sends a frame to speech-to-text, at its rate.
func (l *listener) write(pcm []int16) {
	if l.down != nil {
		l.downBuf = l.down.Process(l.downBuf[:0], pcm)
		pcm = l.downBuf
	}
	if err := l.stt.Write(pcm); err != nil {
		l.p.log.Debug("speech-to-text write failed", "err", err)
	}
}

// applyHints gives the recognizer the expected answers before an utterance.
func (l *listener) applyHints() {
	p := l.p
	p.mu.Lock()
	hints, dirty := p.hints, p.hintsDirty
	p.hintsDirty = false
	p.mu.Unlock()
	if h, ok := l.stt.(hinter); ok && dirty {
		h.SetHints(hints)
	}
}

// pause holds the assistant's audio while the caller speaks; when the
// words so far already interrupt, the turn is cut at once.
func (l *listener) pause() {
	p := l.p
	p.mu.Lock()
	t := p.playing
	p.mu.Unlock()
	if t == nil || !p.pause(t) {
		return
	}
	l.paused = t
	p.log.Debug("caller speaking over the assistant: paused", "turn_id", t.id)
	if l.barge.InterruptsEarly(l.partial) {
		l.bargeIn()
	}
}

// resume carries on with the paused turn: the caller's speech was v (no
// words, or a backchannel). The next run of speech must again last
// BargeIn.MinSpeechMs to pause it.
func (l *listener) resume(v vad.Verdict) {
	t := l.paused
	l.paused = nil
	l.barge.Reset()
	if t != nil && l.p.resume(t) {
		l.p.log.Debug("the caller's speech was no interruption: resumed", "turn_id", t.id, "verdict", v)
	}
}

// bargeIn cuts the assistant's turn now: the pacer is cleared and
// assistant.audio.clear sent in this frame, and the engine is told what
// was heard (it cancels the reply if it is still being written). A paused
// turn was heard up to its pause.
func (l *listener) bargeIn() {
	p := l.p
	l.paused = nil
	p.mu.Lock()
	t := p.playing
	p.mu.Unlock()
	if t == nil {
		return
	}
	heard, bd := p.Cut(t.id, "")
	p.bargeIns.Add(1)
	if p.cfg.Observer != nil {
		p.cfg.Observer.BargeIn()
	}
	p.log.Debug("barge-in", "turn_id", t.id, "heard", heard)
	p.cfg.Input(conversation.Input{Kind: conversation.Interrupt, TurnID: t.id, Text: heard, Breakdown: bd})
}

// transcript handles one result from speech-to-text.
func (l *listener) transcript(tr speech.Transcript) {
	p := l.p
	if !tr.Final {
		l.partial = tr.Text
		l.shown = true
		p.out.Transcript(call.RoleUser, tr.Text, "", false)
		l.ep.SetSentenceEnded(endsSentence(tr.Text))
		if l.paused != nil && l.barge.InterruptsEarly(tr.Text) {
			l.bargeIn()
		}
		return
	}
	now := p.cfg.Now()
	var m *measurement
	if len(l.waiting) > 0 {
		m, l.waiting = l.waiting[0], l.waiting[1:]
	} else { // a final the engine sent on its own (mid-utterance)
		m = &measurement{lastVoiced: l.lastVoiced, endpointed: now}
	}
	m.final = now
	l.partial = ""
	// An utterance that is not a caller turn withdraws its partials with
	// an empty one (docs/gateway-protocol.md).
	withdraw := func() {
		if l.shown {
			p.out.Transcript(call.RoleUser, "", "", false)
		}
	}
	defer func() { l.shown = false }()
	text := strings.TrimSpace(tr.Text)
	p.mu.Lock()
	busy := p.playing != nil
	p.mu.Unlock()
	if tr.Dropped {
		l.dropped(busy)
		withdraw()
		return
	}
	if !busy && text == "" {
		withdraw() // noise
		return
	}
	if busy {
		// Barge-in, second step: words over the assistant's audio cut
		// it; nothing, hesitations or a backchannel let it go on (resume
		// it if it paused, once the caller is done).
		if v := l.barge.Judge(text); v != vad.Interruption {
			p.log.Debug("no interruption over the assistant; ignored", "text", text, "verdict", v)
			withdraw()
			if l.paused != nil && !l.ep.Speaking() && len(l.waiting) == 0 {
				l.resume(v)
			}
			return
		}
		if p.bargeInOff() {
			l.held = append(l.held, heldText{text, m})
			return
		}
		l.bargeIn()
	}
	l.forward(text, m)
}

// dropped handles an utterance the recognizer failed (its final was
// overdue, or its stream broke: speech.Transcript.Dropped): what the
// caller said is lost, and the call goes on. Over the assistant's audio it
// was no interruption (a paused turn resumes, as after a cough); otherwise
// the engine asks the caller to say it again (conversation.Missed).
func (l *listener) dropped(busy bool) {
	p := l.p
	p.utterancesDropped.Add(1)
	p.log.Info("speech-to-text lost the caller's utterance; the call goes on", "provider", p.cfg.Transcriber.Name(), "over_the_assistant", busy)
	if busy {
		if l.paused != nil && !l.ep.Speaking() && len(l.waiting) == 0 {
			l.resume(vad.NoWords)
		}
		return
	}
	p.cfg.Input(conversation.Input{Kind: conversation.Missed})
}

// forward hands a caller utterance to the engine.
func (l *listener) forward(text string, m *measurement) {
	p := l.p
	m.handed = p.cfg.Now()
	p.mu.Lock()
	p.measure = m
	p.mu.Unlock()
	p.cfg.Input(conversation.Input{Kind: conversation.UserText, Text: text})
}

// release forwards what the caller said while a turn played with
// barge-in disabled.
func (l *listener) release() {
	held := l.held
	l.held = nil
	for _, h := range held {
		l.forward(h.text, h.m)
	}
}
