package store

import (
	"context"

	"switchboard/internal/call"
)

// Turns is the calls' transcripts.
type Turns interface {
	// AppendTurn stores one transcript turn (Conflict if its seq is taken),
	// with its Breakdown when it has one. A turn is stored once, complete:
	// a voice turn when it has been heard, with the text the caller heard,
	// Interrupted set on a barge-in, and its Breakdown.
	AppendTurn(ctx context.Context, t call.Turn) error

	// ListTurns returns a call's turns in order, each with its Breakdown
	// (nil when none was stored). Durations are kept to the microsecond.
	ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error)
}
