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
	case <-it.t.ctx.Done():
	case <-p.quit:
	}
	return false
}

// speak is the synthesis goroutine: sentence by sentence, in order, into
// the pacer, never more than two-thirds of the pacer's capacity ahead of
// real time so that a barge-in's Clear takes back everything unheard.
func (p *Pipeline) speak(ctx context.Context) {
	enc := audio.NewEncoder(p.cfg.Out)
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
		if err := p.synthesize(ctx, it.t, it.text, enc, opts); err != nil {
			enc.Reset()
			if ctx.Err() != nil || it.t.ctx.Err() != nil {
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
	defer context.AfterFunc(t.ctx, cancel)()
	p.mu.Lock()
	if t.cut {
		p.mu.Unlock()
		return errTurnCut
	}
	if t.synthStart.IsZero() {
		t.synthStart = p.cfg.Now()
	}
	t.sentences = append(t.sentences, sentence{text: text, from: t.queued})
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
	_ = p.push(ctx, t, nil, tagEnd)
}

// push queues one frame of t in the pacer, waiting for room.
func (p *Pipeline) push(ctx context.Context, t *turn, payload []byte, flags byte) error {
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
		case <-t.ctx.Done():
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
	if p.pacer.Push(tagged(flags, t.idx, payload)) {
		p.log.Warn("assistant audio dropped: the pacer overflowed")
	}
	return nil
}

// sentence boundaries: terminal punctuation followed by a space, except
// after these abbreviations.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "vs": true, "jr": true, "sr": true,
	"e.g": true, "i.e": true, "etc": true, "no": true, "approx": true,
}

// maxClause is the length past which a sentence without an end is cut at
// its last comma, so a long first sentence does not hold back the voice.
const maxClause = 160

// cutSentences splits the whole sentences off the front of text, for
// speaking as soon as each is complete, and returns the rest.
func cutSentences(text string) (sentences []string, rest string) {
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == '\n' || ((c == '.' || c == '!' || c == '?' || c == ';' || c == ':') && i+1 < len(text) && text[i+1] == ' ') {
			if c == '.' && abbreviations[strings.ToLower(lastWord(text[start:i]))] {
				continue
			}
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				sentences = append(sentences, s)
			}
			start = i + 1
		}
	}
	rest = text[start:]
	if len(rest) > maxClause {
		if j := strings.LastIndex(rest[:maxClause], ", "); j > 0 {
			sentences = append(sentences, strings.TrimSpace(rest[:j+1]))
			rest = rest[j+1:]
		}
	}
	return sentences, rest
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
