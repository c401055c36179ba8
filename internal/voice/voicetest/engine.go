package voicetest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/internal/call"
	"switchboard/internal/conversation"
)

// Brain is a scripted conversation.Brain with a model's habits: it streams
// its replies word by word after FirstToken of latency, keeps a history
// that a barge-in truncates (conversation.Truncater), and may expect
// answers (conversation.Expectant).
type Brain struct {
	// Opening is what it says first ("" waits for the caller).
	Opening string
	// Replies maps caller text to the reply; others get Default.
	Replies map[string]string
	Default string
	// Ends lists caller texts whose reply ends the call.
	Ends []string
	// FirstToken is the latency before the first word of every reply.
	FirstToken time.Duration
	// Linger keeps Respond from returning this long after its last word,
	// ignoring cancellation (a model client that is still reading the end
	// of its stream).
	Linger time.Duration
	// Expect is what it expects the caller to say next.
	Expect []string

	mu    sync.Mutex
	asked []string
	heard []string
	said  []string
}

// Open implements conversation.Brain.
func (b *Brain) Open(ctx context.Context, emit func(string)) (conversation.Reply, error) {
	return b.stream(ctx, b.Opening, false, emit)
}

// Respond implements conversation.Brain.
func (b *Brain) Respond(ctx context.Context, text string, emit func(string)) (conversation.Reply, error) {
	b.mu.Lock()
	b.asked = append(b.asked, text)
	b.mu.Unlock()
	reply, ok := b.Replies[text]
	if !ok {
		reply = b.Default
	}
	return b.stream(ctx, reply, slices.Contains(b.Ends, text), emit)
}

func (b *Brain) stream(ctx context.Context, text string, end bool, emit func(string)) (conversation.Reply, error) {
	if text == "" {
		return conversation.Reply{End: end}, nil
	}
	if !sleep(b.FirstToken, ctx.Done()) {
		return conversation.Reply{}, ctx.Err()
	}
	for _, w := range strings.SplitAfter(text, " ") {
		if err := ctx.Err(); err != nil {
			return conversation.Reply{}, err
		}
		emit(w)
	}
	if b.Linger > 0 {
		time.Sleep(b.Linger)
	}
	return conversation.Reply{Text: text, End: end}, nil
}

// Said implements conversation.Brain.
func (b *Brain) Said(text string) {
	b.mu.Lock()
	b.said = append(b.said, text)
	b.mu.Unlock()
}

// Heard implements conversation.Truncater.
func (b *Brain) Heard(text string) {
	b.mu.Lock()
	b.heard = append(b.heard, text)
	b.mu.Unlock()
}

// Expected implements conversation.Expectant.
func (b *Brain) Expected() []string { return b.Expect }

// Result implements conversation.Brain.
func (b *Brain) Result() call.Result { return call.Result{} }

// Asked returns the caller texts it was asked to answer.
func (b *Brain) Asked() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.asked)
}

// HeardTexts returns what it was told the caller heard of its cut replies.
func (b *Brain) HeardTexts() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.heard)
}

var (
	_ conversation.Brain     = (*Brain)(nil)
	_ conversation.Truncater = (*Brain)(nil)
	_ conversation.Expectant = (*Brain)(nil)
)

// Store is a conversation.TurnStore and conversation.Ender in memory.
type Store struct {
	// OnTurn, if set, sees every turn as it is stored (benchmarks).
	OnTurn func(call.Turn)
	// Discard drops turns after OnTurn instead of keeping them (benchmarks).
	Discard bool

	mu      sync.Mutex
	turns   []call.Turn
	outcome call.Outcome
	reason  string
}

// AppendTurn implements conversation.TurnStore.
func (s *Store) AppendTurn(ctx context.Context, t call.Turn) error {
	if s.OnTurn != nil {
		s.OnTurn(t)
	}
	if s.Discard {
		return nil
	}
	s.mu.Lock()
	s.turns = append(s.turns, t)
	s.mu.Unlock()
	return nil
}

// End implements conversation.Ender.
func (s *Store) End(ctx context.Context, callID string, outcome call.Outcome, reason string, result call.Result) (call.Call, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcome, s.reason = outcome, reason
	return call.Call{ID: callID, Outcome: outcome, EndedReason: reason}, nil
}

// Turns returns the stored turns.
func (s *Store) Turns() []call.Turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.turns)
}

// Ended returns how the call ended ("" while it runs).
func (s *Store) Ended() (call.Outcome, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcome, s.reason
}
