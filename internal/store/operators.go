package store

import (
	"context"
	"time"

	"switchboard/internal/operator"
)

// Operators is the dashboard's operators (internal/operator) and their sessions.
type Operators interface {
	// CreateOperator stores an operator: NotFound when its organization
	// does not exist, Conflict when its email is taken in any organization.
	CreateOperator(ctx context.Context, op operator.Operator) error

	// GetOperatorByEmail finds an operator by normalized email, in any
	// organization: signing in is how an operator's organization is learned.
	GetOperatorByEmail(ctx context.Context, email string) (operator.Operator, error)

	// ListOperators lists an organization's operators, oldest first.
	ListOperators(ctx context.Context, orgID string) ([]operator.Operator, error)

	// DeleteOperator deletes an operator and all its sessions.
	DeleteOperator(ctx context.Context, id string) error

	// CreateOperatorSession stores a session; NotFound when its operator
	// does not exist.
	CreateOperatorSession(ctx context.Context, s operator.Session) error

	// GetOperatorSession reads a session by its token hash, with its
	// operator. It does not check expiry (operator.Session.Live does).
	GetOperatorSession(ctx context.Context, tokenHash string) (operator.Session, operator.Operator, error)

	// TouchOperatorSession moves a session's IdleUntil, never past its
	// ExpiresAt.
	TouchOperatorSession(ctx context.Context, tokenHash string, idleUntil time.Time) error

	// DeleteOperatorSession ends a session (sign-out); NotFound when there
	// is none.
	DeleteOperatorSession(ctx context.Context, tokenHash string) error

	// PurgeOperatorSessions deletes the sessions no longer live at now and
	// returns how many.
	PurgeOperatorSessions(ctx context.Context, now time.Time) (int, error)
}
