package voice

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/speech"
)

// speakItem is one piece of work for speak: a sentence of turn t, or its end.
type speakItem struct {
	t    *turn
	text string
	end  bool
}

// errTurnCut stops a synthesis whose turn was cut.
var errTurnCut = errors.New("voice: turn cut")

// enqueue hands an item to speak, waiting while speak is a queue behind
// (backpressure on the reply's stream, never on the engine's loop). It
// reports false when the pipeline stopped or the turn was cut meanwhile.
func (p *Pipeline) enqueue(it speakItem) bool {
	select {
	case p.speakQ <- it:
		return true
	case <-it.t.stopped:
	case <-p.quit:
	}
	return false
}

// speak is the synthesis goroutine: sentence by sentence, in order, into
// the pacer, never more than two-thirds of the pacer's capacity ahead of
// real time so that a barge-in's Clear takes back everything unheard.
func (p *Pipeline) speak(ctx context.Context) {
	enc := audio.NewEncoder(p.cfg.Out)
	enc.Headroom = tagLen // room for push's tag in front of each frame
	opts := p.cfg.Voice
	opts.SampleRate = audio.PipelineRate
	for {
		var it speakItem
		select {
		case <-ctx.Done():
			return
		case it = <-p.speakQ:
		}
		if it.end {
			p.pushEnd(ctx, it.t)
			continue
		}
		p.mu.Lock()
		failed := p.failed
		p.mu.Unlock()
		if failed { // the call is ending voice-failed: say nothing more
			continue
		}
		if err := p.synthesize(ctx, it.t, it.text, enc, opts); err != nil {
			enc.Reset()
			if ctx.Err() != nil || it.t.isStopped() {
				continue // cut, or the call is over
			}
			p.log.Error("text-to-speech failed; ending the call", "provider", p.cfg.Synthesizer.Name(), "err", err)
			p.fail(call.ReasonVoiceFailed)
		}
	}
}

// synthesize speaks one sentence of t.
func (p *Pipeline) synthesize(ctx context.Context, t *turn, text string, enc *audio.Encoder, opts speech.VoiceOptions) error {
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	if t.cut || t.isStopped() {
		p.mu.Unlock()
		return errTurnCut
	}
	t.synthCancel = cancel // a cut cancels tctx
	defer func() {
		p.mu.Lock()
		t.synthCancel = nil
		p.mu.Unlock()
	}()
	if t.synthStart.IsZero() {
		t.synthStart = p.cfg.Now()
	}
	t.sentences = append(t.sentences, sentence{text: text, from: t.queued, to: -1})
	cur := len(t.sentences) - 1
	p.mu.Unlock()
	err := p.cfg.Synthesizer.Synthesize(tctx, text, opts, func(pcm []int16) error {
		p.mu.Lock()
		if t.firstAudio.IsZero() && len(pcm) > 0 {
			t.firstAudio = p.cfg.Now()
		}
		p.mu.Unlock()
		for _, f := range enc.Encode(pcm) {
			if err := p.push(tctx, t, f, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && tctx.Err() != nil {
		err = tctx.Err()
	}
	if err != nil {
		return err
	}
	for _, f := range enc.Flush() {
		if err := p.push(tctx, t, f, 0); err != nil {
			return err
		}
	}
	p.mu.Lock()
	t.sentences[cur].to = t.queued
	p.paceFrames += t.queued - t.sentences[cur].from
	p.paceWords += len(strings.Fields(text))
	p.mu.Unlock()
	return nil
}

// pushEnd queues t's end marker; a turn that made no sound is played at once.
func (p *Pipeline) pushEnd(ctx context.Context, t *turn) {
	p.mu.Lock()
	silent := t.queued == 0 && !t.cut
	if silent {
		t.ended = true
	}
	p.mu.Unlock()
	if silent {
		p.note(note{t: t, played: true})
		return
	}
	_ = p.push(ctx, t, make([]byte, tagLen), tagEnd)
}

// push queues one frame of t in the pacer, waiting for room. frame's
// first tagLen bytes are free for its tag; the audio follows.
func (p *Pipeline) push(ctx context.Context, t *turn, frame []byte, flags byte) error {
	high := max(p.cfg.PacerCapacity*2/3, 1)
	var wait *time.Timer
	for p.pacer.Stats().Queued >= high {
		if wait == nil {
			wait = time.NewTimer(audio.FrameDuration / 2)
			defer wait.Stop()
		} else {
			wait.Reset(audio.FrameDuration / 2)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.stopped:
			return errTurnCut
		case <-wait.C:
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if t.cut || t.ended {
		return errTurnCut
	}
	if flags&tagEnd == 0 {
		if t.queued == 0 {
			flags |= tagFirst
		}
		t.queued++
	}
	p.playing = t
	if p.pacer.Push(tag(frame, flags, t.idx)) {
		p.log.Warn("assistant audio dropped: the pacer overflowed")
	}
	return nil
}

// sentence boundaries: terminal punctuation followed by a space, except
// after these abbreviations.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "vs": true, "jr": true, "sr": true,
	"e.g": true, "i.e": true, "etc": true, "approx": true,
}

// maxWords bounds what is synthesized at once: a longer sentence is cut
// (at its last comma within the bound, else after maxWords words), so a
// long first sentence does not hold back the voice, and a barge-in knows
// how far into it the caller got from pieces already measured.
const maxWords = 24

// cutSentences splits the whole sentences off the front of text, for
// speaking as soon as each is complete, and returns the rest. Pieces with
// nothing to say (a lone ".") are dropped.
func cutSentences(text string) (sentences []string, rest string) {
	start := 0
	add := func(s string) {
		if strings.IndexFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0 {
			sentences = append(sentences, chunk(s)...)
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' || ((c == '.' || c == '!' || c == '?' || c == ';' || c == ':') && i+1 < len(text) && text[i+1] == ' ') {
			if c == '.' && abbreviations[strings.ToLower(lastWord(text[start:i]))] {
				continue
			}
			add(strings.TrimSpace(text[start : i+1]))
			start = i + 1
		}
	}
	rest = text[start:]
	// An unfinished sentence already past maxWords complete words: speak
	// its first piece now.
	for {
		words := strings.Fields(rest)
		if len(words) <= maxWords || !strings.HasSuffix(rest, " ") && len(words) == maxWords+1 {
			return sentences, rest
		}
		cut := pieceEnd(rest)
		add(strings.TrimSpace(rest[:cut]))
		rest = rest[cut:]
	}
}

// chunk cuts a complete sentence into pieces of at most maxWords words.
func chunk(s string) []string {
	var out []string
	for len(strings.Fields(s)) > maxWords {
		cut := pieceEnd(s)
		out = append(out, strings.TrimSpace(s[:cut]))
		s = strings.TrimSpace(s[cut:])
	}
	return append(out, s)
}

// pieceEnd is where the first piece of s (more than maxWords words) ends:
// after its last comma within the first maxWords words, else after them.
func pieceEnd(s string) int {
	end, n, inWord := len(s), 0, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			if inWord {
				if n++; n == maxWords {
					end = i
					break
				}
			}
			inWord = false
		} else {
			inWord = true
		}
	}
	if j := strings.LastIndex(s[:end], ", "); j > 0 {
		return j + 1
	}
	return end
}

func lastWord(s string) string {
	i := strings.LastIndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) })
	return s[i+1:]
}

// endsSentence reports whether a transcript ends a sentence (engines that
// punctuate), which lets the endpointer answer faster.
func endsSentence(text string) bool {
	text = strings.TrimSpace(text)
	return text != "" && strings.ContainsRune(".?!", rune(text[len(text)-1]))
}
