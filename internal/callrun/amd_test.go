package callrun

import (
	"log/slog"
	"testing"

	"switchboard/internal/assistant"
	"switchboard/internal/audio"
	"switchboard/internal/call"
	"switchboard/internal/conversation"
)

// TestMachinePhrase: a voicemail phrase in the callee's transcript is a
// machine: with hangup the call ends voicemail / customer-voicemail; calls
// not to be watched (inbound, detection off) get no watcher.
func TestMachinePhrase(t *testing.T) {
	out := call.Call{Type: call.Phone, Direction: call.Outbound}
	a := assistant.Assistant{Voicemail: assistant.Voicemail{Detect: true, Action: assistant.VoicemailHangup}}
	ulaw := audio.Format{Encoding: audio.Mulaw, SampleRate: 8000}
	var got []conversation.Input
	send := func(in conversation.Input) bool { got = append(got, in); return true }
	log := slog.New(slog.DiscardHandler)
	if m := newAMDWatch(call.Call{Type: call.Phone, Direction: call.Inbound}, a, ulaw, send, log); m != nil {
		t.Error("an inbound call is watched")
	}
	if m := newAMDWatch(out, assistant.Assistant{}, ulaw, send, log); m != nil {
		t.Error("a call whose assistant did not ask for detection is watched")
	}
	m := newAMDWatch(out, a, ulaw, send, log)
	m.audio(make([]byte, 160*10)) // 200 ms of silence: nothing decided
	m.transcript("hi you've reached dana please leave a message after the tone")
	m.transcript("more words")
	if len(got) != 1 || got[0].Kind != conversation.Hangup || got[0].Outcome != call.Voicemail || got[0].Reason != call.ReasonCustomerVoicemail {
		t.Errorf("inputs %+v, want one Hangup voicemail / customer-voicemail", got)
	}
}
