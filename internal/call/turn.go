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
	// then what was actually delivered.
	Interrupted bool
	// Latency is, for an assistant turn, the time from the end of the
	// caller's turn to the assistant's first output.
	Latency time.Duration
}

// Result is what a conversation leaves behind for analysis.
type Result struct {
	// FlowSuccess is the success of the flow's end node, when a flow ended.
	FlowSuccess *bool `json:"flowSuccess,omitempty"`
	// Vars are the variables a flow captured.
	Vars map[string]any `json:"vars,omitempty"`
}
