package app

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/speech"
	"switchboard/internal/voice"
)

// phoneLine is the sandbox network's line format: G.711 μ-law at 8 kHz.
var phoneLine = audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}

// speak runs a sandbox call as an audio call: the assistant's pipeline on
// one end of an 8 kHz μ-law line and, on the other, the persona, which
// hears the assistant through local speech-to-text and answers through
// local text-to-speech — the whole voice path, offline. It returns an
// error (and runs nothing) when the engines it needs are missing.
func (p *phoneConversations) speak(ctx context.Context, cfg conversation.Config, line *personaLine) error {
	stt, tts, err := voices{p.voices, p.log}.For(cfg.Assistant)
	if err != nil {
		return err
	}
	earSTT, ok1 := p.voices.Transcriber("local")
	mouth, ok2 := p.voices.Synthesizer("local")
	if !ok1 || !ok2 {
		return errors.New("the sandbox persona needs the local speech engines")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ear, err := earSTT.Start(ctx, speech.TranscribeOptions{SampleRate: phoneLine.SampleRate, Language: "en-US"})
	if err != nil {
		return err
	}
	defer ear.Close()
	callee := &callee{line: line, ear: ear, mouth: mouth, speech: make(chan []byte, 4), log: p.log.With("call_id", cfg.Call.ID)}
	pipe, err := voice.New(voice.Settings(voice.Config{
		In: phoneLine, Out: phoneLine, Transcriber: stt, Synthesizer: tts,
		Input:    line.deliver,
		Log:      p.log.With("call_id", cfg.Call.ID),
		Observer: p.observer,
	}, cfg.Assistant), callee)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = pipe.Run(ctx) })
	wg.Go(func() { callee.listen(ctx) })
	wg.Go(func() { callee.talk(ctx, pipe) })
	conversation.Run(ctx, cfg, line.in, pipe)
	return nil
}

// deliver hands the pipeline's input to the conversation (voice.Config.Input).
func (l *personaLine) deliver(in conversation.Input) bool {
	select {
	case l.in <- in:
		return true
	case <-l.stop:
		return false
	}
}

// callee is the persona's end of an audio line: its ear (speech-to-text
// of the assistant's audio) and its mouth (text-to-speech into the line,
// in real time). It is the pipeline's voice.Output.
type callee struct {
	line   *personaLine
	ear    speech.TranscribeStream
	mouth  speech.Synthesizer
	speech chan []byte // μ-law utterances to say, bounded
	log    interface {
		Debug(string, ...any)
		Warn(string, ...any)
	}

	mu     sync.Mutex
	heard  bool // assistant audio since the last Finish
	hangup bool // say the last utterance, then hang up
}

// --- voice.Output: what the line carries from the assistant ---

func (c *callee) Delta(string, string)                    {}
func (c *callee) TurnDone(string, string, bool)           {}
func (c *callee) Transcript(string, string, string, bool) {}
func (c *callee) Ended(call.Outcome, string)              { c.line.close() }
func (c *callee) SpeechStarted()                          {}
func (c *callee) SpeechStopped()                          {}
func (c *callee) AudioStart(string)                       {}
func (c *callee) AudioDone(string)                        { c.endOfTurn() }
func (c *callee) AudioClear(string, int64)                { c.endOfTurn() }

// Audio is what the persona hears.
func (c *callee) Audio(frame []byte) error {
	c.mu.Lock()
	c.heard = true
	c.mu.Unlock()
	if err := c.ear.Write(audio.MulawDecode(nil, frame)); err != nil {
		// A deaf persona is still on the line: the assistant's audio
		// keeps flowing (and its turns end) whatever the ear does.
		c.log.Debug("sandbox persona's ear", "err", err)
	}
	return nil
}

// endOfTurn: the assistant stopped talking; the ear's final follows.
func (c *callee) endOfTurn() {
	c.mu.Lock()
	heard := c.heard
	c.heard = false
	c.mu.Unlock()
	if heard {
		if err := c.ear.Finish(); err != nil {
			c.log.Debug("sandbox persona's ear", "err", err)
		}
	}
}

// listen turns what the persona heard into its answers.
func (c *callee) listen(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case tr, ok := <-c.ear.Results():
			if !ok {
				return
			}
			if !tr.Final {
				continue
			}
			say, hangup := c.line.persona.Hear(tr.Text)
			c.log.Debug("sandbox persona", "heard", tr.Text, "says", say, "hangup", hangup)
			if say == "" && hangup {
				c.line.deliver(conversation.Input{Kind: conversation.Hangup})
				continue
			}
			if say == "" {
				continue
			}
			var ulaw []byte
			err := c.mouth.Synthesize(ctx, say, speech.VoiceOptions{SampleRate: phoneLine.SampleRate}, func(pcm []int16) error {
				ulaw = audio.MulawEncode(ulaw, pcm)
				return nil
			})
			if err != nil {
				c.log.Warn("sandbox persona could not speak", "err", err)
				continue
			}
			c.mu.Lock()
			c.hangup = c.hangup || hangup
			c.mu.Unlock()
			select {
			case c.speech <- ulaw:
			case <-ctx.Done():
				return
			}
		}
	}
}

// silenceMulaw is 20 ms of μ-law silence.
var silenceMulaw = []byte(strings.Repeat("\xff", 160))

// talk is the persona's microphone: its speech when it has something to
// say, line silence otherwise (the assistant's endpointing needs the
// silence to hear the end of a turn); half a second after its goodbye it
// hangs up.
func (c *callee) talk(ctx context.Context, pipe *voice.Pipeline) {
	microphone(ctx, c.speech, silenceMulaw, pipe.Write, func(idle int) {
		c.mu.Lock()
		hang := c.hangup && idle == 25
		c.mu.Unlock()
		if hang {
			c.line.deliver(conversation.Input{Kind: conversation.Hangup})
		}
	})
}

// microphone sends one frame (len(silence) bytes) every 20 ms, in real
// time, until ctx is done or write fails: the next utterance from speech
// when there is one, else silence. idle, if set, is told how many frames
// of silence have followed the last utterance.
func microphone(ctx context.Context, speech <-chan []byte, silence []byte, write func([]byte) error, idle func(frames int)) {
	tick := time.NewTicker(audio.FrameDuration)
	defer tick.Stop()
	var cur []byte
	quiet := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if len(cur) == 0 {
			select {
			case cur = <-speech:
				quiet = 0
			default:
			}
		}
		frame := silence
		if len(cur) > 0 {
			n := min(len(cur), len(silence))
			frame = append(cur[:n:n], silence[n:]...)
			cur = cur[n:]
		} else if quiet++; idle != nil {
			idle(quiet)
		}
		if err := write(frame); err != nil {
			return
		}
	}
}
