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

	lastVoiced   time.Time // arrival of the last voiced frame
	downBuf      []int16   // write's downsampled frame; STT streams do not keep it
	partial      string    // the utterance's latest partial transcript
	shown        bool      // partials of the utterance went to the client
	bargePending bool      // enough speech over the assistant; waiting for words
	wasPlaying   bool
	held         []heldText // finals kept until the assistant finishes (barge-in disabled)
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
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-p.frames:
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
		l.waiting = append(l.waiting, &measurement{lastVoiced: l.lastVoiced, endpointed: p.cfg.Now()})
		if err := l.stt.Finish(); err != nil {
			p.log.Warn("speech-to-text refused the end of an utterance", "err", err)
		}
		l.ep.SetSentenceEnded(false)
	case vad.None:
		if l.ep.Speaking() {
			l.write(f.pcm)
		}
	}

	// Barge-in: speech over the assistant's audio, long enough, with words
	// that are not a backchannel.
	playing := p.Speaking()
	if playing && !p.cfg.BargeInDisabled {
		if !l.wasPlaying {
			l.barge.Reset()
			l.bargePending = false
		}
		if l.barge.Observe(voiced) {
			l.bargePending = true
		}
		if l.bargePending && l.interrupts(l.partial) {
			l.bargeIn()
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

// interrupts reports whether the caller's words so far are a real
// interruption (not nothing, not a backchannel).
func (l *listener) interrupts(text string) bool {
	return strings.TrimSpace(text) != "" && !l.barge.IsBackchannel(text)
}

// bargeIn cuts the assistant's turn now: the pacer is cleared and
// assistant.audio.clear sent in this frame, and the engine is told what
// was heard (it cancels the reply if it is still being written).
func (l *listener) bargeIn() {
	p := l.p
	l.bargePending = false
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
		if l.bargePending && p.Speaking() && l.interrupts(tr.Text) {
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
	if text == "" {
		withdraw() // noise
		return
	}
	p.mu.Lock()
	busy := p.playing != nil
	p.mu.Unlock()
	if busy {
		if l.barge.IsBackchannel(text) {
			p.log.Debug("backchannel over the assistant; ignored", "text", text)
			withdraw()
			return
		}
		if p.cfg.BargeInDisabled {
			l.held = append(l.held, heldText{text, m})
			return
		}
		l.bargeIn()
	}
	l.forward(text, m)
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
