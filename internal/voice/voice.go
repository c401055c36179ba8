// Package voice is the audio pipeline of a call: the one place where the
// chain from the caller's audio to the assistant's audio is assembled.
//
//	transport in → audio.Decoder → vad.Endpointer → speech-to-text
//	  → conversation engine (text in, streaming text out)
//	  → sentence splitter → text-to-speech → audio.Encoder → audio.Pacer → transport out
//
// A Pipeline sits between a transport (the web gateway, the sandbox phone
// network, later SIP and Twilio) and the conversation engine, which it
// feeds Inputs and whose Output it is: it implements conversation.Output,
// conversation.Speaker (the engine finishes a turn only once it has been
// heard) and conversation.Expecter (a flow's expected answers become the
// recognizer's hints).
//
// Goroutines: Run owns three — listen (frames and transcripts: voice
// activity, endpointing, barge-in), speak (text-to-speech, sentence by
// sentence) and the pacer — plus whatever the speech-to-text stream runs;
// all of them stop before Run returns. Every channel between them is
// bounded; caller audio drops oldest when listen falls behind, and counts.
package voice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/audio/vad"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
	"switchboard/internal/speech"
)

// Output is what a transport gives a voice call: the engine's text events
// (conversation.Output) plus the audio events and the audio itself.
// Methods other than Audio are called from the pipeline's and the engine's
// goroutines and must not block for long; Audio is called only from the
// pacer's goroutine, one 20 ms frame at a time, in real time.
type Output interface {
	conversation.Output
	SpeechStarted()
	SpeechStopped()
	AudioStart(turnID string)
	AudioDone(turnID string)
	AudioClear(turnID string, playedMs int64)
	// AudioPause and AudioResume say that the assistant's audio paused for
	// the caller's speech and resumed (the web gateway sends
	// assistant.audio.pause and assistant.audio.resume), so that a client
	// that buffers audio stops playing it at once too. playedMs is how
	// much of the turn's audio had been sent. The pipeline stops sending
	// frames either way; a transport that buffers nothing past the pacer
	// (a phone line) has nothing to do. A pause ends in AudioResume or in
	// AudioClear (the turn was cut).
	AudioPause(turnID string, playedMs int64)
	AudioResume(turnID string, playedMs int64)
	// Audio sends one encoded frame (the Config.Out format). An error ends
	// the pacer: the transport is gone.
	Audio(frame []byte) error
}

// Config is one call's pipeline.
type Config struct {
	// In and Out are the transport's audio formats.
	In, Out audio.Format
	// Transcriber and Synthesizer are the call's engines (wrapped with
	// their fallbacks by the caller, if any).
	Transcriber speech.Transcriber
	Synthesizer speech.Synthesizer
	// Transcribe and Voice carry language, model and voice id; the
	// pipeline sets the sample rates.
	Transcribe speech.TranscribeOptions
	Voice      speech.VoiceOptions
	// Endpointing and BargeIn tune the turn-taking (zero values: defaults).
	Endpointing     vad.Config
	BargeIn         vad.BargeIn
	BargeInDisabled bool
	// Detector classifies frames as speech; nil means the WebRTC VAD in
	// mode 2.
	Detector vad.Detector
	// Input hands an input to the conversation engine; it may block while
	// the engine is busy and returns false once the engine is gone.
	Input func(conversation.Input) bool
	// PacerCapacity bounds the assistant audio queued ahead of real time,
	// in frames (default 150: 3 s). Speech synthesis waits while the
	// queue is two-thirds full.
	PacerCapacity int
	// Clock paces outbound audio (tests may fake it); nil means the system clock.
	Clock audio.Clock
	// Now stamps events (default time.Now).
	Now func() time.Time
	Log *slog.Logger
	// Observer, when set, is told of each call's turns, barge-ins and end
	// (the server's metrics). Its methods must be cheap and not block.
	Observer Observer
	// Recorder, when set, hears both sides of the call (the call's
	// recording, internal/recording).
	Recorder Recorder
}

// Recorder hears both sides of a call, one 20 ms frame of PCM16 at
// audio.PipelineRate at a time: Caller each frame of the caller's audio as
// it arrives (from Write's goroutine), Assistant each frame of the
// assistant's as the pacer sends it (decoded back from the Out format: what
// the caller heard). The caller's frames also go on to the recognizer: a
// Recorder copies what it keeps and changes nothing. Its methods must not
// block.
type Recorder interface {
	Caller(pcm []int16)
	Assistant(pcm []int16)
}

// Observer watches voice calls, for metrics.
type Observer interface {
	// Turn: a reply's first audio went out; b is its latency breakdown.
	Turn(b call.Breakdown)
	// BargeIn: the caller interrupted the assistant's audio.
	BargeIn()
	// Ended: the call's pipeline stopped; s is its final counters.
	Ended(s Stats)
}

// framesBuffer bounds the decoded caller audio waiting for listen: 1 s.
const framesBuffer = 50

// Pipeline is one call's running audio chain. Make it with New, run it
// with Run; Write, Mark and the conversation.Output methods may be called
// before and while it runs.
type Pipeline struct {
	cfg Config
	out Output
	log *slog.Logger

	dec    *audio.Decoder // owned by the transport's reader (Write)
	recDec *audio.Decoder // the pacer's: sent frames back to PCM for the Recorder
	frames chan frame     // decoded caller audio, drop-oldest
	notes  chan note      // pacer → listen: a turn's audio was played out
	speakQ chan speakItem // engine → speak: sentences and turn ends
	pacer  *audio.Pacer
	sttHz  int

	mu         sync.Mutex
	turns      map[string]*turn
	byIdx      map[uint32]*turn
	nextIdx    uint32
	playing    *turn        // the turn whose audio is queued or sounding
	measure    *measurement // the caller's last forwarded utterance, for the next turn
	hints      []string     // expected answers, for the next utterance
	hintsDirty bool
	failed     bool // the voice path failed: nothing more is spoken
	// paceFrames / paceWords is the voice's pace on this call: the frames
	// and words of every sentence synthesized so far.
	paceFrames, paceWords int

	dropped atomic.Uint64 // caller frames dropped because listen fell behind
	// utterancesDropped counts the caller's utterances speech-to-text
	// failed (speech.Transcript.Dropped).
	utterancesDropped atomic.Uint64
	bargeIns          atomic.Uint64
	pauses            atomic.Uint64
	// decDropped is the decoder's own drop count, published by Write.
	decDropped atomic.Uint64
	running    atomic.Bool
	// noBargeIn turns barge-in off for the rest of the call (DisableBargeIn).
	noBargeIn atomic.Bool
	bg        sync.WaitGroup // fail's hand-off to the engine; Run waits for it
	quit      chan struct{}  // closed when Run's context is done or Run returns
	quitOnce  sync.Once
}

// frame is one 20 ms pipeline frame of caller audio and when it arrived.
type frame struct {
	pcm []int16
	at  time.Time
}

// note is a turn event from the pacer's goroutine to listen's.
type note struct {
	t      *turn
	played bool // the whole turn was played (else: its first frame went out)
}

// New checks cfg and returns a pipeline ready to Run.
func New(cfg Config, out Output) (*Pipeline, error) {
	if err := cfg.In.Validate(); err != nil {
		return nil, fmt.Errorf("voice: input format: %w", err)
	}
	if err := cfg.Out.Validate(); err != nil {
		return nil, fmt.Errorf("voice: output format: %w", err)
	}
	if cfg.Transcriber == nil || cfg.Synthesizer == nil || cfg.Input == nil {
		return nil, errors.New("voice: Config needs a Transcriber, a Synthesizer and Input")
	}
	if err := cfg.Endpointing.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.BargeIn.Validate(); err != nil {
		return nil, err
	}
	if cfg.Detector == nil {
		d, err := vad.NewWebRTC(2)
		if err != nil {
			return nil, err
		}
		cfg.Detector = d
	}
	if cfg.PacerCapacity <= 0 {
		cfg.PacerCapacity = 150
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	p := &Pipeline{
		cfg:    cfg,
		out:    out,
		log:    cfg.Log,
		dec:    audio.NewDecoder(cfg.In),
		frames: make(chan frame, framesBuffer),
		notes:  make(chan note, 16),
		speakQ: make(chan speakItem, 64),
		turns:  map[string]*turn{},
		byIdx:  map[uint32]*turn{},
		quit:   make(chan struct{}),
		// A phone line's 8 kHz audio is recognized at 8 kHz: the engines
		// have models (and the local one a cepstral prior) for it, and
		// upsampled narrowband audio would only look like bad wideband.
		sttHz: map[bool]int{true: 8000, false: 16000}[cfg.In.SampleRate == 8000],
	}
	p.pacer = audio.NewPacer(cfg.PacerCapacity, p.send, cfg.Clock)
	if cfg.Recorder != nil {
		p.recDec = audio.NewDecoder(cfg.Out)
	}
	return p, nil
}

// Write takes caller audio from the transport, any number of bytes of the
// In format. It never blocks: when listen falls a second behind, the
// oldest frames are dropped and counted. Only one goroutine may call it.
func (p *Pipeline) Write(b []byte) error {
	frames, err := p.dec.Write(b)
	if err != nil {
		return err
	}
	p.decDropped.Store(p.dec.Dropped()) // the decoder is the writer's; Stats reads this
	now := p.cfg.Now()
	for _, f := range frames {
		if p.cfg.Recorder != nil {
			p.cfg.Recorder.Caller(f)
		}
		fr := frame{pcm: f, at: now}
		select {
		case p.frames <- fr:
			continue
		default:
		}
		select { // full: drop the oldest, then queue
		case <-p.frames:
			p.dropped.Add(1)
		default:
		}
		select {
		case p.frames <- fr:
		default:
			p.dropped.Add(1)
		}
	}
	return nil
}

// Stats are a call's audio counters.
type Stats struct {
	DroppedIn uint64 // caller frames dropped (decoder backlog + listen behind)
	BargeIns  uint64 // times the caller interrupted the assistant's audio
	// Pauses is how many times the assistant's audio paused for the
	// caller's speech; each ended in a resume (a backchannel, noise) or in
	// one of the BargeIns.
	Pauses uint64
	// UtterancesDropped is how many of the caller's utterances
	// speech-to-text failed (no final in time, or its stream broke): each
	// was lost, and the assistant asked the caller to say it again unless
	// it was speaking.
	UtterancesDropped uint64
	Pacer             audio.PacerStats
}

// Stats returns the call's audio counters.
func (p *Pipeline) Stats() Stats {
	return Stats{DroppedIn: p.dropped.Load() + p.decDropped.Load(), BargeIns: p.bargeIns.Load(), Pauses: p.pauses.Load(),
		UtterancesDropped: p.utterancesDropped.Load(), Pacer: p.pacer.Stats()}
}

// Jitter is the outbound frames' lateness against their real-time
// schedule, p50 and p99.
func (p *Pipeline) Jitter() (p50, p99 time.Duration) { return p.pacer.Jitter() }

// Run runs the pipeline until ctx is done or the transport fails, and
// returns when every goroutine it started has stopped. A transcriber that
// cannot start fails the call (transcriber-failed) at once.
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("voice: Run called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopQuit := context.AfterFunc(ctx, p.stop)
	defer stopQuit()
	defer p.stop()

	opts := p.cfg.Transcribe
	opts.SampleRate = p.sttHz
	p.mu.Lock()
	opts.Hints, p.hintsDirty = p.hints, false
	p.mu.Unlock()
	stt, err := p.cfg.Transcriber.Start(ctx, opts)
	if err != nil {
		p.log.Error("speech-to-text did not start; ending the call", "provider", p.cfg.Transcriber.Name(), "err", err)
		p.fail(call.ReasonTranscriberFailed)
		p.bg.Wait()
		return err
	}
	defer stt.Close()

	var wg sync.WaitGroup
	var pacerErr error
	wg.Go(func() {
		if err := p.pacer.Run(ctx); err != nil && ctx.Err() == nil {
			pacerErr = err
			p.log.Debug("outbound audio stopped: the transport failed", "err", err)
			cancel()
		}
	})
	wg.Go(func() { p.speak(ctx) })
	wg.Go(func() { p.listen(ctx, stt) })
	wg.Wait()
	p.release()
	p.bg.Wait()
	if p.cfg.Observer != nil {
		p.cfg.Observer.Ended(p.Stats())
	}
	return pacerErr
}

// DisableBargeIn turns barge-in off for the rest of the call, as
// bargeIn.disabled does from the start: what the caller says over the
// assistant waits until it has finished (a message left on a machine,
// which the greeting's late transcript must not cut).
func (p *Pipeline) DisableBargeIn() { p.noBargeIn.Store(true) }

func (p *Pipeline) bargeInOff() bool { return p.cfg.BargeInDisabled || p.noBargeIn.Load() }

// stop releases every wait on the pipeline's goroutines.
func (p *Pipeline) stop() { p.quitOnce.Do(func() { close(p.quit) }) }

// release resolves the turns the engine may still be waiting on when Run
// ends early (the transport failed while the call goes on): each is
// reported cut where its audio stopped, so the engine never waits for a
// Played that cannot come.
func (p *Pipeline) release() {
	p.mu.Lock()
	var cut []conversation.Input
	for _, t := range p.turns {
		if t.textDone && !t.ended && !t.cut {
			heard, _ := p.heardLocked(t)
			t.cut = true
			t.stopLocked()
			cut = append(cut, conversation.Input{Kind: conversation.Interrupt, TurnID: t.id, Text: heard, Breakdown: t.bd})
		}
	}
	p.failed = true
	p.mu.Unlock()
	for _, in := range cut {
		p.bg.Go(func() { p.cfg.Input(in) })
	}
}

// stopped reports whether Run has ended (or its context is done). Before
// Run starts the pipeline is not stopped: what the engine says meanwhile
// waits in the speak queue.
func (p *Pipeline) stopped() bool {
	select {
	case <-p.quit:
		return true
	default:
		return false
	}
}

// fail ends the call on a voice-path failure (providers and fallbacks gave
// out): nothing more is spoken, and the engine ends the call with reason.
func (p *Pipeline) fail(reason string) {
	p.mu.Lock()
	already := p.failed
	p.failed = true
	p.mu.Unlock()
	if !already {
		// The engine may be busy; no pipeline goroutine waits for it.
		p.bg.Go(func() { p.cfg.Input(conversation.Input{Kind: conversation.Fail, Reason: reason}) })
	}
}

// Voices gives a call its speech engines: the assistant's transcriber and
// voice, wrapped with their fallbacks. The app implements it over the
// engines this server has; an error says which the assistant needs and the
// server lacks.
type Voices interface {
	For(a assistant.Assistant) (speech.Transcriber, speech.Synthesizer, error)
}

// Settings fills the assistant's turn-taking and speech settings into cfg.
func Settings(cfg Config, a assistant.Assistant) Config {
	e := a.Endpointing
	cfg.Endpointing = vad.Config{SilenceMs: e.SilenceMs, MinSpeechMs: e.MinSpeechMs, MaxWaitMs: e.MaxWaitMs, FastSilenceMs: e.FastSilenceMs}
	cfg.BargeIn = vad.BargeIn{MinSpeechMs: a.BargeIn.MinSpeechMs}
	cfg.BargeInDisabled = a.BargeIn.Disabled
	lang := a.Transcriber.Language
	if lang == "" {
		lang = a.Language
	}
	cfg.Transcribe = speech.TranscribeOptions{Language: lang, Model: a.Transcriber.Model}
	cfg.Voice = speech.VoiceOptions{Voice: a.Voice.VoiceID, Language: a.Language}
	return cfg
}
