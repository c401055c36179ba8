package call

import "time"

// Roles of a transcript turn.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Turn is one utterance of a conversation, persisted as it completes.
type Turn struct {
	ID     string
	OrgID  string
	CallID string
	// Seq orders the call's turns from 1.
	Seq       int
	Role      string
	Text      string
	StartedAt time.Time
	EndedAt   time.Time
	// Interrupted marks an assistant turn the caller cut off; Text is
	// then what was actually delivered (in a voice call, what was heard).
	Interrupted bool
	// Latency is, for an assistant turn, the time from the end of the
	// caller's turn to the assistant's first output.
	Latency time.Duration
	// Breakdown is where a voice turn's response time went; nil for text
	// turns and for turns that answer no caller speech (the first message).
	Breakdown *Breakdown
}

// Breakdown splits an assistant turn's response time on a voice call, from
// the caller's last voiced audio to the first frame of the reply's audio
// handed to the transport, into its stages.
type Breakdown struct {
	// Endpointing: the caller's last voiced audio → the endpoint decided
	// (the silence the endpointer waits for).
	Endpointing time.Duration
	// Transcriber: endpoint → the final transcript of the utterance.
	Transcriber time.Duration
	// Model: the transcript handed to the brain → its first text.
	Model time.Duration
	// Voice: the first sentence handed to the synthesizer → its first audio.
	Voice time.Duration
	// Platform is the rest: Total minus the four stages (queues, scheduling,
	// resampling, encoding, pacing, persistence on the way).
	Platform time.Duration
	// Total: the caller's last voiced audio → the reply's first audio frame out.
	Total time.Duration
}

// Result is what a conversation leaves behind for analysis.
type Result struct {
	// FlowSuccess is the success of the flow's end node, when a flow ended.
	FlowSuccess *bool `json:"flowSuccess,omitempty"`
	// Vars are the variables a flow captured.
	Vars map[string]any `json:"vars,omitempty"`
}
