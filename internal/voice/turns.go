package voice

import (
	"context"
	"encoding/binary"
	"strings"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
)

// turn is one assistant turn as the pipeline speaks it. Fields are guarded
// by Pipeline.mu.
type turn struct {
	id  string
	idx uint32 // tags its frames in the pacer
	// stopped is closed by stopLocked when the turn is cut or forgotten:
	// its synthesis and every wait on its behalf end.
	stopped chan struct{}
	// synthCancel cancels the synthesis of the sentence under way, if any.
	synthCancel context.CancelFunc

	pending   strings.Builder // text not yet a whole sentence
	sentences []sentence
	queued    int // frames handed to the pacer
	sent      int // frames the transport took
	textDone  bool
	ended     bool // its last frame went out: played in full
	cut       bool
	// paused: its audio is held for the caller's speech (since pausedAt)
	// until the words decide: resume or cut.
	paused   bool
	pausedAt time.Time

	measure    *measurement // the caller's utterance it answers, if any
	firstDelta time.Time
	synthStart time.Time
	firstAudio time.Time
	bd         *call.Breakdown

	markMs int64 // the client's latest playback.mark
	markAt time.Time
}

// sentence is one synthesized piece of a turn and where its audio
// starts and ends, in frames from the turn's first; to is -1 while it is
// being synthesized.
type sentence struct {
	text     string
	from, to int
}

// framesPerWord estimates a sentence still being synthesized: 400 ms a
// word, espeak-ng's and most voices' pace at 150 words a minute, until the
// turn's finished sentences give the voice's own.
const framesPerWord = 20

// measurement times one caller utterance through the pipeline.
type measurement struct {
	lastVoiced time.Time // arrival of its last voiced frame
	endpointed time.Time // the endpointer's decision
	final      time.Time // its final transcript
	handed     time.Time // handed to the engine
}

// breakdownLocked splits t's response time; t's first frame has just gone out at now.
func breakdownLocked(t *turn, now time.Time) *call.Breakdown {
	m := t.measure
	if m == nil || t.firstDelta.IsZero() || t.firstAudio.IsZero() {
		return nil
	}
	b := call.Breakdown{
		Endpointing: m.endpointed.Sub(m.lastVoiced),
		Transcriber: m.final.Sub(m.endpointed),
		Model:       t.firstDelta.Sub(m.handed),
		Voice:       t.firstAudio.Sub(t.synthStart),
		Total:       now.Sub(m.lastVoiced),
	}
	b.Platform = max(b.Total-b.Endpointing-b.Transcriber-b.Model-b.Voice, 0)
	return &b
}

// Frame tags: each frame queued in the pacer carries its turn, so the
// pacer's goroutine knows what it is sending even across a Clear.
const (
	tagFirst byte = 1 << iota // the turn's first frame
	tagEnd                    // the turn's end: no audio
	tagLen   = 5              // flags, then the turn's idx (big endian)
)

// tag writes a frame's tag into its first tagLen bytes (the encoder's
// headroom), so tagging copies nothing.
func tag(frame []byte, flags byte, idx uint32) []byte {
	frame[0] = flags
	binary.BigEndian.PutUint32(frame[1:tagLen], idx)
	return frame
}

// turnLocked returns turnID's state, starting it (and giving it the
// caller's last utterance to answer) when it is new.
func (p *Pipeline) turnLocked(turnID string) *turn {
	if t, ok := p.turns[turnID]; ok {
		return t
	}
	p.nextIdx++
	t := &turn{id: turnID, idx: p.nextIdx, measure: p.measure, stopped: make(chan struct{})}
	p.measure = nil
	p.turns[turnID] = t
	p.byIdx[t.idx] = t
	return t
}

// stopLocked ends t's synthesis and the waits on its behalf; it may be
// called more than once.
func (t *turn) stopLocked() {
	if t.isStopped() {
		return
	}
	close(t.stopped)
	if t.synthCancel != nil {
		t.synthCancel()
	}
}

// isStopped reports whether t was cut or forgotten. It reads a channel
// and needs no lock.
func (t *turn) isStopped() bool {
	select {
	case <-t.stopped:
		return true
	default:
		return false
	}
}

// forgetLocked drops a finished turn's state.
func (p *Pipeline) forgetLocked(t *turn) {
	if t.paused { // never left holding the pacer
		t.paused = false
		p.pacer.Clear()
		p.pacer.Resume()
	}
	t.stopLocked()
	delete(p.turns, t.id)
	delete(p.byIdx, t.idx)
	if p.playing == t {
		p.playing = nil
	}
}

// heardLocked is what the caller heard of t: whole sentences whose audio
// went out, and of the sentence under way the share of its words that its
// played audio covers. Played audio is what the transport took, or less
// when the client's playback.mark says it has played less (plus the time
// since that mark, up to a pause: a paused client plays nothing).
func (p *Pipeline) heardLocked(t *turn) (heard string, playedMs int64) {
	playedMs = int64(t.sent) * audio.FrameDuration.Milliseconds()
	if !t.markAt.IsZero() {
		until := p.cfg.Now()
		if t.paused {
			until = t.pausedAt
		}
		playedMs = min(playedMs, t.markMs+max(until.Sub(t.markAt), 0).Milliseconds())
	}
	frames := float64(playedMs) / float64(audio.FrameDuration.Milliseconds())
	perWord := float64(framesPerWord)
	if done, words := finishedLocked(t); words > 0 {
		perWord = float64(done) / float64(words)
	} else if p.paceWords > 0 { // the voice's pace on this call so far
		perWord = float64(p.paceFrames) / float64(p.paceWords)
	}
	var words []string
	for _, s := range t.sentences {
		w := strings.Fields(s.text)
		to := s.to
		if to < 0 { // under way: its length so far, or what its words will take
			to = s.from + max(t.queued-s.from, int(perWord*float64(len(w))))
		}
		if float64(to) <= frames {
			words = append(words, w...)
			continue
		}
		if span := to - s.from; span > 0 && frames > float64(s.from) {
			words = append(words, w[:min(len(w), int(float64(len(w))*(frames-float64(s.from))/float64(span)))]...)
		}
		break
	}
	return strings.Join(words, " "), playedMs
}

// finishedLocked counts the frames and words of t's synthesized sentences.
func finishedLocked(t *turn) (frames, words int) {
	for _, s := range t.sentences {
		if s.to >= 0 {
			frames += s.to - s.from
			words += len(strings.Fields(s.text))
		}
	}
	return frames, words
}

// Mark records a client's playback.mark: it has played playedMs of turnID.
func (p *Pipeline) Mark(turnID string, playedMs int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.turns[turnID]; ok && playedMs >= t.markMs {
		t.markMs, t.markAt = playedMs, p.cfg.Now()
	}
}

// Speaking reports whether assistant audio is queued or sounding.
func (p *Pipeline) Speaking() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.playing != nil && p.playing.sent > 0
}

// --- conversation.Output, Speaker and Expecter: the engine's side ---

// Delta forwards the text and feeds whole sentences to speech synthesis.
func (p *Pipeline) Delta(turnID, text string) {
	p.out.Delta(turnID, text)
	p.mu.Lock()
	t := p.turnLocked(turnID)
	if t.firstDelta.IsZero() {
		t.firstDelta = p.cfg.Now()
	}
	t.pending.WriteString(text)
	var ready []string
	if !p.failed {
		var rest string
		ready, rest = cutSentences(t.pending.String())
		t.pending.Reset()
		t.pending.WriteString(rest)
	}
	p.mu.Unlock()
	for _, s := range ready {
		p.enqueue(speakItem{t: t, text: s})
	}
}

// TextDone speaks what is left of the turn and marks its end; the engine
// then waits for Played or Interrupt.
func (p *Pipeline) TextDone(turnID, text string) bool {
	p.mu.Lock()
	if p.failed || p.stopped() {
		p.mu.Unlock()
		return false
	}
	t := p.turnLocked(turnID)
	if t.cut { // cut before its text was complete: nothing more is played
		p.mu.Unlock()
		return false
	}
	rest := strings.TrimSpace(t.pending.String())
	t.pending.Reset()
	t.textDone = true
	p.mu.Unlock()
	if rest != "" {
		p.enqueue(speakItem{t: t, text: rest})
	}
	return p.enqueue(speakItem{t: t, end: true})
}

// Cut stops turnID's audio now and reports what was heard of it.
func (p *Pipeline) Cut(turnID, shown string) (string, *call.Breakdown) {
	p.mu.Lock()
	t, ok := p.turns[turnID]
	if !ok {
		p.mu.Unlock()
		return shown, nil
	}
	heard, _, clear := p.cutLocked(t)
	sentMs := int64(t.sent) * audio.FrameDuration.Milliseconds()
	bd := t.bd
	p.mu.Unlock()
	if clear {
		p.out.AudioClear(turnID, sentMs)
	}
	return heard, bd
}

// cutLocked stops t: its synthesis, and its audio in the pacer. clear
// reports that some of it had gone out, so the client must drop what it
// still buffers (assistant.audio.clear). A paused turn's heard text is
// what was sent before the pause.
func (p *Pipeline) cutLocked(t *turn) (heard string, playedMs int64, clear bool) {
	heard, playedMs = p.heardLocked(t)
	if t.ended {
		return heard, playedMs, false
	}
	clear = t.sent > 0 && !t.cut
	t.cut = true
	t.stopLocked()
	if p.playing == t {
		p.pacer.Clear()
		p.playing = nil
	}
	if t.paused { // the pacer is free for the next turn
		t.paused = false
		p.pacer.Resume()
	}
	return heard, playedMs, clear
}

// pause holds t's audio for the caller's speech: nothing more of it is
// sent (but a frame already on its way) until resume or a cut. It reports
// false when t is not the turn sounding (it ended, was cut, or is paused).
func (p *Pipeline) pause(t *turn) bool {
	p.mu.Lock()
	if p.playing != t || t.cut || t.ended || t.paused {
		p.mu.Unlock()
		return false
	}
	p.pacer.Pause()
	t.paused, t.pausedAt = true, p.cfg.Now()
	sentMs := int64(t.sent) * audio.FrameDuration.Milliseconds()
	p.mu.Unlock()
	p.pauses.Add(1)
	p.out.AudioPause(t.id, sentMs)
	return true
}

// resume carries on with t's audio where it paused. It reports false
// when t is no longer paused (it was cut meanwhile).
func (p *Pipeline) resume(t *turn) bool {
	p.mu.Lock()
	if !t.paused || t.cut {
		p.mu.Unlock()
		return false
	}
	now := p.cfg.Now()
	t.paused = false
	// A paused client played nothing: the time since the last mark
	// counts from the resume (or, for a mark before the pause, less the
	// pause).
	switch {
	case t.markAt.IsZero():
	case t.markAt.Before(t.pausedAt):
		t.markAt = t.markAt.Add(now.Sub(t.pausedAt))
	default:
		t.markAt = now
	}
	p.pacer.Resume()
	sentMs := int64(t.sent) * audio.FrameDuration.Milliseconds()
	p.mu.Unlock()
	p.out.AudioResume(t.id, sentMs)
	return true
}

// isPaused reports whether t is paused.
func (p *Pipeline) isPaused(t *turn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.paused
}

// TurnDone forwards the finished turn and forgets its audio state.
func (p *Pipeline) TurnDone(turnID, text string, interrupted bool) {
	p.mu.Lock()
	if t, ok := p.turns[turnID]; ok {
		p.forgetLocked(t)
	}
	p.mu.Unlock()
	p.out.TurnDone(turnID, text, interrupted)
}

// Transcript forwards a transcript line.
func (p *Pipeline) Transcript(role, text, turnID string, final bool) {
	p.out.Transcript(role, text, turnID, final)
}

// Ended forwards the call's end.
func (p *Pipeline) Ended(outcome call.Outcome, reason string) { p.out.Ended(outcome, reason) }

// Expect sets the hints for the caller's next utterance.
func (p *Pipeline) Expect(answers []string) {
	p.mu.Lock()
	p.hints, p.hintsDirty = answers, true
	p.mu.Unlock()
}

var (
	_ conversation.Output   = (*Pipeline)(nil)
	_ conversation.Speaker  = (*Pipeline)(nil)
	_ conversation.Expecter = (*Pipeline)(nil)
)

// --- the pacer's side ---

// send is the pacer's send: it strips the tag, announces a turn's first
// frame and its end, and hands the audio to the transport. Frames of a cut
// turn (one may be in flight across a Clear) are dropped.
func (p *Pipeline) send(b []byte) error {
	flags, idx, payload := b[0], binary.BigEndian.Uint32(b[1:tagLen]), b[tagLen:]
	now := p.cfg.Now()
	p.mu.Lock()
	t := p.byIdx[idx]
	if t == nil || t.cut || t.ended {
		p.mu.Unlock()
		return nil
	}
	first := flags&tagFirst != 0
	end := flags&tagEnd != 0
	if first {
		t.bd = breakdownLocked(t, now)
	}
	if end {
		t.ended = true
		if p.playing == t {
			p.playing = nil
		}
	} else {
		t.sent++
	}
	bd := t.bd
	p.mu.Unlock()
	if first {
		p.out.AudioStart(t.id)
		if bd != nil && p.cfg.Observer != nil {
			p.cfg.Observer.Turn(*bd)
		}
	}
	if len(payload) > 0 {
		if err := p.out.Audio(payload); err != nil {
			return err
		}
		if p.recDec != nil {
			pcm, _ := p.recDec.Write(payload) // Out was validated in New
			for _, f := range pcm {
				p.cfg.Recorder.Assistant(f)
			}
		}
	}
	if end {
		p.out.AudioDone(t.id)
		p.note(note{t: t, played: true})
	}
	return nil
}

// note hands a turn event to listen.
func (p *Pipeline) note(n note) {
	select {
	case p.notes <- n:
	case <-p.quit:
	}
}
