package app

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/conversation"
	"switchboard/internal/store"
	"switchboard/internal/telephony/sandbox"
	"switchboard/internal/voice"
	"switchboard/internal/webhook"
)

// phoneConversations runs the conversation of every answered phone call on
// this node. On the sandbox network the other party is a persona that
// speaks text; providers with real audio plug the audio pipeline in here.
type phoneConversations struct {
	store  store.Store
	calls  *callctl.Service
	brains *conversation.Brains
	log    *slog.Logger
	think  time.Duration // the persona's pause before answering
	// voices, when set, makes sandbox calls audio calls: the persona
	// speaks and listens through the local engines at 8 kHz μ-law.
	voices *SpeechEngines
	// observer watches the sandbox's voice calls (metrics).
	observer voice.Observer
	// voiceSlots bounds the sandbox calls spoken at once: each runs two
	// local recognizers (the assistant's and the persona's ear) on shared
	// decoders, and a saturated engine would fail calls; calls past the
	// bound run as text.
	voiceSlots chan struct{}

	mu      sync.Mutex
	stopped bool // stop was called: conversations end as they start
	live    map[string]*personaLine
	wg      sync.WaitGroup
}

func newPhoneConversations(st store.Store, calls *callctl.Service, brains *conversation.Brains, log *slog.Logger, think time.Duration) *phoneConversations {
	return &phoneConversations{store: st, calls: calls, brains: brains, log: log, think: think, live: map[string]*personaLine{}}
}

// answered starts the conversation of an answered call (callctl hook).
func (p *phoneConversations) answered(c call.Call) {
	if c.Provider != "sandbox" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		// Answered during shutdown: no conversation starts, and the
		// provider, which closes after stop, ends the call system-shutdown.
		return
	}
	// The conversation's context is canceled by stop (shutdown): it then
	// ends system-shutdown.
	ctx, cancel := context.WithCancel(context.Background())
	line := &personaLine{persona: sandbox.PersonaFor(c.To), in: make(chan conversation.Input, 8), think: p.think, stop: make(chan struct{}), cancel: cancel}
	p.live[c.ID] = line
	// Started under p.mu, so that stop, which sets stopped under p.mu
	// before its Wait, always waits for this conversation.
	p.wg.Go(func() {
		defer func() {
			p.mu.Lock()
			delete(p.live, c.ID)
			p.mu.Unlock()
			line.close()
			cancel()
		}()
		p.converse(ctx, c, line)
	})
}

// converse runs the conversation of answered call c on line until it ends.
func (p *phoneConversations) converse(ctx context.Context, c call.Call, line *personaLine) {
	a, err := p.store.GetAssistant(ctx, c.OrgID, c.AssistantID)
	if err != nil {
		p.fail(ctx, c, "assistant", err)
		return
	}
	brain, err := p.brains.New(ctx, c, a)
	if err != nil {
		p.fail(ctx, c, "brain", err)
		return
	}
	cfg := conversation.Config{Call: c, Assistant: a, Brain: brain, Turns: p.store, Ender: p.calls, Log: p.log}
	if p.voices != nil {
		select {
		case p.voiceSlots <- struct{}{}:
			err := p.speak(ctx, cfg, line)
			<-p.voiceSlots
			if err == nil {
				return
			}
			p.log.Warn("sandbox call runs as text: no audio", "call_id", c.ID, "err", err)
		default:
			p.log.Info("sandbox call runs as text: the local speech engines carry their most spoken calls already",
				"call_id", c.ID, "spoken_calls", cap(p.voiceSlots))
		}
	}
	conversation.Run(ctx, cfg, line.in, line)
}

// fail ends a call whose conversation could not start because what
// failed (its assistant, its brain) failed with err: failed/model-failed,
// logged as an error. When shutdown canceled ctx meanwhile, nothing failed:
// the call ends completed/system-shutdown, as a conversation that shutdown
// cancels later does. If the end cannot be recorded either, housekeeping
// ends the call as lost later.
func (p *phoneConversations) fail(ctx context.Context, c call.Call, what string, err error) {
	outcome, reason := call.Failed, call.ReasonModelFailed
	if ctx.Err() != nil {
		outcome, reason = call.Completed, call.ReasonSystemShutdown
	} else {
		p.log.Error("conversation cannot start: "+what, "call_id", c.ID, "err", err)
	}
	if _, err := p.calls.End(context.WithoutCancel(ctx), c.ID, outcome, reason, call.Result{}); err != nil {
		p.log.Error("ending a call whose conversation cannot start failed", "call_id", c.ID, "err", err)
	}
}

// ended stops the conversation of a call that ended elsewhere (callctl hook).
func (p *phoneConversations) ended(c call.Call) {
	p.mu.Lock()
	line := p.live[c.ID]
	p.mu.Unlock()
	if line != nil {
		line.hangup()
	}
}

// stop ends every conversation on this node (each ends system-shutdown)
// and waits for them. Calls answered from now on start no conversation:
// the provider, closed after stop, ends them system-shutdown.
func (p *phoneConversations) stop() {
	p.mu.Lock()
	p.stopped = true
	for _, line := range p.live {
		line.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// personaLine connects a conversation to a sandbox persona: the persona
// hears each assistant turn and answers after a short pause.
type personaLine struct {
	persona sandbox.Persona
	in      chan conversation.Input
	think   time.Duration
	cancel  context.CancelFunc // ends the conversation (shutdown)

	mu     sync.Mutex
	stop   chan struct{}
	closed bool
	timers []*time.Timer
}

func (l *personaLine) Delta(string, string)                    {}
func (l *personaLine) Transcript(string, string, string, bool) {}
func (l *personaLine) Ended(call.Outcome, string)              { l.close() }

func (l *personaLine) TurnDone(turnID, text string, interrupted bool) {
	say, hangup := l.persona.Reply(text)
	l.later(func() {
		if say != "" {
			l.send(conversation.Input{Kind: conversation.UserText, Text: say})
		}
		if hangup {
			l.send(conversation.Input{Kind: conversation.Hangup})
		}
	})
}

// later runs fn after the persona's pause, unless the line closed.
func (l *personaLine) later(fn func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.timers = append(l.timers, time.AfterFunc(l.think, fn))
}

// send delivers an input without blocking past the line's end.
func (l *personaLine) send(in conversation.Input) {
	select {
	case l.in <- in:
	case <-l.stop:
	}
}

// hangup ends the conversation at once: the call already ended elsewhere.
func (l *personaLine) hangup() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.timers = append(l.timers, time.AfterFunc(0, func() { l.send(conversation.Input{Kind: conversation.Hangup}) }))
}

func (l *personaLine) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, t := range l.timers {
		t.Stop()
	}
	close(l.stop)
}

// toolsFor makes the HTTP tool runner of an assistant.
func toolsFor(guard webhook.Guard) func(c call.Call, a assistant.Assistant) conversation.ToolRunner {
	client := &http.Client{Transport: guard.Transport()}
	return func(c call.Call, a assistant.Assistant) conversation.ToolRunner {
		return &conversation.HTTPTools{Tools: a.Tools, Secret: a.ToolSecret, CallID: c.ID, Client: client}
	}
}
