package store

import (
	"context"
	"time"

	"switchboard/internal/event"
)

// Analyses is the post-call analyses, one per ended call.
type Analyses interface {
	// GetAnalysis reads a call's analysis (NotFound before the call ended).
	GetAnalysis(ctx context.Context, orgID, callID string) (Analysis, error)

	// ClaimAnalyses leases up to limit pending analyses until now+lease.
	ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Analysis, error)

	// FinishAnalysis stores a claimed analysis's outcome (ready or failed)
	// and queues events in the same transaction.
	FinishAnalysis(ctx context.Context, a Analysis, events ...event.Event) error
}

// Analysis states.
const (
	AnalysisPending = "pending"
	AnalysisReady   = "ready"
	AnalysisFailed  = "failed"
)

// Analysis is a call's post-call analysis record.
type Analysis struct {
	CallID    string
	OrgID     string
	State     string
	Result    []byte // JSON of the analysis result when ready
	Error     string
	Attempts  int
	CreatedAt time.Time
	UpdatedAt time.Time
}
