package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/assistant"
	"switchboard/internal/call"
	"switchboard/internal/llm"
)

// Control acts on the phone line of a call: telephony.Line has both
// methods. Implementations must be safe for concurrent use: the engine
// transfers from the conversation's goroutine while a brain may send keys
// from the goroutine of its reply.
type Control interface {
	// SendDTMF plays digits (0-9, *, #, A-D) to the far party.
	SendDTMF(ctx context.Context, digits string) error
	// Transfer hands the call to destination (E.164 or a SIP URI) and
	// returns once the far side accepted; an error means the call goes on.
	Transfer(ctx context.Context, destination string) error
}

// ErrNoControl is the failure of keys and transfers on a call without a
// phone line (Config.Control is nil: web and text calls).
var ErrNoControl = errors.New("this call has no phone line: keys cannot be sent and the call cannot be transferred")

// Transfer is a transfer a reply asks for.
type Transfer struct {
	// Destination is an E.164 number or a SIP URI.
	Destination string
	// Message is said just before the transfer; empty: nothing.
	Message string
}

// Transferrer is implemented by brains whose replies may ask for a
// transfer (Reply.Transfer); the engine tells them how it went.
type Transferrer interface {
	// Transferred says the call was transferred; the call ends next.
	Transferred(destination string)
	// TransferFailed says the transfer was refused (err) and lets the
	// brain go on: a model hears err as its transferCall tool's answer, a
	// flow takes the transfer node's onError. The reply is said as usual.
	TransferFailed(ctx context.Context, err error, emit func(string)) (Reply, error)
}

// Keypad is implemented by brains that read keypad entries themselves
// (flows). The engine gathers the caller's keys into an entry and asks
// EntryComplete after each key; an entry it says is complete, or that a
// pause of Config.InterDigitTimeout ends, goes to Keys. The caller's words
// also end an entry in progress. Brains that are not Keypads get an entry
// as the caller's turn KeypadText(entry), ended by '#' or the pause.
type Keypad interface {
	EntryComplete(keys string) bool
	Keys(ctx context.Context, entry string, emit func(string)) (Reply, error)
}

// controlled is implemented by this package's brains: Run hands them the
// call's Control (nil when the call has no phone line).
type controlled interface {
	useControl(c Control)
}

// Keypad entries.
const (
	// MaxKeypadEntry bounds a keypad entry; the engine ends it there.
	MaxKeypadEntry = 32
	// DefaultInterDigitTimeout is the pause that ends a keypad entry: the
	// default of Vapi's keypadInputPlan and of pipecat's DTMF aggregator.
	DefaultInterDigitTimeout = 2 * time.Second
	// keypadPrefix starts the caller turn of a keypad entry.
	keypadPrefix = "Keypad entry: "
)

// KeypadText is how a keypad entry appears in the transcript and to a
// model: a caller turn "Keypad entry: 1234#" (the keys as pressed).
func KeypadText(entry string) string { return keypadPrefix + entry }

// keypadKeys keeps the keys of a DTMF input: 0-9, *, #, A-D (a-d read as
// A-D), at most MaxKeypadEntry of them.
func keypadKeys(s string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < MaxKeypadEntry; i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c == '*', c == '#', c >= 'A' && c <= 'D':
			b.WriteByte(c)
		case c >= 'a' && c <= 'd':
			b.WriteByte(c - 'a' + 'A')
		}
	}
	return b.String()
}

// validKeys reports whether s is 1 to MaxKeypadEntry keys.
func validKeys(s string) bool {
	return s != "" && len(s) <= MaxKeypadEntry && keypadKeys(s) == s
}

// entryComplete reports whether the keys pressed so far are a whole entry.
func (r *runner) entryComplete() bool {
	if len(r.keys) >= MaxKeypadEntry {
		return true
	}
	if k, ok := r.cfg.Brain.(Keypad); ok {
		return k.EntryComplete(r.keys)
	}
	return strings.HasSuffix(r.keys, "#")
}

// keypadEntry ends the entry in progress and has the brain answer it.
func (r *runner) keypadEntry(ctx context.Context) (bool, string) {
	entry := r.keys
	r.keys = ""
	return r.answer(ctx, KeypadText(entry), func(ctx context.Context, emit func(string)) (Reply, error) {
		if k, ok := r.cfg.Brain.(Keypad); ok {
			return k.Keys(ctx, entry, emit)
		}
		return r.cfg.Brain.Respond(ctx, KeypadText(entry), emit)
	})
}

// maxTransferAttempts bounds the transfers a brain may ask for in a row
// without the caller saying anything: a brain that keeps asking after as
// many refusals ends the call (this package's brains never do).
const maxTransferAttempts = 5

// transfer carries out a reply's transfer: the message, then the line's
// transfer. Accepted, the call ends assistant-transferred-call; refused,
// the brain hears of it and its reply is handled as any other. The caller
// talking over the message does not stop the transfer; hanging up does.
func (r *runner) transfer(ctx context.Context, t *Transfer) (bool, string) {
	for attempt := 1; ; attempt++ {
		if done, reason := r.stopped(ctx); done {
			return true, reason
		}
		if attempt > maxTransferAttempts {
			r.cfg.Log.Error("the brain keeps asking for refused transfers; ending the call", "call_id", r.cfg.Call.ID, "attempts", attempt-1)
			return true, r.end(call.Failed, call.ReasonSystemError)
		}
		if msg := strings.TrimSpace(t.Message); msg != "" {
			r.say(ctx, msg)
			if done, reason := r.stopped(ctx); done {
				return true, reason
			}
		}
		err := ErrNoControl
		if r.cfg.Control != nil {
			tctx, cancel := context.WithTimeout(ctx, r.cfg.TransferTimeout)
			err = r.cfg.Control.Transfer(tctx, t.Destination)
			cancel()
		}
		tb, isTransferrer := r.cfg.Brain.(Transferrer)
		if err == nil {
			if isTransferrer {
				tb.Transferred(t.Destination)
			}
			r.cfg.Log.Info("call transferred", "call_id", r.cfg.Call.ID)
			return true, r.end(call.Completed, call.ReasonAssistantTransferred)
		}
		r.cfg.Log.Warn("transfer refused; the conversation goes on", "call_id", r.cfg.Call.ID, "err", err)
		if !isTransferrer {
			return false, ""
		}
		rep, rerr := r.reply(ctx, func(ctx context.Context, emit func(string)) (Reply, error) {
			return tb.TransferFailed(ctx, err, emit)
		})
		if rep.Transfer == nil || (rerr != nil && !errors.Is(rerr, errInterrupted)) {
			return r.after(ctx, rep, rerr)
		}
		t = rep.Transfer
	}
}

// stopped ends the call when something already decided it is over: the
// server stopping, the maximum duration, the caller hanging up or the
// voice path failing (inputs that came meanwhile).
func (r *runner) stopped(ctx context.Context) (bool, string) {
	switch {
	case ctx.Err() != nil:
		return true, r.end(call.Completed, call.ReasonSystemShutdown)
	case r.expired:
		return true, r.end(call.Completed, call.ReasonMaxDuration)
	}
	for _, ev := range r.queue {
		switch ev.Kind {
		case Hangup:
			return true, r.end(call.Completed, call.ReasonCustomerEnded)
		case Fail:
			return true, r.end(call.Failed, ev.Reason)
		}
	}
	return false, ""
}

// Built-in tool names a model is given on calls with a phone line.
const (
	sendDTMFName     = "sendDTMF"
	transferCallName = "transferCall"
	// maxModelTransfers bounds the transfers a model may try on one call.
	maxModelTransfers = 3
)

// SendDTMFTool is the built-in tool a model calls to press keys, offered
// when the call has a phone line.
var SendDTMFTool = llm.Tool{
	Name: sendDTMFName,
	Description: "Press keys on the phone keypad (DTMF tones): to choose an option in another system's phone menu " +
		"or enter a number it asks for. The keys are sent at once.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"digits":{"type":"string","pattern":"^[0-9*#A-D]{1,32}$",` +
		`"description":"the keys to press, in order: 0-9, *, #, A-D, e.g. \"1\" or \"4417#\""}},"required":["digits"],"additionalProperties":false}`),
}

// TransferCallTool is the built-in tool a model calls to transfer the call
// to one of the assistant's destinations, offered when the call has a
// phone line and the assistant has destinations. With one destination the
// argument is optional.
func TransferCallTool(t assistant.Transfer) llm.Tool {
	enum := make([]string, 0, len(t.Destinations))
	var desc strings.Builder
	desc.WriteString("where to transfer the call:")
	for _, d := range t.Destinations {
		enum = append(enum, d.Destination)
		desc.WriteString(" " + d.Destination)
		if s := strings.TrimSpace(d.Description); s != "" {
			desc.WriteString(" (" + s + ")")
		}
		desc.WriteString(";")
	}
	dest := map[string]any{"type": "string", "enum": enum, "description": strings.TrimSuffix(desc.String(), ";")}
	params := map[string]any{"type": "object", "properties": map[string]any{"destination": dest}, "additionalProperties": false}
	if len(enum) > 1 {
		params["required"] = []string{"destination"}
	}
	b, _ := json.Marshal(params) // strings and maps: cannot fail
	return llm.Tool{
		Name: transferCallName,
		Description: "Transfer the call to a person or another line, and leave the call. Use it when the caller asks for " +
			"someone you can transfer to, or when your instructions say so. The caller may hear a short message first; " +
			"if the transfer fails, you are told why and the call goes on.",
		Parameters: b,
	}
}

// toolError is a tool answer that reports an error to the model.
func toolError(format string, args ...any) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"error": fmt.Sprintf(format, args...)})
	return b
}
